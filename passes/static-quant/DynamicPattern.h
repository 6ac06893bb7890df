// The subgraph ONNX Runtime's quantize_dynamic writes for each MatMul and Conv:
//
//   x_q, x_scale, x_zp = DynamicQuantizeLinear(x)
//   y_int = MatMulInteger(x_q, W_q, x_zp, W_zp)        (or ConvInteger, same inputs)
//   y = Mul(Cast(y_int, to=FLOAT), Mul(x_scale, W_scale))   (either operand order)
//
// matchDynamicQuantized recognises it from the integer op and says why when it does not.
#pragma once

#include <optional>
#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::staticquant {

struct DynamicQuantized {
  Node* dynamicQuantize = nullptr;  // DynamicQuantizeLinear
  Value* input = nullptr;           // x, the float activation
  Node* integerOp = nullptr;        // MatMulInteger or ConvInteger
  Value* weight = nullptr;          // W_q (int8 or uint8 constant)
  Tensor weightValues;
  Tensor weightScale;                     // float, as stored
  std::optional<Tensor> weightZeroPoint;  // absent: 0
  Value* output = nullptr;                // y, the float result
};

std::optional<DynamicQuantized> matchDynamicQuantized(Node* integerOp, std::string& why);

}  // namespace qopt::staticquant
