#include "DepthwiseInputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace qopt::equalize {

std::vector<DepthwiseGroup> findDepthwiseGroups(Graph& graph, LinearLayerCache& layers,
                                                PassResult& result) {
  std::vector<DepthwiseGroup> groups;
  std::map<Value*, size_t> index;
  for (Node* node : graph.allNodes()) {  // bodies included
    if (layerKindOf(*node) != LayerKind::Conv || node->input(0) == nullptr) continue;
    int64_t group = node->attrInt("group", 1);
    if (group <= 1) continue;
    std::string why;
    LinearLayer* layer = layers.get(node, why);
    if (layer == nullptr) {
      result.missed(node->describe(), "depthwise input not balanced: " + why);
      continue;
    }
    if (layer->inputChannels() != group) continue;  // grouped, not depthwise
    if (layer->weightType() != DataType::Float && layer->weightType() != DataType::Double) {
      // Narrow channels' weights would shrink by up to max-factor and round again in 16 bits.
      result.missed(node->describe(),
                    fmt::format("depthwise input not balanced: its weights are {}",
                                dataTypeName(layer->weightType())));
      continue;
    }
    auto [it, added] = index.try_emplace(node->input(0), groups.size());
    if (added) groups.push_back({node->input(0), {}});
    groups[it->second].layers.push_back(layer);
  }
  return groups;
}

std::vector<double> balancingScales(std::span<const double> absMax, double maxFactor) {
  double widest = absMax.empty() ? 0.0 : *std::max_element(absMax.begin(), absMax.end());
  std::vector<double> s(absMax.size(), 1.0);
  if (!(widest > 0)) return s;
  for (size_t c = 0; c < s.size(); ++c) {
    if (absMax[c] > 0) s[c] = std::max(absMax[c] / widest, 1.0 / maxFactor);
  }
  return s;
}

}  // namespace qopt::equalize
