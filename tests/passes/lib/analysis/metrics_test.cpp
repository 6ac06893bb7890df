#include "qopt/analysis/Metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "AnalysisTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {
namespace {

using testing::floats;

TEST(MetricsTest, IdenticalValuesHaveNoError) {
  std::vector<double> r = {1.5, -2.0, 0.25, 3.0};
  ErrorMetrics m = compareValues(r, r);
  EXPECT_EQ(m.count, 4u);
  EXPECT_EQ(m.maxAbs, 0.0);
  EXPECT_EQ(m.mse, 0.0);
  EXPECT_DOUBLE_EQ(m.cosine, 1.0);
  EXPECT_TRUE(std::isinf(m.sqnrDb) && m.sqnrDb > 0);
  EXPECT_EQ(m.klDivergence, 0.0);
  EXPECT_EQ(m.histogramOverlap, 1.0);
}

TEST(MetricsTest, ConstantOffsetGivesKnownMseAndSqnr) {
  // r = {1, 2, 3, 4}, a = r + 0.5: every error is 0.5, so MSE = 0.25, max = mean = 0.5, and
  // SQNR = 10 log10(sum r^2 / sum e^2) = 10 log10(30 / 1).
  std::vector<double> r = {1, 2, 3, 4};
  std::vector<double> a = {1.5, 2.5, 3.5, 4.5};
  ErrorMetrics m = compareValues(r, a);
  EXPECT_DOUBLE_EQ(m.mse, 0.25);
  EXPECT_DOUBLE_EQ(m.maxAbs, 0.5);
  EXPECT_DOUBLE_EQ(m.meanAbs, 0.5);
  EXPECT_NEAR(m.sqnrDb, 10 * std::log10(30.0), 1e-12);
  // cosine = sum r a / (|r| |a|) = 35 / (sqrt(30) sqrt(41)).
  EXPECT_NEAR(m.cosine, 35.0 / (std::sqrt(30.0) * std::sqrt(41.0)), 1e-12);
}

TEST(MetricsTest, OrthogonalVectorsHaveCosineZero) {
  ErrorMetrics m = compareValues(std::vector<double>{1, 0, 2, 0}, std::vector<double>{0, 3, 0, 1});
  EXPECT_NEAR(m.cosine, 0.0, 1e-15);
}

TEST(MetricsTest, NegatedAndScaledVectors) {
  std::vector<double> r = {1, -2, 3};
  EXPECT_NEAR(compareValues(r, std::vector<double>{-1, 2, -3}).cosine, -1.0, 1e-15);
  // a = 3 r: the direction is kept (cosine 1) but the noise is 2 r: SQNR = 10 log10(1/4).
  ErrorMetrics scaled = compareValues(r, std::vector<double>{3, -6, 9});
  EXPECT_NEAR(scaled.cosine, 1.0, 1e-15);
  EXPECT_NEAR(scaled.sqnrDb, 10 * std::log10(0.25), 1e-12);
}

TEST(MetricsTest, ZeroVectors) {
  std::vector<double> zeros = {0, 0, 0};
  EXPECT_EQ(compareValues(zeros, zeros).cosine, 1.0);
  ErrorMetrics m = compareValues(zeros, std::vector<double>{1, 0, 0});
  EXPECT_EQ(m.cosine, 0.0);
  EXPECT_TRUE(std::isinf(m.sqnrDb) && m.sqnrDb < 0);
}

TEST(MetricsTest, AccumulatesOverSamples) {
  // Two samples of two values each give the same metrics as one sample of four.
  ErrorAccumulator acc;
  acc.add(std::vector<double>{1, 2}, std::vector<double>{1.5, 2.5});
  acc.add(std::vector<double>{3, 4}, std::vector<double>{3.5, 4.5});
  ErrorMetrics m = acc.result();
  EXPECT_EQ(m.count, 4u);
  EXPECT_DOUBLE_EQ(m.mse, 0.25);
  EXPECT_NEAR(m.sqnrDb, 10 * std::log10(30.0), 1e-12);
}

TEST(MetricsTest, NonFiniteValuesAreCountedNotSummed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  ErrorMetrics m =
      compareValues(std::vector<double>{1, 2, nan, inf}, std::vector<double>{1, nan, nan, inf});
  EXPECT_EQ(m.nonFinite, 1u);  // only position 1 disagrees; NaN/NaN and inf/inf agree
  EXPECT_EQ(m.count, 1u);
  EXPECT_EQ(m.mse, 0.0);
}

TEST(MetricsTest, Top1AgreementOfClassifierOutputs) {
  ErrorAccumulator acc;
  // Row 0: argmax 1 vs 0 (disagree); row 1: argmax 0 vs 0 (agree).
  acc.add(floats({2, 2}, {1, 2, 3, 1}), floats({2, 2}, {2, 1, 3, 1}));
  ErrorMetrics m = acc.result();
  ASSERT_TRUE(m.top1Agreement.has_value());
  EXPECT_DOUBLE_EQ(*m.top1Agreement, 0.5);
  EXPECT_EQ(m.top1Rows, 2u);
  // Rank-1 and [N, 1] tensors are not classifier outputs.
  ErrorAccumulator other;
  other.add(floats({2, 1}, {1, 2}), floats({2, 1}, {1, 2}));
  EXPECT_FALSE(other.result().top1Agreement.has_value());
}

// Compared as a model output, a sequence model's [N, T, C] scores count a decision per position.
// Rows whose reference is a near tie (top two probabilities closer than kClearMargin) count in
// top-1 but not in clear top-1: there a flip says little.
TEST(MetricsTest, ClearTop1CountsTheDecisionsTheReferenceTakesClearly) {
  ErrorAccumulator acc(128, /*decisions=*/true);
  // Probabilities [1, 3, 2]: row 0 clear (0.9 vs 0.1), flipped; row 1 a near tie (0.52 vs
  // 0.48), flipped; row 2 clear, kept.
  acc.add(floats({1, 3, 2}, {0.9f, 0.1f, 0.52f, 0.48f, 0.2f, 0.8f}),
          floats({1, 3, 2}, {0.4f, 0.6f, 0.47f, 0.53f, 0.3f, 0.7f}));
  ErrorMetrics m = acc.result();
  ASSERT_TRUE(m.top1Agreement.has_value());
  EXPECT_DOUBLE_EQ(*m.top1Agreement, 1.0 / 3.0);
  EXPECT_EQ(m.top1Rows, 3u);
  ASSERT_TRUE(m.clearTop1Agreement.has_value());
  EXPECT_DOUBLE_EQ(*m.clearTop1Agreement, 0.5);
  EXPECT_EQ(m.clearTop1Rows, 2u);
  // Logits (not a distribution) are judged by their softmax: [0, 0.1] is a near tie
  // (0.525 vs 0.475), [0, 3] clear (0.95 vs 0.05).
  ErrorAccumulator logits(128, /*decisions=*/true);
  logits.add(floats({2, 2}, {0.0f, 0.1f, 0.0f, 3.0f}), floats({2, 2}, {0.2f, 0.0f, 0.0f, 2.0f}));
  ErrorMetrics l = logits.result();
  EXPECT_DOUBLE_EQ(*l.top1Agreement, 0.5);
  EXPECT_DOUBLE_EQ(*l.clearTop1Agreement, 1.0);
  EXPECT_EQ(l.clearTop1Rows, 1u);
  // Only near ties: no clear agreement at all.
  ErrorAccumulator ties(128, /*decisions=*/true);
  ties.add(floats({1, 2}, {0.0f, 0.1f}), floats({1, 2}, {0.1f, 0.0f}));
  EXPECT_FALSE(ties.result().clearTop1Agreement.has_value());
  // A rank-4 map has no decision rows.
  ErrorAccumulator map(128, /*decisions=*/true);
  map.add(floats({1, 1, 2, 2}, {0, 1, 2, 3}), floats({1, 1, 2, 2}, {0, 1, 2, 3}));
  EXPECT_FALSE(map.result().top1Agreement.has_value());
}

TEST(MetricsTest, ShapeMismatchIsAnError) {
  ErrorAccumulator acc;
  try {
    acc.add(floats({2}, {1, 2}), floats({1, 2}, {1, 2}), "tensor 'x'");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verification);
    EXPECT_NE(std::string(e.what()).find("tensor 'x'"), std::string::npos);
  }
}

TEST(MetricsTest, JsonSpellsInfiniteSqnr) {
  std::vector<double> r = {1, 2};
  Json j = compareValues(r, r).toJson();
  EXPECT_EQ(j["sqnr-db"], Json("inf"));
  EXPECT_TRUE(std::isinf(metricFromJson(j["sqnr-db"])));
  EXPECT_DOUBLE_EQ(metricFromJson(Json(12.5)), 12.5);
  EXPECT_TRUE(std::isnan(metricFromJson(Json())));
  EXPECT_EQ(j["count"], Json(2));
  EXPECT_EQ(j.find("top1"), nullptr);
}

TEST(MetricsTest, FormatMetric) {
  EXPECT_EQ(formatMetric(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(formatMetric(-std::numeric_limits<double>::infinity(), 2), "-inf");
  EXPECT_EQ(formatMetric(3.14159, 2), "3.14");
}

}  // namespace
}  // namespace qopt::analysis
