// The element type and shape of every value of a graph, learnt by running the model once with
// the reference interpreter (exact for any op the interpreter runs, including shapes computed at
// run time), with the declared types as the fallback.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/ir/Graph.h"

namespace qopt::analysis {

struct TensorInfo {
  DataType type = DataType::Undefined;
  std::optional<std::vector<int64_t>> shape;  // nullopt when unknown
};

class TensorInfoMap {
 public:
  /// What was observed, else what the value's declared type says, else (for a Cast's output)
  /// the Cast's target type; possibly nothing.
  TensorInfo find(const Value* value) const;
  void record(const Value* value, TensorInfo info) { observed_[value] = std::move(info); }
  bool observedAny() const { return !observed_.empty(); }

 private:
  std::unordered_map<const Value*, TensorInfo> observed_;
};

/// Runs `graph` on `inputs` and records every main-graph value. When the run fails (an op the
/// interpreter lacks, bad data) the declared types are all there is and `failure` (when given)
/// receives the reason; nothing is thrown.
TensorInfoMap observeTensorInfo(const Graph& graph, const Inputs& inputs,
                                std::string* failure = nullptr);

}  // namespace qopt::analysis
