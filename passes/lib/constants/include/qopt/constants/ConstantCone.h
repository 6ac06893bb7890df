// Values that constant sub-graphs compute. QAT exports write a weight's scale as the graph that
// computes it (amax / 127 through Abs, ReduceMax, Div and Cast on the weight): ONNX Runtime folds
// such cones when it loads the model, so every pass that reads Q/DQ parameters must see through
// them too. Evaluated with the reference interpreter, one node at a time (NodeEvaluator.h).
#pragma once

#include <cstdint>
#include <optional>

#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"

namespace qopt::fold {

/// Bytes one tensor of a cone may take while it is evaluated: scales are small, and a cone that
/// is not (a whole weight through many ops) is better left to fold-constants.
inline constexpr uint64_t kConeMaxBytes = uint64_t{64} << 20;

/// The tensor `value` holds on every run when it is computed only from constants (initializers
/// that are not graph inputs, Constant nodes) by deterministic nodes without subgraphs, at most
/// `maxNodes` of them; nullopt otherwise, or when a node cannot be evaluated. Read-only.
std::optional<Tensor> constantCone(const Value* value, uint64_t maxBytes = kConeMaxBytes,
                                   int maxNodes = 64);

/// A Q/DQ scale or zero point as ONNX Runtime sees it after loading: the constant (through Casts)
/// when it is one, else what its constant cone computes; nullopt when it depends on the inputs.
std::optional<Tensor> qdqParameter(const Value* value);

/// Replaces every scale and zero point of a QuantizeLinear/DequantizeLinear (default domain and
/// com.microsoft, in every subgraph) that a constant cone computes by the tensor it computes,
/// and erases the cone where nothing else reads it. Says what it folded in `result`'s remarks.
/// Returns the number of values folded.
int64_t foldQdqParameterCones(Model& model, PassResult& result);

}  // namespace qopt::fold
