#include "qopt/analysis/Comparison.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "AnalysisTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {
namespace {

using testing::floats;
using testing::parse;

TEST(ComparisonTest, WorstOfTakesTheWorstOfEachMetric) {
  ErrorMetrics a;
  a.cosine = 0.99;
  a.sqnrDb = 30;
  a.mse = 0.1;
  a.top1Agreement = 0.9;
  ErrorMetrics b;
  b.cosine = 0.999;
  b.sqnrDb = 12;
  b.mse = 0.5;
  std::vector<ErrorMetrics> both = {a, b};
  ErrorMetrics w = worstOf(both);
  EXPECT_EQ(w.cosine, 0.99);
  EXPECT_EQ(w.sqnrDb, 12);
  EXPECT_EQ(w.mse, 0.5);
  EXPECT_EQ(w.top1Agreement, 0.9);
  EXPECT_EQ(worstOf({}).cosine, 1.0);
  // The lowest clear top-1 comes with its own row count.
  a.clearTop1Agreement = 0.5;
  a.clearTop1Rows = 4;
  b.clearTop1Agreement = 0.9;
  b.clearTop1Rows = 10;
  std::vector<ErrorMetrics> clear = {b, a};
  EXPECT_EQ(worstOf(clear).clearTop1Agreement, 0.5);
  EXPECT_EQ(worstOf(clear).clearTop1Rows, 4u);
}

TEST(ComparisonTest, ErrorBudgetNamesEachFailedBound) {
  ErrorBudget budget;
  budget.cosine = 0.99;
  budget.sqnrDb = 20;
  budget.maxAbs = 0.5;
  budget.top1 = 0.95;
  ErrorMetrics m;
  m.cosine = 0.9;
  m.sqnrDb = 10;
  m.maxAbs = 1;
  m.top1Agreement = 0.5;
  m.nonFinite = 2;
  std::vector<std::string> f = budget.failures(m);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0], "2 values are NaN or infinite");
  EXPECT_EQ(f[1], "cosine 0.900000 < 0.99");
  EXPECT_EQ(f[2], "SQNR 10.00 dB < 20 dB");
  EXPECT_EQ(f[3], "max abs error 1 > 0.5");
  EXPECT_EQ(f[4], "top-1 agreement 0.5000 < 0.95");
  // Clear top-1: the flipped rows are named; no clear row, nothing to check.
  ErrorBudget clear;
  clear.clearTop1 = 1;
  ErrorMetrics flipped;
  flipped.sqnrDb = 40;
  flipped.clearTop1Agreement = 0.75;
  flipped.clearTop1Rows = 8;
  EXPECT_EQ(
      clear.failures(flipped),
      std::vector<std::string>{"clear top-1 agreement 0.7500 < 1 (2 of 8 clear rows flipped)"});
  flipped.clearTop1Agreement.reset();
  EXPECT_TRUE(clear.met(flipped));
  ErrorMetrics perfect;
  perfect.sqnrDb = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(budget.met(perfect));
  // Negative bounds are not checked; NaN never passes the cosine bound.
  ErrorBudget loose;
  loose.cosine = -1;
  loose.sqnrDb = -1;
  ErrorMetrics finite = m;
  finite.nonFinite = 0;
  EXPECT_TRUE(loose.met(finite));
  ErrorMetrics nan;
  nan.cosine = std::nan("");
  EXPECT_FALSE(loose.met(nan));
  EXPECT_EQ(loose.toJson()["sqnr-db"], Json());
}

TEST(ComparisonTest, FeedForConvertsFloatTypesAndNamesMissingInputs) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float16[2] x, float[1] k) => (float16[2] y) { y = Relu(x) }
)");
  Inputs given;
  given.emplace("x", floats({2}, {1, -1}));
  try {
    feedFor(model->graph(), given);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'k'"), std::string::npos);
  }
  given.emplace("k", floats({1}, {3}));
  Inputs fed = feedFor(model->graph(), given);
  EXPECT_EQ(fed.at("x").dataType(), DataType::Float16);
  EXPECT_EQ(fed.at("k").dataType(), DataType::Float);
}

