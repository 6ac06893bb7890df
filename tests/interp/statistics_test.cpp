// LRN (even window sizes, ranks other than 4, double and float16), MeanVarianceNormalization
// (custom and negative axes, constant groups) and Det (singular, pivoting, batched and empty
// matrices), with the errors for bad attributes and shapes: what the ONNX node tests leave out.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::doubles;
using testing::errorMessage;
using testing::floats;
using testing::halves;
using testing::makeArray;
using testing::SingleOp;
using testing::values;

bool mentions(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

Array doublesOf(Shape shape, const std::vector<double>& v) {
  return makeArray<double>(DataType::Double, std::move(shape), v);
}

// ---------------------------------------------------------------------------------------------
// LRN

// The specification's formula, element by element, for x of shape [N, C, inner...].
std::vector<double> lrnReference(const std::vector<double>& x, int64_t n, int64_t c, int64_t inner,
                                 int64_t size, double alpha, double beta, double bias) {
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        const int64_t lo = std::max<int64_t>(0, ch - (size - 1) / 2);
        const int64_t hi = std::min<int64_t>(c - 1, ch + size / 2);  // ceil((size - 1) / 2)
        for (int64_t j = lo; j <= hi; ++j) {
          const double v = x[static_cast<size_t>((b * c + j) * inner + i)];
          sum += v * v;
        }
        const size_t k = static_cast<size_t>((b * c + ch) * inner + i);
        y[k] = x[k] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
      }
    }
  }
  return y;
}

TEST(LRN, EvenSizeTakesTheExtraChannelAfter) {
  // size 2: the window of channel c is [c, c + 1].
  Array y = SingleOp("LRN", 13)
                .input(floats({1, 3, 1, 1}, {1, 2, 3}))
                .attr("size", int64_t{2})
                .attr("alpha", 1.0f)
                .attr("beta", 1.0f)
                .attr("bias", 1.0f)
                .run1();
  std::vector<float> v = values<float>(y);
  EXPECT_FLOAT_EQ(v[0], 1 / 3.5f);
  EXPECT_FLOAT_EQ(v[1], 2 / 7.5f);
  EXPECT_FLOAT_EQ(v[2], 3 / 5.5f);
}

TEST(LRN, AnyRankFromTwoAndEveryFloatType) {
  const std::vector<double> x = {0.5, -1.5, 2.0, 0.25, -0.75, 1.25, 3.0,  -2.0, 0.125,
                                 1.0, -0.5, 2.5, -1.0, 0.75,  1.5,  -2.5, 0.0,  2.25};
  // Rank 3 in double: [1, 6, 3].
  Array d = SingleOp("LRN", 13)
                .input(doublesOf({1, 6, 3}, x))
                .attr("size", int64_t{3})
                .attr("alpha", 0.5f)
                .attr("beta", 0.6f)
                .attr("bias", 2.0f)
                .run1();
  std::vector<double> expected = lrnReference(x, 1, 6, 3, 3, 0.5f, 0.6f, 2.0f);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(d.getDouble(static_cast<int64_t>(i)), expected[i], 1e-12);
  }
  // Rank 2 (no spatial dims) in float16: [3, 6], default alpha, beta and bias.
  std::vector<float> xf(x.begin(), x.end());
  Array h = SingleOp("LRN", 13).input(halves({3, 6}, xf)).attr("size", int64_t{4}).run1();
  EXPECT_EQ(h.dataType(), DataType::Float16);
  expected = lrnReference(x, 3, 6, 1, 4, 1e-4, 0.75, 1.0);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(h.getDouble(static_cast<int64_t>(i)), expected[i], 2e-3);
  }
}

TEST(LRN, RejectsBadAttributesAndShapes) {
  Array x = floats({1, 2, 1, 1}, {1, 2});
  auto fails = [](auto&& op) { return errorMessage([&] { op.run(); }); };
  EXPECT_TRUE(mentions(fails(SingleOp("LRN", 13).input(x)), "'size' is required"));
  EXPECT_TRUE(mentions(fails(SingleOp("LRN", 13).input(x).attr("size", int64_t{0})),
                       "size must be positive"));
  EXPECT_TRUE(mentions(
      fails(SingleOp("LRN", 13).input(floats({2}, {1, 2})).attr("size", int64_t{1})), "rank 2"));
}

// ---------------------------------------------------------------------------------------------
// MeanVarianceNormalization

TEST(MeanVarianceNormalization, CustomAxesAndConstantGroups) {
  // Normalizing each row: [1, 2, 3] has mean 2 and deviation sqrt(2/3); a constant row gives 0
  // (the definition adds 1e-9 to the deviation), not NaN.
  Array y = SingleOp("MeanVarianceNormalization", 13)
                .input(floats({2, 3}, {1, 2, 3, 10, 10, 10}))
                .attr("axes", std::vector<int64_t>{1})
                .run1();
  const double s = 1 / std::sqrt(2.0 / 3.0);
  const std::vector<double> expected = {-s, 0, s, 0, 0, 0};
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(y.getDouble(i), expected[static_cast<size_t>(i)], 1e-6);
  Array negative = SingleOp("MeanVarianceNormalization", 13)
                       .input(floats({2, 3}, {1, 2, 3, 10, 10, 10}))
                       .attr("axes", std::vector<int64_t>{-1})
                       .run1();
  EXPECT_EQ(values<float>(negative), values<float>(y));
}

