// The 16-channel depthwise kernel's two ways of summing a row of stride 1: each input column
// loaded once for the kernel row's taps that read it, or every tap with its own load. The sums
// are the same, in the same order, so the outputs must be the same bits, for every kernel width,
// row width (blocks of 16 and 8 pixels and their tails), vertical stride and dilation, padding,
// partial channel group, epilogue and thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "InterpTestUtil.h"
#include "ThreadPool.h"
#include "ops/DepthwiseBlocked.h"
#include "ops/Epilogue.h"

namespace qopt::interp {
namespace {

using testing::randomFloats;

struct Case {
  std::string name;
  int64_t channels, height, width;
  int64_t kh, kw;
  int64_t strideH, dilationH;
  int64_t padTop, padLeft;
  bool bias = true;
  bool epilogue = false;
  int threads = 1;
};

WindowGeometry geometry(const Case& c) {
  WindowGeometry g;
  g.spatialRank = 2;
  g.input = {c.height, c.width};
  g.kernel = {c.kh, c.kw};
  g.strides = {c.strideH, 1};
  g.dilations = {c.dilationH, 1};
  g.padsBegin = {c.padTop, c.padLeft};
  g.padsEnd = {c.padTop, c.padLeft};
  const int64_t extentH = (c.kh - 1) * c.dilationH + 1;
  g.output = {(c.height + 2 * c.padTop - extentH) / c.strideH + 1,
              c.width + 2 * c.padLeft - c.kw + 1};
  return g;
}

class DepthwiseColumnReuse : public ::testing::TestWithParam<Case> {};

TEST_P(DepthwiseColumnReuse, SameBitsAsOneLoadPerTap) {
  const Case& c = GetParam();
  const WindowGeometry g = geometry(c);
  const ConvShape s{2, c.channels, c.channels, c.channels};
  ASSERT_TRUE(depthwiseBlockedFits(s, g, int64_t{1} << 20));
  const Array x = randomFloats({2, c.channels, c.height, c.width}, 1);
  const Array w = randomFloats({c.channels, 1, c.kh, c.kw}, 2);
  const Array bias = randomFloats({c.channels}, 3);
  const size_t outFloats = static_cast<size_t>(2 * c.channels * g.outputSize());
  ConvEpilogue epilogue;
  if (c.epilogue) {
    const Array scale = randomFloats({c.channels}, 5), shift = randomFloats({c.channels}, 6);
    epilogue.scale.assign(scale.data<float>(), scale.data<float>() + c.channels);
    epilogue.shift.assign(shift.data<float>(), shift.data<float>() + c.channels);
    epilogue.activation.kind = Activation::Kind::HardSwish;
    epilogue.activation.offset = 3.0f;
    epilogue.activation.lo = 0.0f;
    epilogue.activation.hi = 6.0f;
    epilogue.activation.divisor = 6.0f;
  }
  ThreadPool pool(c.threads);
  auto run = [&](bool columnReuse) {
    std::vector<float> y(outFloats, -1.0f);
    depthwiseBlocked(x.data<float>(), w.data<float>(), c.bias ? bias.data<float>() : nullptr,
                     y.data(), s, g, &pool, c.epilogue ? &epilogue : nullptr, nullptr, columnReuse);
    return y;
  };
  const std::vector<float> reused = run(true), perTap = run(false);
  ASSERT_EQ(reused.size(), perTap.size());
  EXPECT_EQ(std::memcmp(reused.data(), perTap.data(), reused.size() * sizeof(float)), 0);
  // Not the untouched buffer: every output was written.
  for (size_t i = 0; i < reused.size(); ++i) ASSERT_NE(reused[i], -1.0f) << i;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DepthwiseColumnReuse,
    ::testing::Values(Case{"k3_width1", 16, 5, 1, 3, 3, 1, 1, 1, 1},
                      Case{"k3_width7", 16, 6, 7, 3, 3, 1, 1, 1, 1},
                      Case{"k3_width8", 16, 6, 8, 3, 3, 1, 1, 1, 1},
                      Case{"k3_width9", 16, 6, 9, 3, 3, 1, 1, 1, 1},
                      Case{"k3_width16", 16, 6, 16, 3, 3, 1, 1, 1, 1},
                      Case{"k3_width37_partial_group", 20, 9, 37, 3, 3, 1, 1, 1, 1},
                      Case{"k5_width96_stride2_rows", 32, 12, 96, 5, 5, 2, 1, 2, 2},
                      Case{"k5_width80_no_padding", 24, 10, 80, 5, 5, 1, 1, 0, 0},
                      Case{"k3_dilated_rows", 16, 12, 30, 3, 3, 1, 2, 2, 1},
                      Case{"k5x3_rows", 17, 8, 23, 5, 3, 1, 1, 2, 1},
                      Case{"k3_no_bias", 16, 7, 21, 3, 3, 1, 1, 1, 1, false},
                      Case{"k5_epilogue", 40, 9, 50, 5, 5, 1, 1, 2, 2, true, true},
                      Case{"k3_two_threads", 48, 20, 41, 3, 3, 1, 1, 1, 1, true, true, 2},
                      Case{"k7_one_load_per_tap", 16, 9, 25, 7, 7, 1, 1, 3, 3}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace qopt::interp
