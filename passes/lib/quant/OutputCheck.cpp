#include "OutputCheck.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <unordered_map>

#include "FakeQuantize.h"
#include "qopt/analysis/Comparison.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/GraphValues.h"
#include "qopt/quant/OutputNoise.h"

namespace qopt::quant {
namespace {

// A copy of `model` reading every assigned tensor through Q/DQ (in each graph that reads it,
// bodies included: inserted before that graph's first reader) and the quantized weights.
std::unique_ptr<Model> quantizedCopy(const Model& model,
                                     const std::vector<QuantizedTensor>& tensors,
                                     const QuantizedWeights& weights) {
  std::unique_ptr<Model> copy = model.clone();
  prepareQdqDomain(*copy);
  std::unordered_map<const Node*, Node*> nodeOf = nodeCorrespondence(model, *copy);
  std::unordered_map<const Node*, size_t> position;
  size_t p = 0;
  for (Node* node : copy->graph().allNodes()) position[node] = p++;
  for (const auto& [slot, tensor] : weights) {
    auto found = nodeOf.find(slot.first);
    if (found == nodeOf.end()) continue;
    Node* node = found->second;
    node->setInput(slot.second,
                   addNamedInitializer(*node->graph(),
                                       node->input(slot.second)->name() + "_auto_check", tensor));
  }
  for (const QuantizedTensor& t : tensors) {
    const std::vector<Value*> named = copy->valuesNamed(t.value->name());
    if (named.size() != 1) {
      throw Error(ErrorKind::Internal, model.sourcePath,
                  fmt::format("tensor '{}'", t.value->name()),
                  "not once in the whole-model check's copy of the graph");
    }
    Value* x = named.front();
    // The readers grouped by graph, each group in the order of its first reader.
    std::vector<std::pair<Node*, std::vector<Use>>> byGraph;  // (first reader, uses)
    for (const Use& use : x->uses()) {
      // Readers this copy added (the fake quantization of an earlier entry for the same value,
      // read in another body) are not the model's.
      if (!position.contains(use.user)) continue;
      auto group = std::find_if(byGraph.begin(), byGraph.end(), [&](const auto& g) {
        return g.first->graph() == use.user->graph();
      });
      if (group == byGraph.end()) {
        byGraph.push_back({use.user, {}});
        group = std::prev(byGraph.end());
      }
      if (position.at(use.user) < position.at(group->first)) group->first = use.user;
      group->second.push_back(use);
    }
    for (auto& [first, uses] : byGraph) {
      Value* fake = fakeQuantize(*first->graph(), x, t.quantization, first);
      for (const Use& use : uses) use.user->setInput(use.index, fake);
    }
  }
  return copy;
}

}  // namespace

std::vector<double> measureOutputErrors(analysis::SampleWorkers& workers, const Model& model,
                                        std::span<const std::vector<QuantizedTensor>> assignments,
                                        const QuantizedWeights& weights,
                                        std::span<const analysis::Sample> samples) {
  analysis::SampleSource source(std::vector<analysis::Sample>(samples.begin(), samples.end()),
                                "held");
  const OutputNoise noise(workers, model, source, UINT64_MAX,
                          "calibrator=auto's whole-model check");
  std::vector<double> errors;
  for (const std::vector<QuantizedTensor>& tensors : assignments) {
    // A quantized copy has the model's outputs: they always correspond.
    errors.push_back(noise.of(*quantizedCopy(model, tensors, weights)).value_or(INFINITY));
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
