// Conv + BatchNormalization + Add + Relu/Clip chains that the interpreter runs as one step: the
// BatchNormalization's affine map, a residual Add and the activation are applied to each output
// tile of the convolution while it is in cache, instead of as more passes over the activations
// through freshly allocated tensors. The result is bitwise the one of the unfused nodes
// (Epilogue.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ops/Epilogue.h"
#include "qopt/interp/Array.h"
#include "qopt/ir/Graph.h"

namespace qopt::interp {

struct ConvChain {
  const Node* conv = nullptr;
  const Node* batchNorm = nullptr;   // may be null
  const Node* add = nullptr;         // may be null
  const Value* residual = nullptr;   // the Add's other operand
  const Node* activation = nullptr;  // Relu or Clip; may be null
  ConvEpilogue epilogue;

  /// The node whose output the chain produces.
  const Node* last() const {
    return activation ? activation : add ? add : batchNorm ? batchNorm : conv;
  }
};

/// Returns the constant array of a value, or null when the value is computed at run time.
using ConstantLookup = std::function<const Array*(const Value*)>;

/// The chains of `graph` (not of its subgraphs) that can run fused: a float Conv followed by a
/// BatchNormalization (inference form, constant parameters), an Add of another value for which
/// `residualReady(add's other operand, conv)` holds (it is computed before the Conv runs), and a
/// Relu or Clip (constant bounds), each optional, where each value between them has that one
/// consumer and is not a graph output.
/// Chains whose parameters are malformed are left out: their nodes run one by one and report
/// the problem as usual. `opsetOf` gives the model's opset of a node's domain.
std::vector<ConvChain> findConvChains(
    const Graph& graph, const ConstantLookup& constant,
    const std::function<int64_t(const Node&)>& opsetOf,
    const std::function<bool(const Value*, const Node*)>& residualReady);

}  // namespace qopt::interp
