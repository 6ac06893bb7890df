// BatchNormalization (inference; training mode is a clear error), InstanceNormalization and
// LayerNormalization (axis, epsilon, broadcast Scale/B, Mean and InvStdDev outputs).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::floats;
using testing::randomFloats;
using testing::SingleOp;
using testing::values;

TEST(BatchNormalization, AppliesRunningStatisticsPerChannel) {
  Array x = floats({1, 2, 1, 2}, {1, 2, 3, 4});
  Array scale = floats({2}, {2, 0.5f});
  Array bias = floats({2}, {1, -1});
  Array mean = floats({2}, {1, 5});
  Array var = floats({2}, {4, 1});
  Array y = SingleOp("BatchNormalization", 15)
                .input(x)
                .input(scale)
                .input(bias)
                .input(mean)
                .input(var)
                .attr("epsilon", 0.0f)
                .run1();
  // ch0: (x - 1) / 2 * 2 + 1 -> 1, 2; ch1: (x - 5) / 1 * 0.5 - 1 -> -2, -1.5.
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2, -2, -1.5f}));
}

TEST(BatchNormalization, TrainingModeIsAClearError) {
  Array c = floats({1}, {1});
  try {
    SingleOp("BatchNormalization", 15)
        .input(floats({1, 1, 1}, {1}))
        .input(c)
        .input(c)
        .input(c)
        .input(c)
        .attr("training_mode", int64_t{1})
        .run1();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training_mode"), std::string::npos) << e.what();
  }
}

TEST(BatchNormalization, ThreadedMatchesSingleThreaded) {
  Array x = randomFloats({2, 3, 40, 50}, 1, -1.0f, 1.0f);
  Array s = randomFloats({3}, 2, 0.5f, 2.0f), b = randomFloats({3}, 3, -1.0f, 1.0f),
        m = randomFloats({3}, 4, -1.0f, 1.0f), v = randomFloats({3}, 5, 0.5f, 2.0f);
  auto run = [&](int threads) {
    return values<float>(SingleOp("BatchNormalization", 15)
                             .input(x)
                             .input(s)
                             .input(b)
                             .input(m)
                             .input(v)
                             .run1(threads));
  };
  EXPECT_EQ(run(1), run(2));
}

TEST(InstanceNormalization, NormalizesEachPlane) {
  Array x = floats({1, 2, 2}, {1, 3, 10, 30});
  Array y = SingleOp("InstanceNormalization", 6)
                .input(x)
                .input(floats({2}, {1, 2}))
                .input(floats({2}, {0, 5}))
                .attr("epsilon", 0.0f)
                .run1();
  EXPECT_EQ(values<float>(y), (std::vector<float>{-1, 1, 3, 7}));
}

TEST(LayerNormalization, LastAxisWithMeanAndInvStdDev) {
  Array x = floats({2, 2}, {1, 3, -2, 6});
  std::vector<Array> r = SingleOp("LayerNormalization", 17)
                             .input(x)
                             .input(floats({2}, {1, 2}))
                             .input(floats({2}, {0.5f, 0}))
                             .attr("epsilon", 0.0f)
                             .outputs({true, true, true})
                             .run();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(values<float>(r[0]), (std::vector<float>{-0.5f, 2, -0.5f, 2}));
  EXPECT_EQ(r[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(values<float>(r[1]), (std::vector<float>{2, 2}));
  EXPECT_EQ(values<float>(r[2]), (std::vector<float>{1, 0.25f}));
}

TEST(LayerNormalization, LeadingAxisWithBroadcastScaleMatchesReference) {
  Array x = randomFloats({2, 3, 4, 5}, 7, -1.0f, 1.0f);
  Array scale =
      randomFloats({4, 1}, 8, -1.0f, 1.0f);  // broadcasts to the normalized shape [3, 4, 5]
  std::vector<double> expected(static_cast<size_t>(x.numel()));
  const int64_t inner = 60;
  for (int64_t r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += x.getDouble(r * inner + i);
    mean /= inner;
    for (int64_t i = 0; i < inner; ++i) var += std::pow(x.getDouble(r * inner + i) - mean, 2);
    var /= inner;
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t h = (i / 5) % 4;
      expected[static_cast<size_t>(r * inner + i)] =
          (x.getDouble(r * inner + i) - mean) / std::sqrt(var + 1e-3) * scale.getDouble(h);
    }
  }
  Array y = SingleOp("LayerNormalization", 17)
                .input(x)
                .input(scale)
                .attr("axis", int64_t{1})
                .attr("epsilon", 1e-3f)
                .run1();
  QOPT_EXPECT_CLOSE(y, expected, 1e-5);
}

TEST(LayerNormalization, ScaleThatDoesNotBroadcastIsAnError) {
  EXPECT_THROW(SingleOp("LayerNormalization", 17)
                   .input(randomFloats({2, 4}, 1, -1.0f, 1.0f))
                   .input(randomFloats({3}, 2, -1.0f, 1.0f))
                   .run1(),
               Error);
}

}  // namespace
}  // namespace qopt::interp
