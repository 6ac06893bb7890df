#include "qopt/half/OpPolicy.h"

#include <algorithm>

namespace qopt::tofp16 {

std::vector<std::string> defaultBlockedOps() {
  return {
      // The default-domain entries of onnxconverter-common's DEFAULT_OP_BLOCK_LIST (its
      // convert_float_to_float16, also behind ONNX Runtime's float16 tooling), kept as that
      // converter keeps them; the other entries are ai.onnx.ml ops, outside the ONNX domain,
      // which to-fp16 never converts.
      "NonMaxSuppression",
      "TopK",
      "RoiAlign",
      "Resize",
      "Upsample",
      "Range",
      "CumSum",
      "Min",
      "Max",
      "RandomUniformLike",
      // Numeric range: exp(x) overflows float16 (max 65504) from x > 11.09, log and pow of small
      // or large values lose most digits.
      "Exp",
      "Log",
      "Pow",
      // Reductions accumulate many values: sums and products overflow 65504 and lose the low
      // bits of each added value (float16 has 11 significant bits).
      "ReduceSum",
      "ReduceMean",
      "ReduceProd",
      "ReduceL1",
      "ReduceL2",
      "ReduceLogSum",
      "ReduceLogSumExp",
      "ReduceSumSquare",
      // LayerNormalization squares its inputs (|x| > 256 overflows float16); TensorRT's builder
      // warns that layernorm in FP16 may overflow and suggests forcing it to FP32.
      "LayerNormalization",
  };
}

bool alwaysFloat32(const Node& node) {
  if (!node.domain().empty()) return false;
  const std::string& op = node.opType();
  return op == "DynamicQuantizeLinear";
}

bool inputStaysFloat32(const Node& node, size_t index) {
  if (!node.domain().empty()) return false;
  if (node.opType() == "Resize") return index == 1 || index == 2;
  if (node.opType() == "Upsample") return index == 1;
  return false;
}

bool outputStaysFloat32(const Node& node, size_t index) {
  return node.domain().empty() && node.opType() == "LayerNormalization" && index > 0;
}

bool inputTakesAnyType(const Node& node, size_t index) {
  if (!node.domain().empty()) return false;
  const std::string& op = node.opType();
  if (op == "Cast" || op == "Shape" || op == "Size") return true;
  return op == "CastLike" && index == 0;
}

}  // namespace qopt::tofp16
