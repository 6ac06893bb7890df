// GPTQ's math through the pass's sources: the inverse Hessian factor, GPTQ equal to round to
// nearest where the activations are uncorrelated, and ahead of it where they are correlated.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "Awq.h"
#include "qopt/dense/BlockQuant.h"
#include "qopt/dense/Gptq.h"

namespace qopt::wq {
namespace {

Matrix randomMatrix(int64_t rows, int64_t cols, std::mt19937& rng, double sigma = 1.0) {
  std::normal_distribution<double> normal(0.0, sigma);
  Matrix m{rows, cols, std::vector<double>(static_cast<size_t>(rows * cols))};
  for (double& v : m.values) v = normal(rng);
  return m;
}

// Rows of K values mixed from `factors` shared sources: strongly correlated channels, as the
// inputs of a trained network's MatMuls are.
ActivationRows correlatedRows(int64_t rows, int64_t k, int64_t factors, std::mt19937& rng) {
  const Matrix mix = randomMatrix(factors, k, rng);
  std::normal_distribution<double> normal(0.0, 1.0);
  ActivationRows x;
  x.k = k;
  x.values.assign(static_cast<size_t>(rows * k), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f = 0; f < factors; ++f) {
      const double z = normal(rng);
      for (int64_t c = 0; c < k; ++c) x.values[static_cast<size_t>(r * k + c)] += z * mix.at(f, c);
    }
    for (int64_t c = 0; c < k; ++c) x.values[static_cast<size_t>(r * k + c)] += 0.1 * normal(rng);
  }
  return x;
}

// Round to nearest's scheme: the scale searched per block, as method=gptq uses it.
BlockScheme searchedScheme(int64_t blockSize, bool symmetric) {
  BlockScheme scheme;
  scheme.blockSize = blockSize;
  scheme.symmetric = symmetric;
  scheme.searchScale = true;
  return scheme;
}

double outputSqnrDb(const std::vector<double>& gram, const Matrix& w, const BlockQuantized& q) {
  Matrix d = dequantize(q);
  for (size_t i = 0; i < d.values.size(); ++i) d.values[i] -= w.values[i];
  return 10.0 * std::log10(quadraticError(gram, w) / quadraticError(gram, d));
}

TEST(Gptq, InverseCholeskyFactorInvertsTheDampenedHessian) {
  std::mt19937 rng(7);
  const int64_t k = 37;
  const std::vector<double> h = gramMatrix(correlatedRows(200, k, 5, rng));
  const std::vector<double> u = inverseCholeskyUpper(h, k, kGptqDampening);
  ASSERT_EQ(u.size(), static_cast<size_t>(k * k));
  double meanDiag = 0;
  for (int64_t i = 0; i < k; ++i) meanDiag += h[static_cast<size_t>(i * k + i)] / k;
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < i; ++j) EXPECT_EQ(u[static_cast<size_t>(i * k + j)], 0.0);
    EXPECT_GT(u[static_cast<size_t>(i * k + i)], 0.0);
  }
  // (U^T U) (H + damp I) = I.
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        double inv = 0;  // (U^T U)_ip
        for (int64_t r = 0; r <= std::min(i, p); ++r) {
          inv += u[static_cast<size_t>(r * k + i)] * u[static_cast<size_t>(r * k + p)];
        }
        const double hpj =
            h[static_cast<size_t>(p * k + j)] + (p == j ? kGptqDampening * meanDiag : 0.0);
        sum += inv * hpj;
      }
      EXPECT_NEAR(sum, i == j ? 1.0 : 0.0, 1e-9) << i << "," << j;
    }
  }
}

TEST(Gptq, FactorInPlaceKeepsTheGramMatrixToRestore) {
  std::mt19937 rng(11);
  const int64_t k = 29;
  const std::vector<double> h = gramMatrix(correlatedRows(300, k, 4, rng));
  const std::vector<double> u = inverseCholeskyUpper(h, k, kGptqDampening);
  std::vector<double> work = h;
  const auto diagonal = factorInPlace(work, k, kGptqDampening);
  ASSERT_TRUE(diagonal.has_value());
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const auto at = static_cast<size_t>(i * k + j);
      EXPECT_EQ(work[at], j >= i ? u[at] : h[at]) << i << "," << j;
    }
  }
  restoreGram(work, k, *diagonal);
  EXPECT_EQ(work, h);
}

