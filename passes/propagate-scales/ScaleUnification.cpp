#include "ScaleUnification.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace qopt::qdq {

std::optional<QuantGroup> groupOfQuantize(Node& q, std::string* why) {
  QuantGroup group;
  group.q = &q;
  std::optional<QuantParams> p = readQuantParams(q, why);
  if (!p) return std::nullopt;
  std::optional<std::vector<Node*>> dqs = dequantizersOf(q);
  if (!dqs) {
    if (why) *why = fmt::format("{} also feeds nodes other than DequantizeLinear", q.describe());
    return std::nullopt;
  }
  group.params = *p;
  group.dqs = *dqs;
  return group;
}

std::optional<QuantGroup> groupOfDequantize(const Node& dq, std::string* why) {
  Node* q = dq.input(0) ? dq.input(0)->producer() : nullptr;
  if (!isQuantize(q)) {
    if (why) {
      *why = fmt::format("the integers {} reads do not come from a QuantizeLinear", dq.describe());
    }
    return std::nullopt;
  }
  return groupOfQuantize(*q, why);
}

std::optional<QuantParams> widestParams(const std::vector<QuantParams>& params, std::string* why) {
  if (params.empty()) return std::nullopt;
  const QuantParams& first = params.front();
  bool symmetric = true;
  double lo = 0, hi = 0, largestScale = 0;
  for (const QuantParams& p : params) {
    if (!p.perTensor()) {
      if (why) *why = "one of them is quantized per axis";
      return std::nullopt;
    }
    if (p.type != first.type) {
      if (why) {
        *why = fmt::format("their integer types differ ({} and {})", dataTypeName(first.type),
                           dataTypeName(p.type));
      }
      return std::nullopt;
    }
    symmetric = symmetric && p.zeroPoint() == 0;
    lo = std::min(lo, p.lowest());
    hi = std::max(hi, p.highest());
    largestScale = std::max(largestScale, p.scale());
  }
  QuantParams wide;
  if (symmetric) {
    wide = first;
    wide.scales = {largestScale};
    wide.zeroPoints = {0};
  } else {
    wide = paramsForRange(lo, hi, first.type, false, first.scaleType);
  }
  wide.scaleType = first.scaleType;
  wide.scaleDims = first.scaleDims;
  return wide;
}

UnifyOutcome unifyGroups(const std::vector<QuantGroup>& groups, const QuantParams& params) {
  UnifyOutcome outcome;
  std::set<const Node*> done;
  for (const QuantGroup& group : groups) {
    if (!done.insert(group.q).second || group.params.sameAs(params)) continue;
    std::vector<Node*> nodes{group.q};
    nodes.insert(nodes.end(), group.dqs.begin(), group.dqs.end());
    outcome.stepGrowth = std::max(outcome.stepGrowth, params.scale() / group.params.scale());
    writeQuantParams(nodes, params, group.q->output(0)->name());
    ++outcome.changed;
  }
  return outcome;
}

}  // namespace qopt::qdq
