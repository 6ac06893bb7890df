#include "qopt/analysis/Sensitivity.h"
#include "qopt/analysis/PassOutcomes.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/analysis/Precision.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {

std::unique_ptr<Model> withLayersInFloat(const Model& model, std::span<const size_t> positions,
                                         FloatFallback fallback) {
  std::unique_ptr<Model> copy = model.clone();
  // Resolve every node first: returning one layer to float erases Q/DQ nodes, which moves the
  // positions of the nodes after them.
  for (Node* node : nodesAtPositions(copy->graph(), positions)) returnToFloat(*node, fallback);
  return copy;
}

std::unique_ptr<Model> withOnlyLayersQuantized(const Model& model,
                                               std::span<const size_t> positions) {
  std::unique_ptr<Model> copy = model.clone();
  std::unordered_set<const Node*> keep;
  for (const Node* node : nodesAtPositions(copy->graph(), positions)) {
    keep.insert(node);
    // The ops a DequantizeLinear reaches the layer across stay too, or the layer would lose
    // its quantized input.
    for (const Value* in : node->inputs()) {
      if (std::optional<DequantizedInput> dq = findDequantizedInput(in)) {
        keep.insert(dq->crossed.begin(), dq->crossed.end());
      }
    }
  }
  removeQuantization(copy->graph(), keep);
  return copy;
}

std::unique_ptr<Model> floatReference(const Model& model) {
  return withOnlyLayersQuantized(model, {});
}

FloatBaseline measureFloatBaseline(const Model& model, PassContext& context, size_t sampleLimit,
                                   std::string_view passName, std::string_view randomInputsNote) {
  if (const auto* corrected = findOutcome<BiasCorrectOutcome>(context)) {
    if (corrected->biasesChanged > 0) {
      context.diagnostics().warning(fmt::format(
          "{}: bias-correct ran before it and changed {} biases: its float reference and the "
          "layers it returns to float keep those corrections, which only quantized layers "
          "need; run {} before bias-correct",
          passName, corrected->biasesChanged, passName));
    }
  }
  const size_t randomCount = sampleLimit == 0 ? 8 : sampleLimit;
  SampleSource source = sampleSource(model.graph(), context, true, sampleLimit, randomCount);
  std::unique_ptr<Model> floatModel = floatReference(model);
  SpillStore reference =
      collectOutputs(sampleWorkers(context), floatModel->graph(), source, keptBytes(context));
  const size_t samples = reference.size();
  FloatBaseline baseline{std::move(source), std::move(reference), samples};
  if (baseline.randomInputs()) {
    context.diagnostics().warning(
        fmt::format("{}: no --eval-data or --calib-data: measuring on {} random inputs (seed {}){}",
                    passName, baseline.samples, context.seed, randomInputsNote));
  }
  return baseline;
}

std::vector<size_t> quantizedLayerPositions(const Model& model) {
  std::vector<size_t> positions;
  for (const QuantizedLayer& layer : findQuantizedLayers(model.graph())) {
    positions.push_back(layer.position);
  }
  return positions;
}

SensitivityResult measureSensitivity(SampleWorkers& workers, const Model& model,
                                     SampleSource& source, const SpillStore& reference,
                                     bool measureOnlyFloat, FloatFallback fallback,
                                     const std::string& doing) {
  // Each candidate streams the samples again: only the float outputs are kept between them.
  auto errorOf = [&](const Model& candidate) {
    return worstOf(outputErrors(workers, candidate.graph(), source, reference, doing));
  };
  SensitivityResult result;
  std::vector<QuantizedLayer> layers = findQuantizedLayers(model.graph());
  result.allQuantized = errorOf(model);
  for (const QuantizedLayer& layer : layers) {
    LayerSensitivity entry;
    entry.name = layer.name;
    entry.op = layer.node->opType();
    entry.position = layer.position;
    size_t self[] = {layer.position};
    entry.onlyQuantized = errorOf(*withOnlyLayersQuantized(model, self));
    if (measureOnlyFloat) entry.onlyFloat = errorOf(*withLayersInFloat(model, self, fallback));
    result.layers.push_back(std::move(entry));
  }
  std::stable_sort(result.layers.begin(), result.layers.end(),
                   [](const LayerSensitivity& a, const LayerSensitivity& b) {
                     if (a.onlyQuantized.sqnrDb != b.onlyQuantized.sqnrDb) {
                       return a.onlyQuantized.sqnrDb < b.onlyQuantized.sqnrDb;
                     }
                     return a.onlyQuantized.cosine < b.onlyQuantized.cosine;
                   });
  return result;
}

}  // namespace qopt::analysis
