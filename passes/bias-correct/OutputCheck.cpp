#include "OutputCheck.h"

#include <cmath>
#include <memory>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::biascorrect {
namespace {

bool floatNumbers(const Value* value) {
  const DataType type = value->type().elemType;
  return type == DataType::Undefined || isFloatingPoint(type);
}

}  // namespace

std::vector<double> outputNoise(const Model& reference, std::span<const Model* const> candidates,
                                std::span<const analysis::Sample> samples) {
  const size_t outputs = reference.graph().outputs().size();
  for (const Model* candidate : candidates) {
    if (candidate->graph().outputs().size() != outputs) return {};
  }
  // What each output position compares: the logits where every model has them, else the output
  // itself; nothing where the reference's numbers are not float.
  std::vector<bool> atLogits(outputs, true), compared(outputs, true);
  for (size_t o = 0; o < outputs; ++o) {
    compared[o] = floatNumbers(reference.graph().outputs()[o]);
    atLogits[o] = quant::preActivationOf(*reference.graph().outputs()[o]) != nullptr;
    for (const Model* candidate : candidates) {
      atLogits[o] = atLogits[o] && quant::preActivationOf(*candidate->graph().outputs()[o]);
    }
  }
  auto view = [&](const Model& model) {
    std::unique_ptr<Model> copy = model.clone();
    Graph& graph = copy->graph();
    for (size_t o = outputs; o-- > 0;) {
      if (!compared[o]) {
        graph.removeOutput(o);
      } else if (atLogits[o]) {
        graph.setOutput(o, quant::preActivationOf(*graph.outputs()[o]));
      }
    }
    return copy;
  };
  // Compared as flat lists: an opset conversion between the two may have put the logits of a
  // Softmax into a 2-D view.
  const analysis::OutputSets expected = analysis::runOutputs(view(reference)->graph(), samples);
  std::vector<double> noise;
  for (const Model* candidate : candidates) {
    const analysis::OutputSets actual = analysis::runOutputs(view(*candidate)->graph(), samples);
    std::vector<analysis::ErrorAccumulator> accumulators(expected.empty() ? 0 : expected[0].size());
    for (size_t s = 0; s < actual.size(); ++s) {
      for (size_t o = 0; o < accumulators.size(); ++o) {
        const std::vector<double> e = analysis::toDoubles(expected[s][o]);
        const std::vector<double> a = analysis::toDoubles(actual[s][o]);
        if (e.size() != a.size()) return {};
        accumulators[o].add(std::span<const double>(e), std::span<const double>(a));
      }
    }
    double sum = 0;
    for (const analysis::ErrorAccumulator& m : accumulators) {
      sum += std::pow(10.0, -m.result().sqnrDb / 10.0);
    }
    noise.push_back(accumulators.empty() ? 0.0 : sum / static_cast<double>(accumulators.size()));
  }
  return noise;
}

}  // namespace qopt::biascorrect
