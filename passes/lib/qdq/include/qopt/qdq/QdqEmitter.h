// Writes QuantizeLinear / DequantizeLinear nodes and their constants into a graph, named after
// the tensor they quantize: <x>_quantized, <x>_dequantized, <x>_scale, <x>_zero_point (a
// suffix _1, _2 ... where a name is taken). Shared by insert-qdq and static-quant.
#pragma once

#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/qdq/QuantNumbers.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::qdq {

/// x -> QuantizeLinear -> DequantizeLinear to params.type (its zero point carries the type),
/// both inserted before `before`; returns the DequantizeLinear output (x itself is left as it
/// is, with all its uses).
Value* insertActivationPair(Graph& graph, Value* x, const ActivationParams& params, Node* before);

/// A DequantizeLinear of the quantized tensor `values` (int8 or float8 weights, int32 bias) with
/// per-axis (axis >= 0) or per-tensor scales and zero points 0 of its type, inserted before
/// `before`. `baseName` names the new values. Returns the DequantizeLinear output, typed
/// `floatType` (the type of the tensor it stands for: float, float16 or bfloat16, which the scales
/// take) with `values`' dims.
Value* insertConstantDequantize(Graph& graph, const std::string& baseName, Tensor values,
                                const std::vector<float>& scales, int64_t axis, Node* before,
                                DataType floatType = DataType::Float);

/// Float16 or BFloat16 for tensors of those types, else Float: the type of the scales that
/// quantize `value`, and of its DequantizeLinear output.
using quant::floatTypeOf;

/// QuantizeLinear/DequantizeLinear take float16 and bfloat16 scales from this opset on.
inline constexpr int64_t kHalfScaleOpset = 19;

/// Adds an initializer named after `baseName` (a fresh name when taken).
using quant::addNamedInitializer;

}  // namespace qopt::qdq
