// The transformer structures whose Q/DQ placement decides what TensorRT fuses, recognised
// whatever the exporter wrote:
//   - attention: MatMul Q x K^T (K transposed by a Transpose, or already laid out transposed),
//     scaled by Div or Mul before the MatMul (on Q, on K or both) or after it, an optional mask
//     (Add, or Where as masked_fill), Softmax (optionally followed by the IsNaN/Where guard that
//     PyTorch's scaled_dot_product_attention exports), MatMul probabilities x V; reshapes and
//     transposes of the heads in between. TensorRT fuses the block into one MHA kernel when both
//     MatMuls read per-tensor Q/DQ on both inputs and nothing between them is quantized;
//   - LayerNorm: the LayerNormalization op (opset 17) or its decomposed form
//     ReduceMean, Sub, Pow (or Mul), ReduceMean, Add, Sqrt, Div, then Mul by the scale and Add of
//     the bias when present;
//   - GELU: the Gelu op (opset 20, or com.microsoft's Gelu/FastGelu), the Erf form
//     x * 0.5 * (1 + erf(x / sqrt(2))) and the tanh form
//     0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), whichever order the Muls take.
// TensorRT runs Softmax, LayerNorm and GELU in float: a Q/DQ inside them fuses with nothing.
// insert-qdq (Placement.cpp) and check-trt both read this; it changes nothing.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::qdq {

/// A MatMul or Gemm with a constant weight that computes the query, key, value or output of an
/// attention block.
struct Projection {
  const Node* node = nullptr;
  std::string role;  // "query", "key", "value", "output"; packed QKV: "query/key/value"
};

struct AttentionBlock {
  const Node* scores = nullptr;          // MatMul Q x K^T
  const Node* softmax = nullptr;         // Softmax of the (scaled, masked) scores
  const Node* context = nullptr;         // MatMul probabilities x V
  bool keyTransposed = false;            // a Transpose on K's path into the scores MatMul
  std::vector<const Node*> scaleBefore;  // Div/Mul by a constant on Q or K
  std::vector<const Node*> scaleAfter;   // Div/Mul by a constant on the scores
  const Node* mask = nullptr;            // Add or Where applying the mask
  /// Nodes strictly between the two MatMuls (scale, mask, Softmax, its NaN guard): what
  /// TensorRT's MHA kernel computes in float, where no Q/DQ may sit.
  std::vector<const Node*> interior;
  std::vector<Projection> projections;

  /// "scores MatMul 's' (K transposed, scaled by Div after it, mask Add 'm'), Softmax 'p',
  /// context MatMul 'o'; projections: query 'q', key 'k', value 'v', output 'out'".
  std::string describe() const;
};

/// A LayerNorm or GELU: nodes TensorRT runs in float, with no Q/DQ inside.
struct FloatPattern {
  enum class Kind { LayerNorm, Gelu };
  Kind kind = Kind::LayerNorm;
  std::string form;  // "LayerNormalization", "decomposed", "Gelu op", "Erf form", "tanh form"
  const Value* input = nullptr;  // x
  const Node* last = nullptr;    // the node producing the pattern's result
  std::vector<const Node*> nodes;

  /// "LayerNorm (decomposed: ReduceMean, Sub, ...) ending at 'ln'", "GELU (Erf form) ...".
  std::string describe() const;
};

struct TransformerPatterns {
  std::vector<AttentionBlock> attention;    // in graph order of their Softmax
  std::vector<FloatPattern> floatPatterns;  // LayerNorms and GELUs in graph order

  /// The block whose scores or context MatMul `matmul` is, or null.
  const AttentionBlock* attentionOf(const Node* matmul) const;
  /// When `node` lies inside a Softmax chain of an attention block, a LayerNorm or a GELU:
  /// which one, for messages ("the attention block of Softmax 'p'"); empty otherwise.
  std::string floatInteriorOf(const Node* node) const;

  std::unordered_map<const Node*, size_t> attentionByMatMul;
  std::unordered_map<const Node*, std::string> floatInterior;
};

/// Recognises the attention blocks, LayerNorms and GELUs of `graph` (its main graph).
TransformerPatterns findTransformerPatterns(const Graph& graph);

}  // namespace qopt::qdq
