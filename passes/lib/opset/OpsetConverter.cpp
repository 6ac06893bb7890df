#include "qopt/opset/OpsetConverter.h"

#include <fmt/format.h>

#include "NodeRewriter.h"
#include "qopt/ir/Error.h"

namespace qopt::opset {
namespace {

bool defaultDomain(const Node& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

// Checks every node, then rewrites them: Raiser or Lowerer.
template <typename Converter>
std::vector<Rewrite> run(Model& model, int64_t from, int64_t to) {
  Converter converter(model, from, to);
  model.graph().walk([&](const Node* node) {
    if (!defaultDomain(*node)) return;
    if (std::optional<std::string> why = converter.refusal(*node)) {
      throw Error(ErrorKind::Input, model.sourcePath, node->describe(),
                  fmt::format("cannot convert from opset {} to {}: {}", from, to, *why));
    }
  });
  std::vector<Node*> nodes;
  model.graph().walk([&](Node* node) { nodes.push_back(node); });
  for (Node* node : nodes) {
    if (defaultDomain(*node)) converter.convert(*node);
  }
  return std::move(converter.rewrites);
}

}  // namespace

ConversionResult convertOpset(Model& model, int64_t target) {
  ConversionResult result;
  result.from = model.opsetVersion("").value_or(1);
  result.to = target;
  if (target < kLowestOpset || target > kHighestOpset) {
    throw Error(ErrorKind::Input, model.sourcePath, "the model",
                fmt::format("opset {} is outside what qopt converts ({} to {})", target,
                            kLowestOpset, kHighestOpset));
  }
  if (result.from == target) return result;
  if (result.from < kLowestOpset || result.from > kHighestOpset) {
    throw Error(ErrorKind::Input, model.sourcePath, "the model",
                fmt::format("the model is on opset {}; qopt converts opsets {} to {}", result.from,
                            kLowestOpset, kHighestOpset));
  }
  result.rewrites = result.from < target ? run<Raiser>(model, result.from, target)
                                         : run<Lowerer>(model, result.from, target);
  model.setOpsetVersion("", target);
  return result;
}

}  // namespace qopt::opset
