// The tensor a Constant node stands for (value, value_float(s), value_int(s)): the one reading of
// Constant nodes that every pass uses.
#pragma once

#include <optional>
#include <string>

#include "qopt/ir/Graph.h"

namespace qopt {

/// The tensor of a Constant node, or nullopt with the reason in `why` (sparse and string values,
/// references to function attributes, not exactly one value attribute).
std::optional<Tensor> constantNodeTensor(const Node& node, std::string* why = nullptr);

}  // namespace qopt
