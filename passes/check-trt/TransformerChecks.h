// What check-trt says about the transformer structures of a Q/DQ model (TransformerPatterns.h):
// TensorRT fuses an attention block into one MHA kernel only when both of its MatMuls read
// per-tensor Q/DQ on both inputs, or runs it in float when neither does; anything in between
// (one input quantized, one MatMul INT8 and the other float) leaves the MatMuls unfused and the
// quantized one's Q/DQ as extra work.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "Finding.h"
#include "qopt/analysis/PrecisionReport.h"
#include "qopt/qdq/TransformerPatterns.h"

namespace qopt::checktrt {

struct AttentionVerdicts {
  /// MatMuls an attention finding is about: float-layer does not report them again.
  std::unordered_set<const Node*> reported;
  /// MatMuls of blocks left wholly in float (no input of either MatMul quantized): a choice
  /// (insert-qdq{exclude-mha=true}, long sequences), not a placement error.
  std::unordered_set<const Node*> floatByDesign;
};

/// Appends an attention-inconsistent finding per MatMul of a block quantized inconsistently.
AttentionVerdicts checkAttention(const qdq::TransformerPatterns& patterns,
                                 const analysis::PrecisionReport& precisions,
                                 std::vector<Finding>& findings);

/// For a node inside a Softmax chain, LayerNorm or GELU: "TensorRT runs Softmax 'p' in float
/// (inside the attention block of Softmax 'p')"; empty for any other node.
std::string floatReaderNote(const Node& reader, const qdq::TransformerPatterns& patterns);

}  // namespace qopt::checktrt
