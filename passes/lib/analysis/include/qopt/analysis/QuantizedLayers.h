// The quantized layers of a Q/DQ model and how to return one to float: what sensitivity
// analysis measures and what mixed-precision changes.
//
// A quantized layer is a Conv, ConvTranspose, Gemm or MatMul with a constant weight, at least
// one of whose inputs is read directly from a DequantizeLinear. "Left in float" means its
// inputs bypass their Q/DQ: an input read from DequantizeLinear(QuantizeLinear(x)) reads x, and
// an input read from DequantizeLinear of a constant (weight, int32 bias) reads a float constant
// (named after the DequantizeLinear's output, "<name>_dequantized") holding the values the
// constant had before it was quantized when the pass that quantized it recorded them
// (Model::recordUnrounded: insert-qdq does), else the dequantized values (a QAT model's).
// Other readers of the same Q/DQ nodes are not affected.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::analysis {

struct QuantizedLayer {
  Node* node = nullptr;
  /// Index of the node in Graph::allNodes() (bodies included): finds the same node in a clone
  /// of the model.
  size_t position = 0;
  std::string name;  // layerName(node)
};

/// The quantized layers of `graph` and of the bodies inside it, in allNodes() order.
std::vector<QuantizedLayer> findQuantizedLayers(const Graph& graph);

/// `value` (the input of QuantizeLinear `q`) in the element type DequantizeLinear `dq` returns:
/// itself when their scales have one type, else through a Cast inserted before `before` (to-fp16
/// gives float16 scales to a DequantizeLinear fed by a float32 QuantizeLinear).
Value* inDequantizedType(const Node& q, const Node& dq, Value* value, Node* before);

/// The node at `position` in `graph`'s allNodes() order (nullptr past the end).
Node* nodeAtPosition(const Graph& graph, size_t position);

/// The nodes at `positions`, with the graph's nodes listed once for all of them; a qopt::Error
/// (internal) for a position past the end.
std::vector<Node*> nodesAtPositions(const Graph& graph, std::span<const size_t> positions);

enum class FloatFallback {
  Float,    // the layer reads float32 (the Q/DQ bypassed)
  Float16,  // bypassed, then run in float16: inputs cast (constants converted), output cast back
};

struct BypassResult {
  int activationsBypassed = 0;   // inputs now read before their QuantizeLinear
  int constantsDequantized = 0;  // weights and biases now stored in float (any of the two ways)
  int constantsRestored = 0;     // of those, how many got their values before quantization
  /// Inputs still read through DequantizeLinear, with the reason.
  std::vector<std::string> kept;
  bool changed() const { return activationsBypassed + constantsDequantized > 0; }
};

/// Returns `node` to float (see above). Q/DQ nodes and constants nothing reads any more are
/// erased. An input that cannot be returned (a constant computed in ways not evaluated here, a
/// DequantizeLinear of a run-time tensor) stays quantized and is listed in `kept`.
BypassResult returnToFloat(Node& node, FloatFallback fallback = FloatFallback::Float);

/// Returns every node of `graph` and its bodies except those in `keep` (and the Q/DQ nodes) to
/// float, and graph outputs computed by DequantizeLinear(QuantizeLinear(x)) become x: what is left
/// quantized is exactly what the kept nodes read. With `keep` empty: the float model.
void removeQuantization(Graph& graph, const std::unordered_set<const Node*>& keep);

/// The values of DequantizeLinear(x, scale, zero point) for constant inputs, computed in double
/// and rounded once to the scale's type (per tensor, per axis and blocked layouts). x may also be
/// QuantizeLinear of a constant (QAT exports), evaluated here.
Tensor dequantizeConstant(const Node& dequantize);

/// The values the constant DequantizeLinear `dequantize` reads had before they were quantized,
/// in the type and shape it returns, when the model recorded them (Model::recordUnrounded) and
/// the codes are still those recorded; nullopt otherwise.
std::optional<Tensor> unroundedConstant(const Node& dequantize);

}  // namespace qopt::analysis
