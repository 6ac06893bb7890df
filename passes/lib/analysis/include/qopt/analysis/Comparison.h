// Running models on samples and comparing what they compute: the measuring loop behind verify,
// sensitivity and mixed-precision.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/interp/Array.h"
#include "qopt/ir/Graph.h"

namespace qopt::analysis {

/// `inputs` as `graph` takes them: its runtime inputs by name, float data converted to the
/// input's float type. Throws qopt::Error (Input) naming an input the sample lacks.
Inputs feedFor(const Graph& graph, const Inputs& inputs);

/// Graph outputs of every sample (outer index: sample), the samples run in parallel (one
/// interpreter per thread; the results do not depend on the thread count).
using OutputSets = std::vector<std::vector<interp::Array>>;
OutputSets runOutputs(const Graph& graph, std::span<const Sample> samples);

/// The error of each graph output of `graph` against `reference` (from runOutputs of another
/// model with the same outputs), accumulated over the samples.
std::vector<ErrorMetrics> outputErrors(const Graph& graph, std::span<const Sample> samples,
                                       const OutputSets& reference);

/// The worst of several outputs' errors: lowest cosine, lowest SQNR, highest MSE and max-abs,
/// lowest top-1 agreement. Empty input gives default (perfect) metrics.
ErrorMetrics worstOf(std::span<const ErrorMetrics> metrics);

/// An error budget: metrics meet it when cosine >= cosine, SQNR >= sqnrDb, max abs error <=
/// maxAbs, top-1 agreement >= top1 and over the rows the reference decides clearly >=
/// clearTop1 (where there are any), and no value turned NaN or infinite.
struct ErrorBudget {
  double cosine = 0.99;   // -1 accepts any cosine
  double sqnrDb = 20.0;   // negative: not checked
  double maxAbs = -1;     // negative: not checked
  double top1 = -1;       // negative: not checked
  double clearTop1 = -1;  // negative: not checked
  /// Empty when `m` meets the budget, else each failed bound ("cosine 0.93 < 0.99").
  std::vector<std::string> failures(const ErrorMetrics& m) const;
  bool met(const ErrorMetrics& m) const { return failures(m).empty(); }
  Json toJson() const;
};

}  // namespace qopt::analysis
