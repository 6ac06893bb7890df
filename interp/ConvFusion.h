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
  const Node* bias = nullptr;       // an Add of a per-channel constant; may be null
  const Node* batchNorm = nullptr;  // may be null (always when there is a bias Add)
  std::vector<const Node*> before;  // a Mul by a scalar and/or an Add of one, in order
  const Node* add = nullptr;        // may be null
  const Value* residual = nullptr;  // the Add's other operand
  // Relu, Clip, or HardSwish's Add, Clip, Mul and Div, in order; may be empty.
  std::vector<const Node*> activation;
  std::vector<const Node*> after;  // a Mul by a scalar and/or an Add of one, in order
  ConvEpilogue epilogue;

  /// The nodes after the Conv, in order (the last one produces the chain's output).
  std::vector<const Node*> laterNodes() const {
    std::vector<const Node*> out;
    for (const Node* n : {bias, batchNorm}) {
      if (n != nullptr) out.push_back(n);
    }
    out.insert(out.end(), before.begin(), before.end());
    if (add != nullptr) out.push_back(add);
    out.insert(out.end(), activation.begin(), activation.end());
    out.insert(out.end(), after.begin(), after.end());
    return out;
  }
};

/// Returns the constant array of a value, or null when the value is computed at run time.
using ConstantLookup = std::function<const Array*(const Value*)>;

/// The chains of `graph` (not of its subgraphs) that can run fused: a float Conv followed by an
/// Add of a per-channel constant (shape [C, 1, ...] or [1, C, 1, ...]) or a BatchNormalization
/// (inference form, constant parameters), a Mul by a scalar constant and an Add of one (before
/// and after the activation, as PP-LCNetV3's learnable affine blocks), an Add of another value
/// for which
/// `residualReady(add's other operand, conv)` holds (it is computed before the Conv runs), and a
/// Relu, a Clip (constant bounds) or a written-out HardSwish (Add of a scalar, Clip, Mul by the
/// Add's input, Div by a scalar), each optional, where each value between them has only those
/// consumers and is not a graph output.
/// Chains whose parameters are malformed are left out: their nodes run one by one and report
/// the problem as usual. `opsetOf` gives the model's opset of a node's domain.
std::vector<ConvChain> findConvChains(
    const Graph& graph, const ConstantLookup& constant,
    const std::function<int64_t(const Node&)>& opsetOf,
    const std::function<bool(const Value*, const Node*)>& residualReady);

}  // namespace qopt::interp
