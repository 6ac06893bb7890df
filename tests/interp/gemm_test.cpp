// Gemm, MatMul, MatMulInteger and QLinearMatMul against naive references: transposes, alpha and
// beta with every C broadcast, numpy batch broadcasting and 1-D operands, per-row/per-column zero
// points and exact requantization.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::floats;
using testing::randomFloats;
using testing::SingleOp;

// op(X)[i][p] for a row-major matrix X that may be stored transposed.
double at(const Array& a, bool trans, int64_t i, int64_t p) {
  return trans ? a.getDouble(p * a.dim(1) + i) : a.getDouble(i * a.dim(1) + p);
}

struct GemmCase {
  std::string name;
  bool transA, transB;
  int64_t m, n, k;
  Shape c;  // empty vector = no C
  bool hasC;
  float alpha, beta;
};

class GemmReference : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmReference, MatchesNaiveProduct) {
  const GemmCase& g = GetParam();
  Array a = randomFloats(g.transA ? Shape{g.k, g.m} : Shape{g.m, g.k}, 1, -1.0f, 1.0f);
  Array b = randomFloats(g.transB ? Shape{g.n, g.k} : Shape{g.k, g.n}, 2, -1.0f, 1.0f);
  Array c = randomFloats(g.c, 3, -1.0f, 1.0f);
  std::vector<double> expected(static_cast<size_t>(g.m * g.n));
  const int64_t cRows = g.c.size() == 2 ? g.c[0] : 1;
  const int64_t cCols = g.c.empty() ? 1 : g.c.back();
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < g.k; ++p) sum += at(a, g.transA, i, p) * at(b, g.transB, p, j);
      double cv = g.hasC ? c.getDouble((cRows == 1 ? 0 : i) * cCols + (cCols == 1 ? 0 : j)) : 0;
      expected[static_cast<size_t>(i * g.n + j)] = g.alpha * sum + g.beta * cv;
    }
  }
  for (int threads : {1, 2}) {
    SingleOp op("Gemm", 13);
    op.input(a).input(b);
    if (g.hasC) op.input(c);
    op.attr("transA", int64_t{g.transA})
        .attr("transB", int64_t{g.transB})
        .attr("alpha", g.alpha)
        .attr("beta", g.beta);
    Array y = op.run1(threads);
    EXPECT_EQ(y.shape(), (Shape{g.m, g.n}));
    QOPT_EXPECT_CLOSE(y, expected, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmReference,
    ::testing::Values(GemmCase{"plain_matrix_c", false, false, 5, 7, 3, {5, 7}, true, 1, 1},
                      GemmCase{"transA_row_c", true, false, 4, 6, 9, {6}, true, 0.5f, 2},
                      GemmCase{"transB_column_c", false, true, 8, 3, 5, {8, 1}, true, 1, -1},
                      GemmCase{"both_scalar_c", true, true, 3, 4, 2, {}, true, 2, 0.25f},
                      GemmCase{"no_c", false, true, 33, 70, 65, {1}, false, 1, 1},
                      GemmCase{"large_split", false, false, 64, 300, 128, {1, 300}, true, 1, 1}),
    [](const ::testing::TestParamInfo<GemmCase>& info) { return info.param.name; });

TEST(Gemm, MismatchedInnerDimensionIsAnError) {
  EXPECT_THROW(SingleOp("Gemm", 13)
                   .input(randomFloats({2, 3}, 1, -1.0f, 1.0f))
                   .input(randomFloats({4, 2}, 2, -1.0f, 1.0f))
                   .run1(),
               Error);
}

struct MatMulCase {
  std::string name;
  Shape a, b, out;
};

class MatMulReference : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(MatMulReference, FollowsNumpyBroadcasting) {
  const MatMulCase& c = GetParam();
  Array a = randomFloats(c.a, 4, -1.0f, 1.0f);
  Array b = randomFloats(c.b, 5, -1.0f, 1.0f);
  // numpy semantics by hand: promote 1-D operands, broadcast batches.
  Shape a2 = c.a, b2 = c.b;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  const size_t rank = std::max(a2.size(), b2.size());
  Shape ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  ab.insert(ab.begin(), rank - 2 - ab.size(), 1);
  bb.insert(bb.begin(), rank - 2 - bb.size(), 1);
  Shape batch(rank - 2);
  for (size_t d = 0; d < batch.size(); ++d) batch[d] = std::max(ab[d], bb[d]);
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  std::vector<double> expected;
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t rest = bi, ao = 0, bo = 0, as = 1, bs = 1;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = rest % batch[d];
      rest /= batch[d];
      ao += (ab[d] == 1 ? 0 : idx) * as;
      bo += (bb[d] == 1 ? 0 : idx) * bs;
      as *= ab[d];
      bs *= bb[d];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += a.getDouble(ao * m * k + i * k + p) * b.getDouble(bo * k * n + p * n + j);
        }
        expected.push_back(sum);
      }
    }
  }
  for (int threads : {1, 2}) {
    Array y = SingleOp("MatMul", 13).input(a).input(b).run1(threads);
    EXPECT_EQ(y.shape(), c.out);
    QOPT_EXPECT_CLOSE(y, expected, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatMulReference,
    ::testing::Values(MatMulCase{"matrix", {3, 4}, {4, 5}, {3, 5}},
                      MatMulCase{"batched_shared_b", {2, 3, 6, 4}, {4, 5}, {2, 3, 6, 5}},
                      MatMulCase{"broadcast_both", {2, 1, 3, 4}, {1, 5, 4, 2}, {2, 5, 3, 2}},
                      MatMulCase{"vector_matrix", {4}, {3, 4, 2}, {3, 2}},
                      MatMulCase{"matrix_vector", {2, 3, 4}, {4}, {2, 3}},
                      MatMulCase{"vector_vector", {6}, {6}, {}},
                      MatMulCase{"many_batches", {16, 8, 8}, {16, 8, 8}, {16, 8, 8}},
                      MatMulCase{"zero_k", {3, 0}, {0, 2}, {3, 2}}),
    [](const ::testing::TestParamInfo<MatMulCase>& info) { return info.param.name; });

TEST(MatMul, IntegerTypesWrapAround) {
  Array a = testing::makeArray<int32_t>(DataType::Int32, {1, 2}, {1 << 30, 3});
  Array b = testing::makeArray<int32_t>(DataType::Int32, {2, 1}, {4, 5});
  Array y = SingleOp("MatMul", 13).input(a).input(b).run1();
  EXPECT_EQ(testing::values<int32_t>(y), (std::vector<int32_t>{15}));  // 2^32 wraps to 0
}

TEST(MatMul, IncompatibleShapesNameBoth) {
  try {
    SingleOp("MatMul", 13)
        .input(randomFloats({2, 3}, 1, -1.0f, 1.0f))
        .input(randomFloats({4, 5}, 2, -1.0f, 1.0f))
        .run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2,3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4,5]"), std::string::npos) << e.what();
  }
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPointsAreExact) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 4}, {40, 70, 50}}) {
    Array a = testing::randomIntegers<uint8_t>(DataType::UInt8, {2, m, k}, 1, 0, 255);
    Array b = testing::randomIntegers<int8_t>(DataType::Int8, {k, n}, 2, -128, 127);
    Array az = testing::randomIntegers<uint8_t>(DataType::UInt8, {m}, 3, 0, 255);
    Array bz = testing::randomIntegers<int8_t>(DataType::Int8, {n}, 4, -128, 127);
    for (int threads : {1, 2}) {
      Array y = SingleOp("MatMulInteger", 10).input(a).input(b).input(az).input(bz).run1(threads);
      ASSERT_EQ(y.shape(), (Shape{2, m, n}));
      for (int64_t bt = 0; bt < 2; ++bt) {
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            int64_t sum = 0;
            for (int64_t p = 0; p < k; ++p) {
              sum += (int64_t{a.data<uint8_t>()[(bt * m + i) * k + p]} - az.data<uint8_t>()[i]) *
                     (int64_t{b.data<int8_t>()[p * n + j]} - bz.data<int8_t>()[j]);
            }
            ASSERT_EQ(y.data<int32_t>()[(bt * m + i) * n + j], sum) << bt << "," << i << "," << j;
          }
        }
      }
    }
  }
}

