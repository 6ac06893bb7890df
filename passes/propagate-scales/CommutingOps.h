// Ops that commute with quantization: they only select, move or repeat elements (or take a
// maximum, which a monotonic map preserves), so Q(op(x)) == op(Q(x)) and DQ(op(q)) == op(DQ(q))
// exactly, for per-tensor parameters. Which inputs carry the data, and when an op does not
// qualify (and why).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/qdq/NodeParams.h"

namespace qopt::qdq {

/// The op types propagate-scales considers at all.
bool isDataMovementOp(const Node& node);

/// The inputs holding the quantized data: every input of Concat, the first of the others.
std::vector<size_t> dataInputs(const Node& node);

/// Whether `node` commutes with per-tensor quantization by `params` under `opset` (empty string),
/// or the reason it does not.
std::string whyNotCommuting(const Node& node, const QuantParams& params, int64_t opset);

/// Adjusts what changes when `node` runs on integers: Pad's value 0 becomes the zero point.
void adaptToIntegers(Node& node, const QuantParams& params);

}  // namespace qopt::qdq
