#include "OpsetUpgrade.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>

#include "qopt/ir/Error.h"

namespace qopt::qdq {
namespace {

// Ops of the default domain whose inputs, attributes or meaning changed incompatibly, and the
// opset that changed them (at most 13): a node of such an op breaks when the model's opset is
// below that version and the target is at or above it.
constexpr std::pair<std::string_view, int64_t> kBreakingChanges[] = {
    {"BatchNormalization", 9},  // 'spatial' removed
    {"Scan", 9},                // batch axis removed
    {"Upsample", 10},           // deprecated
    {"Slice", 10},              // starts/ends/axes moved to inputs
    {"TopK", 10},               // k moved to an input
    {"Dropout", 12},            // ratio moved to an input
    {"Pad", 11},                // pads moved to an input
    {"Clip", 11},               // min/max moved to inputs
    {"Resize", 11},             // roi input added
    {"Split", 13},              // split moved to an input
    {"Squeeze", 13},            // axes moved to an input
    {"Unsqueeze", 13},          // axes moved to an input
    {"ReduceSum", 13},          // axes moved to an input
    {"Softmax", 13},            // axis: one axis instead of a coerced 2-D view
    {"LogSoftmax", 13},
    {"Hardmax", 13},
};

// Softmax and its kin keep their meaning when they reduce over the last axis only.
bool softmaxOnLastAxis(const Node& node) {
  const Value* x = node.input(0);
  if (x == nullptr || !x->type().shape) return false;
  int64_t rank = static_cast<int64_t>(x->type().shape->size());
  int64_t axis = node.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  return axis == rank - 1;
}

const Node* firstBreakingNode(const Graph& graph, int64_t from, int64_t to) {
  const Node* found = nullptr;
  graph.walk([&](const Node* node) {
    if (found != nullptr || !node->domain().empty()) return;
    for (const auto& [op, version] : kBreakingChanges) {
      if (node->opType() != op || version <= from || version > to) continue;
      bool softmaxKin = op == "Softmax" || op == "LogSoftmax" || op == "Hardmax";
      if (softmaxKin && softmaxOnLastAxis(*node)) continue;
      found = node;
      return;
    }
  });
  return found;
}

}  // namespace

std::optional<int64_t> raiseOpset(Model& model, int64_t target) {
  int64_t current = model.opsetVersion("").value_or(1);
  if (current >= target) return std::nullopt;
  if (const Node* node = firstBreakingNode(model.graph(), current, target)) {
    throw Error(ErrorKind::Input, model.sourcePath, node->describe(),
                fmt::format("per-channel quantization needs opset {}, but the model uses opset "
                            "{} and this {} changes meaning between the two; convert the model "
                            "to opset {} first",
                            target, current, node->opType(), target));
  }
  model.setOpsetVersion("", target);
  return current;
}

}  // namespace qopt::qdq
