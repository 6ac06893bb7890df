// Running models on samples and comparing what they compute: the measuring loop behind verify,
// sensitivity and mixed-precision.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/analysis/SpillStore.h"
#include "qopt/interp/Array.h"
#include "qopt/ir/Graph.h"

namespace qopt::analysis {

/// `inputs` as `graph` takes them: its runtime inputs by name, float data converted to the
/// input's float type. Throws qopt::Error (Input) naming an input the sample lacks.
Inputs feedFor(const Graph& graph, const Inputs& inputs);

/// Runs `graph` on each sample of `source` on the run's workers (one interpreter each) and
/// calls fold(outputs, index) on the calling thread in sample order. Returns the sample count.
size_t forEachOutputs(SampleWorkers& workers, const Graph& graph, SampleSource& source,
                      const std::function<void(std::vector<interp::Array>&&, size_t)>& fold,
                      std::string doing = "running sample");

/// Graph outputs of every sample in sample order (entry i: sample i's outputs), held up to
/// `memoryBytes` and spilled to a temporary file beyond (see keptBytes).
SpillStore collectOutputs(SampleWorkers& workers, const Graph& graph, SampleSource& source,
                          uint64_t memoryBytes, std::string doing = "running sample");

/// The error of each graph output of `graph` against `reference` (collectOutputs of another
/// model with the same outputs on the same source), accumulated over the samples in order.
std::vector<ErrorMetrics> outputErrors(SampleWorkers& workers, const Graph& graph,
                                       SampleSource& source, const SpillStore& reference,
                                       std::string doing = "running sample");

/// Memory a pass may fill with what it keeps of each sample before spilling it: an eighth of
/// --max-memory, at most 64 MiB (more saves nothing: spilled data is read back at disk cache
/// speed, far faster than the model runs, and a run's peak memory must not grow with the data
/// set).
uint64_t keptBytes(const PassContext& context);

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