TEST(Gptq, FactorInPlaceThatFailsLeavesTheMatrixAsItWas) {
  // Reversed, the first two pivots factor and the third is negative: LAPACK has written part of
  // the factor when it stops.
  const int64_t k = 4;
  std::vector<double> h = {4, 0.5, 0, 0, 0.5, -100, 0.5, 0, 0, 0.5, 4, 0.5, 0, 0, 0.5, 4};
  const std::vector<double> given = h;
  EXPECT_FALSE(factorInPlace(h, k, kGptqDampening).has_value());
  EXPECT_EQ(h, given);
}

TEST(Gptq, NotPositiveDefiniteIsRefused) {
  const int64_t k = 3;
  std::vector<double> h(9, 0.0);
  for (int64_t i = 0; i < k; ++i) h[static_cast<size_t>(i * k + i)] = -1.0;
  EXPECT_TRUE(inverseCholeskyUpper(h, k, kGptqDampening).empty());
  std::mt19937 rng(1);
  const Matrix w = randomMatrix(k, 2, rng);
  BlockScheme scheme;
  scheme.blockSize = 16;
  std::string why;
  EXPECT_FALSE(quantizeGptq(w, h, scheme, why).has_value());
  EXPECT_NE(why.find("not positive definite"), std::string::npos);
}

// Uncorrelated channels: H is diagonal, so is its inverse factor, and no row's error reaches
// another: GPTQ rounds exactly as round to nearest.
TEST(Gptq, UncorrelatedChannelsGiveRoundToNearest) {
  std::mt19937 rng(3);
  const int64_t k = 96, n = 24;
  const Matrix w = randomMatrix(k, n, rng);
  std::vector<double> h(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) h[static_cast<size_t>(i * k + i)] = 1.0 + 0.5 * (i % 7);
  for (bool symmetric : {true, false}) {
    const BlockScheme scheme = searchedScheme(32, symmetric);
    std::string why;
    const auto gptq = quantizeGptq(w, h, scheme, why);
    ASSERT_TRUE(gptq.has_value()) << why;
    const BlockQuantized rtn = quantizeBlockwise(w, scheme);
    EXPECT_EQ(gptq->codes, rtn.codes);
    EXPECT_EQ(gptq->scales, rtn.scales);
    EXPECT_EQ(gptq->zeroPoints, rtn.zeroPoints);
  }
}

// Correlated channels: GPTQ's output error on the activations it saw, and on new rows from the
// same sources, is well below round to nearest's; a K with a shorter last block included.
TEST(Gptq, CorrelatedChannelsBeatRoundToNearest) {
  std::mt19937 rng(11);
  const int64_t k = 200, n = 48;  // blocks of 64: the last one 8 rows
  const Matrix w = randomMatrix(k, n, rng, 0.05);
  std::mt19937 data(5);
  const ActivationRows seen = correlatedRows(2000, k, 12, data);
  const std::vector<double> gram = gramMatrix(seen);
  for (bool symmetric : {true, false}) {
    const BlockScheme scheme = searchedScheme(64, symmetric);
    std::string why;
    const auto gptq = quantizeGptq(w, gram, scheme, why);
    ASSERT_TRUE(gptq.has_value()) << why;
    ASSERT_EQ(gptq->blocks, 4);
    for (int8_t c : gptq->codes) {
      EXPECT_GE(c, symmetric ? -8 : 0);
      EXPECT_LE(c, symmetric ? 7 : 15);
    }
    for (double s : gptq->scales) EXPECT_GT(s, 0.0);
    const BlockQuantized rtn = quantizeBlockwise(w, scheme);
    const double rtnDb = outputSqnrDb(gram, w, rtn), gptqDb = outputSqnrDb(gram, w, *gptq);
    EXPECT_GT(gptqDb, rtnDb + 3.0) << "symmetric=" << symmetric;
    // The same sources, rows GPTQ never saw: seed 5 draws the same mixing matrix and the same
    // first 2000 rows, which are dropped.
    std::mt19937 fresh(5);
    ActivationRows held = correlatedRows(4000, k, 12, fresh);
    held.values.erase(held.values.begin(), held.values.begin() + 2000 * k);
    const std::vector<double> heldGram = gramMatrix(held);
    EXPECT_GT(outputSqnrDb(heldGram, w, *gptq), outputSqnrDb(heldGram, w, rtn) + 2.0);
  }
}

}  // namespace
}  // namespace qopt::wq