TEST(MeanVarianceNormalization, DefaultAxesNormalizeEachChannel) {
  // [N=2, C=2, 1, 2]: channel 0 holds 1, 3, 5, 7 (mean 4, deviation sqrt(5)), channel 1 holds
  // 2, 2, 6, 6 (mean 4, deviation 2).
  Array y = SingleOp("MeanVarianceNormalization", 9)
                .input(doublesOf({2, 2, 1, 2}, {1, 3, 2, 2, 5, 7, 6, 6}))
                .run1();
  const double r5 = std::sqrt(5.0);
  const std::vector<double> expected = {-3 / r5, -1 / r5, -1, -1, 1 / r5, 3 / r5, 1, 1};
  EXPECT_EQ(y.dataType(), DataType::Double);
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_NEAR(y.getDouble(i), expected[static_cast<size_t>(i)], 1e-9);
  Array h = SingleOp("MeanVarianceNormalization", 13)
                .input(halves({2, 2, 1, 2}, {1, 3, 2, 2, 5, 7, 6, 6}))
                .run1();
  EXPECT_EQ(h.dataType(), DataType::Float16);
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_NEAR(h.getDouble(i), expected[static_cast<size_t>(i)], 2e-3);
}

TEST(MeanVarianceNormalization, RejectsBadAxes) {
  auto fails = [](auto&& op) { return errorMessage([&] { op.run(); }); };
  // The default axes [0, 2, 3] need rank 4.
  EXPECT_TRUE(mentions(
      fails(SingleOp("MeanVarianceNormalization", 13).input(floats({1, 2, 2}, {1, 2, 3, 4}))),
      "axis 3 is out of range"));
  EXPECT_TRUE(mentions(fails(SingleOp("MeanVarianceNormalization", 13)
                                 .input(floats({2, 2}, {1, 2, 3, 4}))
                                 .attr("axes", std::vector<int64_t>{1, -1})),
                       "repeated"));
}

// ---------------------------------------------------------------------------------------------
// Det

TEST(Det, SingularMatrixIsExactlyZero) {
  Array y = SingleOp("Det", 11).input(floats({3, 3}, {1, 2, 3, 2, 4, 6, 0, 1, 1})).run1();
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_EQ(y.getDouble(0), 0.0);
}

TEST(Det, PivotsAroundZeroDiagonals) {
  // Expanding along the first row: 0 - 2 * (0 - 2) + 1 * (1 - 2) = 3.
  Array y = SingleOp("Det", 11).input(floats({3, 3}, {0, 2, 1, 1, 1, 1, 2, 1, 0})).run1();
  EXPECT_NEAR(y.getDouble(0), 3.0, 1e-6);
}

TEST(Det, BatchedAndEmptyMatrices) {
  Array y = SingleOp("Det", 11)
                .input(floats({2, 2, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3, 0, 1, 1, 0, 4, 7, 2, 6}))
                .run1();
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{-2, 6, -1, 10}));
  // The determinant of a 0 x 0 matrix is the empty product, 1.
  Array empty = SingleOp("Det", 11).input(floats({3, 0, 0}, {})).run1();
  EXPECT_EQ(empty.shape(), (Shape{3}));
  EXPECT_EQ(values<float>(empty), (std::vector<float>{1, 1, 1}));
}

TEST(Det, Float16DoubleAndNaN) {
  Array h = SingleOp("Det", 11).input(halves({2, 2}, {1.5f, 2, 0.5f, 4})).run1();
  EXPECT_EQ(h.dataType(), DataType::Float16);
  EXPECT_EQ(h.getDouble(0), 5.0);
  // 1 * (1 + 1e-12) - 1 * 1: a difference float would lose.
  Array d = SingleOp("Det", 11).input(doublesOf({1, 2, 2}, {1, 1, 1, 1 + 1e-12})).run1();
  EXPECT_EQ(d.dataType(), DataType::Double);
  EXPECT_NEAR(doubles(d)[0], 1e-12, 1e-15);
  Array nan = SingleOp("Det", 11).input(floats({2, 2}, {0, NAN, 0, 1})).run1();
  EXPECT_TRUE(std::isnan(nan.getDouble(0)));
}

TEST(Det, RejectsNonSquareInput) {
  auto fails = [](auto&& op) { return errorMessage([&] { op.run(); }); };
  EXPECT_TRUE(
      mentions(fails(SingleOp("Det", 11).input(floats({2, 3}, {1, 2, 3, 4, 5, 6}))), "[*, M, M]"));
  EXPECT_TRUE(mentions(fails(SingleOp("Det", 11).input(floats({4}, {1, 2, 3, 4}))), "[*, M, M]"));
}

}  // namespace
}  // namespace qopt::interp
