// Making quantizations equal where the target needs one scale (Concat inputs and output, the two
// sides of an op Q/DQ moves through, residual Add inputs): the widest range wins, and each
// QuantizeLinear changes together with every DequantizeLinear reading it. This changes numerics
// (a coarser step for the narrower ones), so callers count and report it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/qdq/NodeParams.h"

namespace qopt::qdq {

/// A QuantizeLinear and every DequantizeLinear reading its output.
struct QuantGroup {
  Node* q = nullptr;
  std::vector<Node*> dqs;
  QuantParams params;
};

/// The group of the QuantizeLinear that produced what `dq` reads, or nullopt with the reason.
std::optional<QuantGroup> groupOfDequantize(const Node& dq, std::string* why);
/// The group of `q`, or nullopt with the reason.
std::optional<QuantGroup> groupOfQuantize(Node& q, std::string* why);

/// Per-tensor parameters covering every range in `params` (all of one integer type): the largest
/// scale when all are symmetric, else the affine mapping of the union of the ranges.
std::optional<QuantParams> widestParams(const std::vector<QuantParams>& params, std::string* why);

struct UnifyOutcome {
  int changed = 0;        // groups whose parameters were rewritten
  double stepGrowth = 1;  // largest new scale / old scale among them
};

/// Rewrites every group (each QuantizeLinear once) to `params`.
UnifyOutcome unifyGroups(const std::vector<QuantGroup>& groups, const QuantParams& params);

}  // namespace qopt::qdq
