// Which tensor of the current model stands for which tensor of the model as it entered the
// pipeline, through the pass manager's name map.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qopt/analysis/ChannelAffine.h"

#include "qopt/ir/Graph.h"
#include "qopt/pass/NameMap.h"

namespace qopt::verify {

struct TensorPair {
  std::string tensor;                // the name in the original model
  const Value* reference = nullptr;  // in the original model
  const Value* actual = nullptr;     // in the current model
  std::string node;                  // the layer computing it now (its producer), else before
  std::string op;
  /// Set when a pass left the current tensor an exact per-channel affine map of the original
  /// (equalize, smooth): compared after undoing it.
  std::optional<analysis::ChannelAffine> affine;
  /// Compared as a model output is (the logits of one): its decisions are counted too.
  bool decides = false;
};

struct TensorMatch {
  std::vector<TensorPair> pairs;  // in the original model's topological order
  size_t removed = 0;             // original tensors no longer computed
};

/// Pairs every node output of the original main graph that the current main graph still holds
/// (under its current name) and that is not a graph output (outputs are compared by position).
/// When several original tensors now follow one value, only the last (in topological order) is
/// paired; the earlier ones count as removed.
/// `affines` (analysis::channelAffines, by current name) are attached to their pairs.
TensorMatch matchTensors(const Graph& original, const Graph& current, const NameMap& names,
                         const std::map<std::string, analysis::ChannelAffine>& affines = {});

}  // namespace qopt::verify
