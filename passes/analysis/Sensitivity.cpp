#include "qopt/analysis/Sensitivity.h"

#include <algorithm>

#include <fmt/format.h>

#include "qopt/ir/Error.h"

namespace qopt::analysis {

std::unique_ptr<Model> withLayersInFloat(const Model& model, std::span<const size_t> positions,
                                         FloatFallback fallback) {
  std::unique_ptr<Model> copy = model.clone();
  // Resolve every node first: returning one layer to float erases Q/DQ nodes, which moves the
  // positions of the nodes after them.
  std::vector<Node*> nodes;
  for (size_t position : positions) {
    Node* node = nodeAtPosition(copy->graph(), position);
    if (node == nullptr) {
      throw Error(ErrorKind::Internal, model.sourcePath, {},
                  fmt::format("no node at position {}", position));
    }
    nodes.push_back(node);
  }
  for (Node* node : nodes) returnToFloat(*node, fallback);
  return copy;
}

std::vector<size_t> quantizedLayerPositions(const Model& model) {
  std::vector<size_t> positions;
  for (const QuantizedLayer& layer : findQuantizedLayers(model.graph())) {
    positions.push_back(layer.position);
  }
  return positions;
}

SensitivityResult measureSensitivity(const Model& model, std::span<const Sample> samples,
                                     const OutputSets& reference, bool measureOnlyFloat,
                                     FloatFallback fallback) {
  SensitivityResult result;
  std::vector<QuantizedLayer> layers = findQuantizedLayers(model.graph());
  std::vector<size_t> all;
  for (const QuantizedLayer& layer : layers) all.push_back(layer.position);
  result.allQuantized = worstOf(outputErrors(model.graph(), samples, reference));
  for (const QuantizedLayer& layer : layers) {
    LayerSensitivity entry;
    entry.name = layer.name;
    entry.op = layer.node->opType();
    entry.position = layer.position;
    std::vector<size_t> others;
    for (size_t p : all) {
      if (p != layer.position) others.push_back(p);
    }
    std::unique_ptr<Model> onlyQuantized = withLayersInFloat(model, others, fallback);
    entry.onlyQuantized = worstOf(outputErrors(onlyQuantized->graph(), samples, reference));
    if (measureOnlyFloat) {
      size_t self[] = {layer.position};
      std::unique_ptr<Model> onlyFloat = withLayersInFloat(model, self, fallback);
      entry.onlyFloat = worstOf(outputErrors(onlyFloat->graph(), samples, reference));
    }
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
