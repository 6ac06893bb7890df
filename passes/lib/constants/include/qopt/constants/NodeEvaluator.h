// Evaluates one node on constant inputs with qopt's reference interpreter.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::fold {

/// Runs `node` alone on `inputs` (one per node input; nullopt for an omitted one). Returns one
/// tensor per node output. No single tensor the evaluation allocates may exceed `maxBytes`.
/// Throws qopt::Error when the interpreter has no kernel for the op or the kernel fails.
std::vector<Tensor> evaluateNode(const Node& node, const std::vector<std::optional<Tensor>>& inputs,
                                 uint64_t maxBytes);

}  // namespace qopt::fold