TEST(MatMulInteger, ZeroPointsDefaultToZero) {
  Array a = testing::makeArray<int8_t>(DataType::Int8, {1, 2}, {-3, 4});
  Array b = testing::makeArray<uint8_t>(DataType::UInt8, {2, 2}, {1, 2, 3, 255});
  Array y = SingleOp("MatMulInteger", 10).input(a).input(b).run1();
  EXPECT_EQ(testing::values<int32_t>(y), (std::vector<int32_t>{9, 1014}));
}

TEST(QLinearMatMul, RequantizesLikeOnnxRuntime) {
  Array a = testing::makeArray<uint8_t>(DataType::UInt8, {2, 2}, {130, 126, 255, 0});
  Array b = testing::makeArray<int8_t>(DataType::Int8, {2, 2}, {10, -10, 3, 1});
  Array as = floats({}, {0.1f});
  Array az = testing::makeArray<uint8_t>(DataType::UInt8, {}, {128});
  Array bs = floats({2}, {0.05f, 0.5f});
  Array bz = testing::makeArray<int8_t>(DataType::Int8, {2}, {0, 1});
  Array ys = floats({}, {0.01f});
  Array yz = testing::makeArray<int8_t>(DataType::Int8, {}, {-5});
  Array y = SingleOp("QLinearMatMul", 10)
                .input(a)
                .input(as)
                .input(az)
                .input(b)
                .input(bs)
                .input(bz)
                .input(ys)
                .input(yz)
                .run1();
  ASSERT_EQ(y.dataType(), DataType::Int8);
  // Row 0: a - 128 = [2, -2]; col 0: 2*10 - 2*3 = 14 -> 14 * (0.1*0.05/0.01 = 0.5) = 7 -> 2;
  //        col 1: b - 1 = [-11, 0] -> -22 -> * 5 = -110 -> -115.
  // Row 1: [127, -128]; col 0: 1270 - 384 = 886 -> 443 - 5 = 438 -> 127 (saturated);
  //        col 1: -1397 -> * 5 -> saturates to -128.
  EXPECT_EQ(testing::values<int8_t>(y), (std::vector<int8_t>{2, -115, 127, -128}));
}

}  // namespace
}  // namespace qopt::interp
