// Small graph edits the quantization passes share: the float type Q/DQ pairs of a value work in,
// constants added with a unique name and their type declared, and the op that last changed a
// value's numbers.
#pragma once

#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::quant {

/// The float type a value's Q/DQ pair works in: its float16 or bfloat16 type, else float.
DataType floatTypeOf(const Value* value);

/// Adds `tensor` as an initializer named after `baseName` (made unique), typed by the tensor.
Value* addNamedInitializer(Graph& graph, const std::string& baseName, Tensor tensor);

/// The node that computed `value`'s numbers, looking through ops that only move or reshape
/// them (Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Identity); nullptr for a graph input
/// or initializer, or when 16 producers in a row only move values.
Node* producerOfNumbers(const Value& value);

/// The logits of an output that a Softmax, LogSoftmax or Sigmoid computes (through ops that only
/// move values): that op's input; nullptr for any other value. Saturated probabilities differ
/// from float by amounts that say little, so checks compare there.
Value* preActivationOf(const Value& output);

}  // namespace qopt::quant
