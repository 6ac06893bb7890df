// The comparison loops verify and sensitivity run over whole tensors (passes/lib/analysis/
// CompareKernels.cpp: four fixed lanes, vector clones, blocks of bins) against the plain
// definitions: long tensors with non-finite values, tails that fill no whole lane or block, and
// bins computed value by value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "qopt/analysis/Histogram.h"
#include "qopt/analysis/Metrics.h"

namespace qopt::analysis {
namespace {

struct Pair {
  std::vector<float> reference;
  std::vector<float> actual;
};

// `n` values, a few of them NaN or infinite on one side or both.
Pair makePair(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> value(0.5f, 3.0f);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  Pair p;
  for (size_t i = 0; i < n; ++i) {
    const float r = value(rng);
    p.reference.push_back(r);
    p.actual.push_back(r + noise(rng));
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 7; i < n; i += 100003) {
    p.reference[i] = nan;  // only the reference: a disagreement
    if (i + 1 < n) p.actual[i + 1] = inf;
    if (i + 2 < n) p.reference[i + 2] = p.actual[i + 2] = -inf;  // the same on both: agreement
  }
  return p;
}

TEST(CompareKernels, SumsMatchThePlainDefinition) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{1027}, size_t{65536 * 3 + 5}}) {
    Pair p = makePair(n, 11);
    ErrorAccumulator acc;
    acc.add(std::span<const float>(p.reference), std::span<const float>(p.actual));
    ErrorMetrics m = acc.result();
    long double sse = 0, srr = 0, sabs = 0;
    double maxAbs = 0;
    uint64_t count = 0, nonFinite = 0;
    for (size_t i = 0; i < n; ++i) {
      const double r = p.reference[i], a = p.actual[i];
      if (!std::isfinite(r) || !std::isfinite(a)) {
        if (!((std::isnan(r) && std::isnan(a)) || r == a)) ++nonFinite;
        continue;
      }
      sse += (r - a) * (r - a);
      srr += r * r;
      sabs += std::abs(r - a);
      maxAbs = std::max(maxAbs, std::abs(r - a));
      ++count;
    }
    EXPECT_EQ(m.count, count) << n;
    EXPECT_EQ(m.nonFinite, nonFinite) << n;
    EXPECT_EQ(m.maxAbs, maxAbs) << n;
    EXPECT_NEAR(m.mse, static_cast<double>(sse / count), 1e-12 * static_cast<double>(sse / count));
    EXPECT_NEAR(m.meanAbs, static_cast<double>(sabs / count), 1e-12);
    const double sqnr = 10 * std::log10(static_cast<double>(srr / sse));
    EXPECT_NEAR(m.sqnrDb, sqnr, 1e-9) << n;
  }
}

TEST(CompareKernels, FloatAndDoubleInputsGiveTheSameBits) {
  Pair p = makePair(65536 * 2 + 13, 5);
  std::vector<double> r(p.reference.begin(), p.reference.end());
  std::vector<double> a(p.actual.begin(), p.actual.end());
  ErrorAccumulator fromFloat, fromDouble;
  fromFloat.add(std::span<const float>(p.reference), std::span<const float>(p.actual));
  fromDouble.add(std::span<const double>(r), std::span<const double>(a));
  ErrorMetrics f = fromFloat.result(), d = fromDouble.result();
  EXPECT_EQ(f.mse, d.mse);
  EXPECT_EQ(f.cosine, d.cosine);
  EXPECT_EQ(f.sqnrDb, d.sqnrDb);
  EXPECT_EQ(f.klDivergence, d.klDivergence);
  EXPECT_EQ(fromFloat.histogram().reference(), fromDouble.histogram().reference());
  EXPECT_EQ(fromFloat.histogram().actual(), fromDouble.histogram().actual());
}

TEST(CompareKernels, BinsMatchValueByValue) {
  for (size_t n : {size_t{5}, size_t{300}, size_t{65536 * 2 + 77}}) {
    Pair p = makePair(n, 23);
    PairedHistogram h(128);
    h.add(std::span<const float>(p.reference), std::span<const float>(p.actual));
    std::vector<double> expectReference(128, 0.0), expectActual(128, 0.0);
    for (auto [values, counts] :
         {std::pair{&p.reference, &expectReference}, std::pair{&p.actual, &expectActual}}) {
      for (float v : *values) {
        if (!std::isfinite(v)) continue;
        const double bin = std::floor((static_cast<double>(v) - h.low()) * (1.0 / h.binWidth()));
        (*counts)[static_cast<size_t>(std::clamp(bin, 0.0, 127.0))] += 1;
      }
    }
    EXPECT_EQ(h.reference(), expectReference) << n;
    EXPECT_EQ(h.actual(), expectActual) << n;
  }
}

// Once an accumulator's histogram has bins, later samples are binned in the pass that sums them;
// a sample inside the bins and one past them (the bins widen, the values are binned again) give
// the counts that a histogram fed the same samples alone gives.
TEST(CompareKernels, BinsCountedWhileSummingEqualBinsCountedApart) {
  Pair first = makePair(70001, 3);
  Pair inside = makePair(65536 + 9, 4);
  for (float& v : inside.reference) v *= 0.5f;
  for (float& v : inside.actual) v *= 0.5f;
  Pair wider = makePair(1031, 6);
  for (float& v : wider.reference) v *= 4.0f;
  ErrorAccumulator acc(128);
  PairedHistogram apart(128);
  for (const Pair* p : {&first, &inside, &wider, &inside}) {
    acc.add(std::span<const float>(p->reference), std::span<const float>(p->actual));
    apart.add(std::span<const float>(p->reference), std::span<const float>(p->actual));
    EXPECT_EQ(acc.histogram().low(), apart.low());
    EXPECT_EQ(acc.histogram().binWidth(), apart.binWidth());
    EXPECT_EQ(acc.histogram().reference(), apart.reference());
    EXPECT_EQ(acc.histogram().actual(), apart.actual());
  }
  EXPECT_GT(apart.binWidth(), 0.0);
  double total = 0;
  for (double c : acc.histogram().reference()) total += c;
  for (double c : acc.histogram().actual()) total += c;
  size_t finite = 0;
  for (const Pair* p : {&first, &inside, &wider, &inside}) {
    for (float v : p->reference) finite += std::isfinite(v) ? 1 : 0;
    for (float v : p->actual) finite += std::isfinite(v) ? 1 : 0;
  }
  EXPECT_EQ(total, static_cast<double>(finite));
}

}  // namespace
}  // namespace qopt::analysis