TEST(ComparisonTest, OutputErrorsComparesByPosition) {
  auto a = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y, float[4] z) { y = Relu(x)
 z = Neg(x) }
)");
  auto b = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y, float[4] z) { y = Relu(x)
 z = Identity(x) }
)");
  std::vector<Sample> samples = randomSamples(inputSpecs(a->graph()), 2, 0);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  SpillStore reference = collectOutputs(workers, a->graph(), source, uint64_t{1} << 30);
  std::vector<ErrorMetrics> errors = outputErrors(workers, b->graph(), source, reference);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].mse, 0.0);
  EXPECT_NEAR(errors[1].cosine, -1.0, 1e-12);
  EXPECT_EQ(errors[1].count, 8u);
}

void expectSameBits(const ErrorMetrics& a, const ErrorMetrics& b) {
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.nonFinite, b.nonFinite);
  EXPECT_EQ(a.maxAbs, b.maxAbs);
  EXPECT_EQ(a.meanAbs, b.meanAbs);
  EXPECT_EQ(a.mse, b.mse);
  EXPECT_EQ(a.cosine, b.cosine);
  EXPECT_EQ(a.sqnrDb, b.sqnrDb);
  EXPECT_EQ(a.klDivergence, b.klDivergence);
  EXPECT_EQ(a.histogramOverlap, b.histogramOverlap);
  EXPECT_EQ(a.top1Agreement, b.top1Agreement);
  EXPECT_EQ(a.top1Rows, b.top1Rows);
  EXPECT_EQ(a.clearTop1Agreement, b.clearTop1Agreement);
  EXPECT_EQ(a.clearTop1Rows, b.clearTop1Rows);
  EXPECT_EQ(a.mapIou, b.mapIou);
  EXPECT_EQ(a.mapUnion, b.mapUnion);
}

// Samples are folded in sample order: the metrics are the same bits on one worker or three, and
// with the reference outputs all in memory or all read back from the spill file.
TEST(ComparisonTest, OutputErrorsDoNotDependOnThreadsOrSpilling) {
  auto a = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,3] y)
<float[4,3] w = {0.5, -1, 0.25, 2, 0.125, -0.75, -1.5, 1, 0.3, 0.7, -0.2, 1.1}>
{ y = MatMul(x, w) }
)");
  auto b = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,3] y)
<float[4,3] w = {0.5, -1, 0.25, 2, 0.125, -0.75, -1.5, 1, 0.3, 0.7, -0.2, 1.1},
 float s = {0.05}, int8 z = {0}>
{
  q = QuantizeLinear(x, s, z)
  d = DequantizeLinear(q, s, z)
  y = MatMul(d, w)
}
)");
  std::vector<Sample> samples = randomSamples(inputSpecs(a->graph()), 7, 3);
  SampleSource source(samples, "held");
  auto measure = [&](size_t threads, uint64_t keptBytes) {
    SampleWorkers workers(threads, uint64_t{1} << 30);
    SpillStore reference = collectOutputs(workers, a->graph(), source, keptBytes);
    EXPECT_EQ(reference.size(), samples.size());
    EXPECT_EQ(reference.spilledBytes() > 0, keptBytes == 0);
    return outputErrors(workers, b->graph(), source, reference);
  };
  const uint64_t all = uint64_t{1} << 30;
  const std::vector<ErrorMetrics> one = measure(1, all);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].count, 7u * 6u);
  EXPECT_GT(one[0].mse, 0.0);
  EXPECT_TRUE(one[0].top1Agreement.has_value());
  for (const auto& [threads, kept] : {std::pair<size_t, uint64_t>{3, all}, {1, 0}, {3, 0}}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads, " << kept << " bytes kept");
    const std::vector<ErrorMetrics> other = measure(threads, kept);
    ASSERT_EQ(other.size(), 1u);
    expectSameBits(one[0], other[0]);
  }
}

}  // namespace
}  // namespace qopt::analysis
