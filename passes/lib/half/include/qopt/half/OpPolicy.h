// Which ops to-fp16 converts and how: the default block list (op types kept in float32, each for
// a stated reason), ops always kept in float32 (their type constraints do not admit float16 in
// the opsets qopt reads), input slots that must stay float32 in a converted op, and the inputs
// that accept any type (so no Cast is needed in front of them).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::tofp16 {

/// The op types kept in float32 unless `block-ops` says otherwise (see OpPolicy.cpp for why).
std::vector<std::string> defaultBlockedOps();

/// Ops never converted whatever the block list says: DynamicQuantizeLinear (float32 input and
/// scale in every opset). QuantizeLinear/DequantizeLinear follow QdqPrecision.h.
bool alwaysFloat32(const Node& node);

/// Input slots of a converted op that ONNX types as float32 only (Resize scales, Upsample
/// scales) or that hold coordinates better kept exact (Resize roi).
bool inputStaysFloat32(const Node& node, size_t index);

/// Outputs of a converted op that ONNX types as float32 or bfloat16 only (LayerNormalization's
/// mean and inverse standard deviation).
bool outputStaysFloat32(const Node& node, size_t index);

/// Inputs whose element type the op does not constrain against its other inputs: Cast's input,
/// Shape, Size and the second input of CastLike read any type.
bool inputTakesAnyType(const Node& node, size_t index);

}  // namespace qopt::tofp16
