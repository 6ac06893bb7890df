// Small graph edits the quantization passes share: the float type Q/DQ pairs of a value work in,
// and constants added with a unique name and their type declared.
#pragma once

#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::quant {

/// The float type a value's Q/DQ pair works in: its float16 or bfloat16 type, else float.
DataType floatTypeOf(const Value* value);

/// Adds `tensor` as an initializer named after `baseName` (made unique), typed by the tensor.
Value* addNamedInitializer(Graph& graph, const std::string& baseName, Tensor tensor);

}  // namespace qopt::quant
