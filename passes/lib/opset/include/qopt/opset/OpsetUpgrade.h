// Passes that need a newer opset (per-axis Q/DQ at 13, float16 scales at 19) raise it through
// the one opset converter (qopt/opset/OpsetConverter.h), saying so in their remarks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"

namespace qopt::qdq {

inline constexpr int64_t kPerAxisOpset = 13;

/// Raises the default-domain opset of `model` to `target` when lower, rewriting the nodes whose
/// meaning changed (each one a remark in `result`, with `why` the reason for raising). Returns
/// the old version when it changed (nullopt when it was already high enough). Throws
/// qopt::Error naming the node that cannot be converted exactly.
std::optional<int64_t> raiseOpset(Model& model, int64_t target, const std::string& why,
                                  PassResult& result);

}  // namespace qopt::qdq
