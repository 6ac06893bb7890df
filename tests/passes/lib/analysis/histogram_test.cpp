#include "qopt/analysis/Histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "qopt/ir/Error.h"

namespace qopt::analysis {
namespace {

double total(const std::vector<double>& counts) {
  return std::accumulate(counts.begin(), counts.end(), 0.0);
}

TEST(HistogramTest, IdenticalHistogramsOverlapFullyWithNoDivergence) {
  std::vector<double> h = {3, 0, 5, 2};
  EXPECT_EQ(histogramOverlap(h, h), 1.0);
  EXPECT_EQ(klDivergence(h, h), 0.0);
}

TEST(HistogramTest, DisjointHistogramsDoNotOverlap) {
  EXPECT_EQ(histogramOverlap(std::vector<double>{4, 0}, std::vector<double>{0, 4}), 0.0);
  // KL of disjoint supports is large but finite thanks to smoothing: ln(1/e) nearly.
  double kl = klDivergence(std::vector<double>{4, 0}, std::vector<double>{0, 4});
  EXPECT_TRUE(std::isfinite(kl));
  EXPECT_GT(kl, 9.0);
}

TEST(HistogramTest, ClosedFormKlAndOverlap) {
  // P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3), here with each
  // probability smoothed to (p + e) / (1 + 2e).
  std::vector<double> p = {2, 2};
  std::vector<double> q = {1, 3};
  const double e = kHistogramSmoothing;
  auto s = [&](double v) { return (v + e) / (1 + 2 * e); };
  const double expected = s(0.5) * std::log(s(0.5) / s(0.25)) + s(0.5) * std::log(s(0.5) / s(0.75));
  EXPECT_NEAR(klDivergence(p, q), expected, 1e-12);
  EXPECT_NEAR(expected, 0.5 * std::log(4.0 / 3.0), 1e-3);
  // min(2,1) + min(2,3) = 3 of 4.
  EXPECT_DOUBLE_EQ(histogramOverlap(p, q), 0.75);
  // Counts are normalised: scaling one histogram changes nothing.
  EXPECT_NEAR(klDivergence(p, std::vector<double>{10, 30}), expected, 1e-12);
}

TEST(HistogramTest, EmptyHistograms) {
  std::vector<double> zeros = {0, 0, 0};
  EXPECT_EQ(histogramOverlap(zeros, zeros), 1.0);
  EXPECT_EQ(klDivergence(zeros, zeros), 0.0);
  EXPECT_THROW(klDivergence(std::vector<double>{1}, std::vector<double>{1, 2}), Error);
}

TEST(HistogramTest, FirstValuesSpanTheBins) {
  PairedHistogram h(4);
  // Range 0..3 on 4 bins: width 1, one value per bin.
  h.add(std::vector<double>{0, 1, 2, 3}, std::vector<double>{0, 1, 2, 3});
  EXPECT_EQ(h.low(), 0.0);
  EXPECT_EQ(h.binWidth(), 1.0);
  EXPECT_EQ(h.reference(), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(h.actual(), h.reference());
}

TEST(HistogramTest, GrowingMergesBinsExactly) {
  PairedHistogram h(4);
  h.add(std::vector<double>{0, 1, 2, 3}, std::vector<double>{0, 0, 0, 0});
  // 7 is past the top (4): the width doubles once upward, bins merge pairwise.
  h.add(std::vector<double>{7}, std::vector<double>{7});
  EXPECT_EQ(h.low(), 0.0);
  EXPECT_EQ(h.binWidth(), 2.0);
  EXPECT_EQ(h.reference(), (std::vector<double>{2, 2, 0, 1}));
  EXPECT_EQ(h.actual(), (std::vector<double>{4, 0, 0, 1}));
  // -1 is below: the width doubles downward, the old range becomes the upper half.
  h.add(std::vector<double>{-1}, std::vector<double>{});
  EXPECT_EQ(h.low(), -8.0);
  EXPECT_EQ(h.binWidth(), 4.0);
  EXPECT_EQ(h.reference(), (std::vector<double>{0, 1, 4, 1}));
  EXPECT_EQ(total(h.reference()), 6.0);
  EXPECT_EQ(total(h.actual()), 5.0);
}

TEST(HistogramTest, SkipsNonFiniteValues) {
  PairedHistogram h(4);
  h.add(std::vector<double>{NAN, INFINITY}, std::vector<double>{NAN});
  EXPECT_TRUE(h.empty());
  h.add(std::vector<double>{1, NAN}, std::vector<double>{1});
  EXPECT_EQ(total(h.reference()), 1.0);
}

TEST(HistogramTest, Downsampled) {
  PairedHistogram h(8);
  h.add(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}, std::vector<double>{0, 0, 0, 0, 7, 7, 7, 7});
  PairedHistogram d = h.downsampled(2);
  EXPECT_EQ(d.bins(), 2);
  EXPECT_EQ(d.low(), h.low());
  EXPECT_DOUBLE_EQ(d.binWidth(), 4 * h.binWidth());
  EXPECT_EQ(d.reference(), (std::vector<double>{4, 4}));
  EXPECT_EQ(d.actual(), (std::vector<double>{4, 4}));
  EXPECT_THROW(h.downsampled(3), Error);
}

TEST(HistogramTest, OddBinCountsRoundUp) {
  EXPECT_EQ(PairedHistogram(5).bins(), 6);
  EXPECT_EQ(PairedHistogram(1).bins(), 2);
}

}  // namespace
}  // namespace qopt::analysis
