#include "qopt/constants/ConstantCone.h"

#include <fmt/format.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "qopt/constants/ConstantValue.h"
#include "qopt/constants/NodeEvaluator.h"
#include "qopt/ir/Error.h"

namespace qopt::fold {
namespace {

bool isQdq(const Node& node) {
  return (node.domain().empty() || node.domain() == "ai.onnx" ||
          node.domain() == "com.microsoft") &&
         (node.opType() == "QuantizeLinear" || node.opType() == "DequantizeLinear");
}

// Ops whose result is not a function of their inputs: never folded.
bool deterministic(const Node& node) {
  const std::string& op = node.opType();
  return op != "RandomNormal" && op != "RandomUniform" && op != "RandomNormalLike" &&
         op != "RandomUniformLike" && op != "Multinomial" && op != "Bernoulli" && op != "Dropout";
}

class ConeEvaluator {
 public:
  ConeEvaluator(uint64_t maxBytes, int maxNodes) : maxBytes_(maxBytes), budget_(maxNodes) {}

  std::optional<Tensor> valueOf(const Value* value) {
    if (value == nullptr) return std::nullopt;
    if (std::optional<Tensor> constant = constantOf(value)) return constant;
    if (auto it = memo_.find(value); it != memo_.end()) return it->second;
    std::optional<Tensor> result = evaluate(value);
    memo_.emplace(value, result);
    return result;
  }

 private:
  std::optional<Tensor> evaluate(const Value* value) {
    const Node* producer = value->producer();
    if (producer == nullptr || value->isGraphInput() || !producer->subgraphs().empty() ||
        !deterministic(*producer) || --budget_ < 0) {
      return std::nullopt;
    }
    std::vector<std::optional<Tensor>> inputs;
    for (const Value* input : producer->inputs()) {
      if (input == nullptr) {
        inputs.emplace_back();
        continue;
      }
      std::optional<Tensor> tensor = valueOf(input);
      if (!tensor) return std::nullopt;
      inputs.push_back(std::move(tensor));
    }
    std::vector<Tensor> outputs;
    try {
      outputs = evaluateNode(*producer, inputs, maxBytes_);
    } catch (const Error&) {
      return std::nullopt;  // not evaluable here: the value stays as the graph computes it
    }
    for (size_t i = 0; i < producer->numOutputs() && i < outputs.size(); ++i) {
      if (producer->output(i) != value) memo_.emplace(producer->output(i), outputs[i]);
    }
    for (size_t i = 0; i < producer->numOutputs() && i < outputs.size(); ++i) {
      if (producer->output(i) == value) return std::move(outputs[i]);
    }
    return std::nullopt;
  }

  uint64_t maxBytes_;
  int budget_;
  std::unordered_map<const Value*, std::optional<Tensor>> memo_;
};

void collectQdq(Graph& graph, std::vector<Node*>& out) {
  for (Node* node : graph.nodes()) {
    if (isQdq(*node)) out.push_back(node);
    for (Graph* body : node->subgraphs()) collectQdq(*body, out);
  }
}

}  // namespace

std::optional<Tensor> constantCone(const Value* value, uint64_t maxBytes, int maxNodes) {
  return ConeEvaluator(maxBytes, maxNodes).valueOf(value);
}

std::optional<Tensor> qdqParameter(const Value* value) {
  if (value == nullptr) return std::nullopt;
  if (std::optional<Tensor> constant = constantThroughCasts(value)) return constant;
  return constantCone(value);
}

int64_t foldQdqParameterCones(Model& model, PassResult& result) {
  std::vector<Node*> nodes;
  collectQdq(model.graph(), nodes);
  int64_t folded = 0;
  for (Node* node : nodes) {
    for (size_t slot = 1; slot <= 2 && slot < node->numInputs(); ++slot) {
      Value* value = node->input(slot);
      // Constants, also through exact Casts, are read as they are: only real cones change.
      if (value == nullptr || value->producer() == nullptr || constantThroughCasts(value)) continue;
      std::optional<Tensor> tensor = constantCone(value);
      if (!tensor) continue;
      const std::string name = value->name();
      const std::string producer = value->producer()->describe();
      std::vector<Use> uses(value->uses().begin(), value->uses().end());
      installConstant(uses, std::move(*tensor), name);  // erases the cone nothing else reads
      result.applied(fmt::format("{} input {} of {}", slot == 1 ? "scale" : "zero point", slot,
                                 node->describe()),
                     fmt::format("'{}', computed by {} from constants, folded", name, producer));
      ++folded;
    }
  }
  return folded;
}

}  // namespace qopt::fold
