// The element type and shape of every value of a graph, learnt by running the model once with
// the reference interpreter (exact for any op the interpreter runs, including shapes computed at
// run time), with the declared types as the fallback.
#pragma once

#include <cstdint>
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
  /// How often the run computed it: once in the main graph, once per iteration in a Loop or
  /// Scan body, 0 in an If branch not taken (and for what was not observed).
  uint64_t runs = 0;
};

class TensorInfoMap {
 public:
  /// What was observed, else what the value's declared type says, else (for a Cast's output)
  /// the Cast's target type; possibly nothing.
  TensorInfo find(const Value* value) const;
  /// The latest type and shape, counted as one more run.
  void record(const Value* value, TensorInfo info) {
    TensorInfo& slot = observed_[value];
    info.runs = slot.runs + 1;
    slot = std::move(info);
  }
  bool observedAny() const { return !observed_.empty(); }
  /// Whether the run that observed the values finished: only then does runs == 0 mean that a
  /// value was not computed (an If branch not taken).
  bool ranToEnd() const { return ranToEnd_; }
  void setRanToEnd() { ranToEnd_ = true; }

 private:
  std::unordered_map<const Value*, TensorInfo> observed_;
  bool ranToEnd_ = false;
};

/// Runs `graph` on `inputs` and records every value, inside If/Loop/Scan bodies too (the
/// branches taken, every iteration). When the run fails (an op the
/// interpreter lacks, bad data) the declared types are all there is and `failure` (when given)
/// receives the reason; nothing is thrown.
TensorInfoMap observeTensorInfo(const Graph& graph, const Inputs& inputs,
                                std::string* failure = nullptr);

}  // namespace qopt::analysis
