// QuantizeLinear and DequantizeLinear in a float16 model. From opset 19 a QuantizeLinear takes
// float16 input with a float16 scale, and a DequantizeLinear with a float16 scale returns float16,
// so the INT8 layers of a strongly typed TensorRT network keep their fusions: a Cast between a
// DequantizeLinear and its Conv or MatMul breaks the fusion and the layer runs in float.
// to-fp16 converts a Q/DQ node when its scale is a constant that float16 (or bfloat16) holds to
// its normal precision; a DequantizeLinear whose scale cannot change keeps its readers in float32.
#pragma once

#include <optional>
#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::tofp16 {

/// The opset from which QuantizeLinear/DequantizeLinear accept float16 and bfloat16 scales.
inline constexpr int64_t kHalfQdqOpset = 19;

bool isQuantize(const Node& node);
bool isDequantize(const Node& node);
bool isQdq(const Node& node);

/// Why the scale of the Q/DQ node `node` cannot be written in `half`: it is not a float32
/// constant, a value is not a positive finite number, or `half` would round it by more than its
/// normal precision (float16 below 2^-14 unless exactly representable, above 65504). nullopt
/// when it can.
std::optional<std::string> halfScaleProblem(const Node& node, DataType half);

/// Whether `graph` or a subgraph holds a default-domain QuantizeLinear or DequantizeLinear.
bool hasQdq(const Graph& graph);

}  // namespace qopt::tofp16
