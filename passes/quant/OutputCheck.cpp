#include "OutputCheck.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <unordered_map>

#include "FakeQuantize.h"
#include "qopt/analysis/Comparison.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::quant {
namespace {

// A copy of `model` reading every assigned tensor through Q/DQ (inserted before its first
// reader, every reader of the main graph redirected) and the quantized weights.
std::unique_ptr<Model> quantizedCopy(const Model& model,
                                     const std::vector<QuantizedTensor>& tensors,
                                     const QuantizedWeights& weights) {
  std::unique_ptr<Model> copy = model.clone();
  Graph& graph = copy->graph();
  prepareQdqDomain(*copy);
  std::unordered_map<const Node*, Node*> nodeOf = nodeCorrespondence(model, *copy);
  std::unordered_map<const Node*, size_t> position;
  size_t p = 0;
  for (Node* node : graph.nodes()) position[node] = p++;
  for (const auto& [slot, tensor] : weights) {
    auto found = nodeOf.find(slot.first);
    if (found == nodeOf.end()) continue;
    Node* node = found->second;
    node->setInput(
        slot.second,
        addNamedInitializer(graph, node->input(slot.second)->name() + "_auto_check", tensor));
  }
  for (const QuantizedTensor& t : tensors) {
    Value* x = graph.findValue(t.value->name());
    if (x == nullptr) {
      throw Error(ErrorKind::Internal, model.sourcePath,
                  fmt::format("tensor '{}'", t.value->name()),
                  "not in the whole-model check's copy of the graph");
    }
    std::vector<Use> uses;
    Node* first = nullptr;
    for (const Use& use : x->uses()) {
      if (position.count(use.user) == 0) continue;  // a subgraph's node: left reading float
      uses.push_back(use);
      if (first == nullptr || position.at(use.user) < position.at(first)) first = use.user;
    }
    if (first == nullptr) continue;
    Value* fake = fakeQuantize(graph, x, t.quantization, first);
    for (const Use& use : uses) use.user->setInput(use.index, fake);
  }
  return copy;
}

// Points `copy`'s graph outputs at what the check compares: where a Softmax, LogSoftmax or
// Sigmoid makes an output (through ops that only move values), that op's input, the logits:
// saturated probabilities differ from float by amounts that say little. An output whose numbers
// are typed and not float (argmax indices) is dropped; an untyped one (no shape inference ran)
// stays.
void compareAtLogits(Model& copy) {
  Graph& graph = copy.graph();
  for (size_t o = graph.outputs().size(); o-- > 0;) {
    Value* compared = graph.outputs()[o];
    if (Value* logits = preActivationOf(*compared)) compared = logits;
    const DataType type = compared->type().elemType;
    if (type != DataType::Undefined && !isFloatingPoint(type)) {
      graph.removeOutput(o);
    } else {
      graph.setOutput(o, compared);
    }
  }
}

}  // namespace

std::vector<double> measureOutputErrors(const Model& model,
                                        std::span<const std::vector<QuantizedTensor>> assignments,
                                        const QuantizedWeights& weights,
                                        std::span<const analysis::Sample> samples) {
  std::unique_ptr<Model> reference = model.clone();
  compareAtLogits(*reference);
  const analysis::OutputSets expected = analysis::runOutputs(reference->graph(), samples);
  std::vector<double> errors;
  for (const std::vector<QuantizedTensor>& tensors : assignments) {
    std::unique_ptr<Model> copy = quantizedCopy(model, tensors, weights);
    compareAtLogits(*copy);
    const std::vector<analysis::ErrorMetrics> metrics =
        analysis::outputErrors(copy->graph(), samples, expected);
    double sum = 0;
    for (const analysis::ErrorMetrics& m : metrics) sum += std::pow(10.0, -m.sqnrDb / 10.0);
    errors.push_back(metrics.empty() ? 0.0 : sum / static_cast<double>(metrics.size()));
  }
  return errors;
}

size_t keptAssignment(std::span<const double> errors) {
  size_t best = 0;
  for (size_t i = 1; i < errors.size(); ++i) {
    if (errors[i] < errors[best]) best = i;
  }
  if (best == 0) return 0;
  // error ratio for the gain in dB: SQNR = -10 log10(error)
  const double needed = errors[0] * std::pow(10.0, -kCheckMinGainDb / 10.0);
  return errors[best] < needed ? best : 0;
}

}  // namespace qopt::quant
