// MaxPool (indices, storage order, ceil_mode, dilations, pads), AveragePool (count_include_pad,
// ceil_mode), GlobalAveragePool and GlobalMaxPool, with hand-computed expectations.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::floats;
using testing::SingleOp;
using testing::values;

// 4x4 plane 1..16.
Array plane4x4() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  return floats({1, 1, 4, 4}, v);
}

TEST(MaxPool, StridedWindowsWithIndices) {
  std::vector<Array> r = SingleOp("MaxPool", 12)
                             .input(plane4x4())
                             .attr("kernel_shape", std::vector<int64_t>{2, 2})
                             .attr("strides", std::vector<int64_t>{2, 2})
                             .outputs({true, true})
                             .run();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(values<float>(r[0]), (std::vector<float>{6, 8, 14, 16}));
  EXPECT_EQ(values<int64_t>(r[1]), (std::vector<int64_t>{5, 7, 13, 15}));
}

TEST(MaxPool, IndicesCountBatchAndChannelAndHonourStorageOrder) {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i % 16 == 4 ? 100 : i);
  Array x = floats({1, 2, 4, 4}, v);
  std::vector<Array> r = SingleOp("MaxPool", 12)
                             .input(x)
                             .attr("kernel_shape", std::vector<int64_t>{2, 2})
                             .attr("strides", std::vector<int64_t>{2, 2})
                             .attr("storage_order", int64_t{1})
                             .outputs({true, true})
                             .run();
  // Channel 0, window 0 has its max at (1, 0): column-major offset 0 * 4 + 1 = 1. Channel 1
  // adds 16 to every index.
  EXPECT_EQ(values<int64_t>(r[1]), (std::vector<int64_t>{1, 13, 7, 15, 17, 29, 23, 31}));
}

TEST(MaxPool, CeilModeDropsWindowsStartingInPadding) {
  auto run = [&](std::vector<float> v, int64_t ceil, std::vector<int64_t> pads) {
    const int64_t n = static_cast<int64_t>(v.size());
    return values<float>(SingleOp("MaxPool", 12)
                             .input(floats({1, 1, n}, v))
                             .attr("kernel_shape", std::vector<int64_t>{2})
                             .attr("strides", std::vector<int64_t>{2})
                             .attr("ceil_mode", ceil)
                             .attr("pads", pads)
                             .run1());
  };
  // Length 5, kernel 2, stride 2: floor gives 2 windows, ceil adds the half-outside third.
  EXPECT_EQ(run({1, 5, 2, 4, 3}, 0, {0, 0}), (std::vector<float>{5, 4}));
  EXPECT_EQ(run({1, 5, 2, 4, 3}, 1, {0, 0}), (std::vector<float>{5, 4, 3}));
  // Length 4 with one end pad: ceil would add a window starting in the padding; it is dropped.
  EXPECT_EQ(run({1, 5, 2, 4}, 1, {0, 1}), (std::vector<float>{5, 4}));
}

TEST(MaxPool, DilationsAndPaddingNeverWinOverRealValues) {
  Array x = floats({1, 1, 5}, {-5, -1, -4, -2, -3});
  Array y = SingleOp("MaxPool", 12)
                .input(x)
                .attr("kernel_shape", std::vector<int64_t>{2})
                .attr("dilations", std::vector<int64_t>{2})
                .attr("pads", std::vector<int64_t>{1, 1})
                .run1();
  // Windows {pad,-1}, {-5,-4}, {-1,-2}, {-4,-3}, {-2,pad}: padding is not 0.
  EXPECT_EQ(values<float>(y), (std::vector<float>{-1, -4, -1, -3, -2}));
}

TEST(MaxPool, Uint8) {
  Array x = testing::makeArray<uint8_t>(DataType::UInt8, {1, 1, 2, 2}, {3, 250, 7, 9});
  Array y =
      SingleOp("MaxPool", 12).input(x).attr("kernel_shape", std::vector<int64_t>{2, 2}).run1();
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{250}));
}

TEST(AveragePool, CountIncludePad) {
  Array x = floats({1, 1, 3}, {3, 6, 9});
  auto run = [&](int64_t include) {
    return values<float>(SingleOp("AveragePool", 19)
                             .input(x)
                             .attr("kernel_shape", std::vector<int64_t>{3})
                             .attr("pads", std::vector<int64_t>{1, 1})
                             .attr("count_include_pad", include)
                             .run1());
  };
  EXPECT_EQ(run(0), (std::vector<float>{4.5f, 6, 7.5f}));
  EXPECT_EQ(run(1), (std::vector<float>{3, 6, 5}));
}

TEST(AveragePool, CeilModeOverhangIsNotCounted) {
  // Length 4, kernel 3, stride 2, ceil: the second window covers {9, 12} and one position past
  // the end, which is not padding: divided by 2 even with count_include_pad.
  Array x = floats({1, 1, 4}, {3, 6, 9, 12});
  Array y = SingleOp("AveragePool", 19)
                .input(x)
                .attr("kernel_shape", std::vector<int64_t>{3})
                .attr("strides", std::vector<int64_t>{2})
                .attr("ceil_mode", int64_t{1})
                .attr("count_include_pad", int64_t{1})
                .run1();
  EXPECT_EQ(values<float>(y), (std::vector<float>{6, 10.5f}));
}

TEST(AveragePool, DilationsNeedOpset19) {
  auto dilated = [](int64_t opset) {
    return SingleOp("AveragePool", opset)
        .input(floats({1, 1, 4}, {1, 2, 3, 4}))
        .attr("kernel_shape", std::vector<int64_t>{2})
        .attr("dilations", std::vector<int64_t>{2})
        .run1();
  };
  EXPECT_EQ(values<float>(dilated(19)), (std::vector<float>{2, 3}));
  EXPECT_THROW(dilated(11), Error);
}

TEST(AveragePool, ThreeDimensional) {
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  Array y = SingleOp("AveragePool", 19)
                .input(floats({1, 1, 2, 2, 2}, v))
                .attr("kernel_shape", std::vector<int64_t>{2, 2, 2})
                .run1();
  EXPECT_EQ(values<float>(y), (std::vector<float>{3.5f}));
}

TEST(GlobalPool, AverageAndMaxPerChannel) {
  std::vector<float> v = {1, 2, 3, 4, -1, -2, -3, -8};
  Array x = floats({1, 2, 2, 2}, v);
  Array avg = SingleOp("GlobalAveragePool", 1).input(x).run1();
  EXPECT_EQ(avg.shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(values<float>(avg), (std::vector<float>{2.5f, -3.5f}));
  Array mx = SingleOp("GlobalMaxPool", 1).input(x).run1();
  EXPECT_EQ(values<float>(mx), (std::vector<float>{4, -1}));
}

TEST(Pool, ThreadedMatchesSingleThreaded) {
  Array x = testing::randomFloats({2, 8, 17, 13}, 3, -1.0f, 1.0f);
  for (const char* op : {"MaxPool", "AveragePool"}) {
    auto run = [&](int threads) {
      return values<float>(SingleOp(op, 19)
                               .input(x)
                               .attr("kernel_shape", std::vector<int64_t>{3, 3})
                               .attr("strides", std::vector<int64_t>{2, 2})
                               .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
                               .run1(threads));
    };
    EXPECT_EQ(run(1), run(2)) << op;
  }
}

}  // namespace
}  // namespace qopt::interp
