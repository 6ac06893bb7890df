// Per-axis QuantizeLinear / DequantizeLinear need opset 13 (below it the axis attribute does
// not exist). A model on an older default opset is moved to 13 when none of its nodes changes
// meaning on the way; otherwise the pass stops with an error naming the node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::qdq {

inline constexpr int64_t kPerAxisOpset = 13;

/// Raises the default-domain opset of `model` to `target` when lower. Returns the old version
/// when it changed (nullopt when it was already high enough). Throws qopt::Error naming the first
/// node (main graph or subgraph) whose op changed incompatibly between the two versions.
std::optional<int64_t> raiseOpset(Model& model, int64_t target);

}  // namespace qopt::qdq
