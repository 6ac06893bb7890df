// Converting a model's default-domain opset, up or down, with each op's meaning kept: where an op
// changed between the two versions (attributes that became inputs, Softmax's coerced 2-D view,
// Upsample replaced by Resize, attributes added later), the node is rewritten so that it
// computes exactly what it computed before, and what cannot be rewritten exactly is refused.
// One converter for every pass that needs a newer opset (insert-qdq's per-channel scales at 13,
// float16 scales at 19) and for the convert-opset pass, built once in libqopt_opset.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::opset {

inline constexpr int64_t kLowestOpset = 7;
inline constexpr int64_t kHighestOpset = 21;

/// What the conversion did to one node: (subject, what), for remarks.
using Rewrite = std::pair<std::string, std::string>;

struct ConversionResult {
  int64_t from = 0;
  int64_t to = 0;
  std::vector<Rewrite> rewrites;
};

/// Converts the default-domain opset of `model` (main graph and every subgraph) to `target`,
/// rewriting the nodes whose op changed meaning on the way. Nothing changes when the model is
/// already at `target`. Throws qopt::Error (input kind, naming the file and node) for a target
/// or model opset outside 7..21 and for a node that cannot be converted exactly; every node is
/// checked before the first one changes, so the model is then left as it was.
ConversionResult convertOpset(Model& model, int64_t target);

}  // namespace qopt::opset
