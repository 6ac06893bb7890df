// smooth: SmoothQuant (Xiao et al. 2022, "SmoothQuant: Accurate and Efficient Post-Training
// Quantization for Large Language Models"), exact in float.
//
// Activations of trained transformers have a few outlier channels that dominate a per-tensor
// int8 range. For every MatMul or Gemm (and 1x1 Conv) with a constant weight, the pass divides
// input channel j by s_j and multiplies the weight rows reading it by s_j (SmoothingScales.h),
// moving quantization difficulty from the activation to the weight, where per-channel scales
// absorb it. Layers reading the same tensor share s. The division folds into the node
// computing the tensor when that is exact (ScaleFolding.h), else a Mul by 1/s is inserted.
// Needs --calib-data: s comes from each channel's largest magnitude on it. Only the main graph
// is rewritten (layers inside If/Loop/Scan bodies are left alone).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "SmoothingScales.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/rescale/ChannelStatistics.h"
#include "qopt/rescale/LinearLayer.h"
#include "qopt/rescale/ScaleFolding.h"

namespace qopt {
namespace {

using equalize::LayerKind;
using equalize::LinearLayer;

// The layers reading one activation at their data input.
struct Group {
  Value* input = nullptr;
  int64_t axis = -1;
  std::vector<LinearLayer*> layers;
};

// Why `node` cannot be smoothed, or "" when it can (its weight is then read by the caller).
std::string layerRefusal(const Node& node, LayerKind kind) {
  if (kind == LayerKind::ConvTranspose) return "ConvTranspose is not smoothed";
  if (kind == LayerKind::Gemm && node.attrInt("transA", 0) != 0) {
    return "it transposes its input (transA=1)";
  }
  if (kind == LayerKind::Conv && node.attrInt("group", 1) != 1)
    return "it is a grouped convolution";
  return "";
}

// A Conv's weight, once read, must be 1x1: then every output position reads one input
// position, and scaling input channels commutes with the convolution.
bool oneByOne(const LinearLayer& layer) {
  if (layer.kind() != LayerKind::Conv) return true;
  const std::vector<int64_t>& dims = layer.weightDims();
  return std::all_of(dims.begin() + 2, dims.end(), [](int64_t d) { return d == 1; });
}

smooth::WeightMatrix weightMatrix(const LinearLayer& layer) {
  smooth::WeightMatrix m;
  m.rows = static_cast<size_t>(layer.inputChannels());
  m.cols = static_cast<size_t>(layer.outputChannels());
  m.values.assign(m.rows * m.cols, 0.0);
  std::span<const double> w = layer.weight();
  for (uint64_t i = 0; i < w.size(); ++i) {
    m.values[static_cast<size_t>(layer.inputChannelOf(i)) * m.cols +
             static_cast<size_t>(layer.outputChannelOf(i))] = w[i];
  }
  return m;
}

class SmoothPass : public Pass {
 public:
  SmoothPass()
      : Pass("smooth",
             "SmoothQuant: moves activation outliers of MatMul/Gemm/1x1 Conv inputs into their "
             "weights, exactly (needs --calib-data)") {}

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    std::optional<double> fixedAlpha = parseAlpha(*alpha_);
    for (const char* name : {"layers-smoothed", "folded", "mul-inserted", "layers-skipped"}) {
      result.statistics[name] = 0;
    }
    if (context.data.calibData.empty()) {
      throw Error(ErrorKind::Usage, {}, {},
                  "smooth: needs --calib-data (the factors come from the activations' observed "
                  "ranges)");
    }
    equalize::LinearLayerCache layers;
    smooth::LayerLookup lookup = [&](Node* node, std::string& why) {
      return layers.get(node, why);
    };

    std::vector<Group> groups = findGroups(model.graph(), lookup, result);
    if (groups.empty()) return result;
    std::vector<equalize::ChannelRequest> requests;
    std::set<const Value*> requested;  // an outer value read in two graphs forms two groups
    for (const Group& g : groups) {
      if (!requested.insert(g.input).second) continue;
      requests.push_back(
          {g.input, g.axis, static_cast<size_t>(std::max<int64_t>(0, *rowsPerSample_))});
    }
    std::map<const Value*, equalize::ChannelStatistics> stats = equalize::collectChannelStatistics(
        model, requests, context, static_cast<size_t>(std::max<int64_t>(0, *samples_)), name());

    for (Group& group : groups) {
      smoothGroup(group, stats[group.input], fixedAlpha, lookup, context, result);
    }
    for (const auto& layer : layers.layers()) layer->writeBack();
    result.changed = result.statistics.get("layers-smoothed") > 0;
    return result;
  }

 private:
  static std::optional<double> parseAlpha(const std::string& text) {
    if (text == "auto") return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !(value >= 0 && value <= 1)) {
      throw Error(
          ErrorKind::Usage, {}, {},
          fmt::format("smooth: alpha must be 'auto' or a number in [0, 1], not '{}'", text));
    }
    return value;
  }

  // Layers in If/Loop/Scan bodies too. A group is the readers of one tensor in one graph: the
  // division of a value read in a body and outside it goes where those readers are (a Mul in
  // their graph, or folded into the producer when they are its only readers).
  static std::vector<Group> findGroups(Graph& graph, const smooth::LayerLookup& lookup,
                                       PassResult& result) {
    std::vector<Group> groups;
    std::map<std::pair<Value*, const Graph*>, size_t> index;
    for (Node* node : graph.allNodes()) {
      std::optional<LayerKind> kind = equalize::layerKindOf(*node);
      if (!kind || node->input(0) == nullptr) continue;
      std::string why = layerRefusal(*node, *kind);
      LinearLayer* layer = nullptr;
      if (why.empty()) layer = lookup(node, why);
      if (layer && !oneByOne(*layer)) {
        layer = nullptr;
        why = "its kernel is not 1x1";
      }
      int64_t axis = *kind == LayerKind::Conv ? 1 : -1;
      Value* x = node->input(0);
      if (layer) {
        auto [it, added] = index.try_emplace({x, node->graph()}, groups.size());
        if (added) groups.push_back({x, axis, {}});
        Group& group = groups[it->second];
        if (group.axis != axis) {
          why = fmt::format("'{}' is also read by layers with channels on another axis", x->name());
        } else if (layer->inputChannels() != (group.layers.empty()
                                                  ? layer->inputChannels()
                                                  : group.layers[0]->inputChannels())) {
          why = fmt::format("'{}' is also read by layers with another channel count", x->name());
        } else {
          group.layers.push_back(layer);
          continue;
        }
      }
      result.statistics.add("layers-skipped");
      result.missed(node->describe(), "not smoothed: " + why);
    }
    std::erase_if(groups, [](const Group& g) { return g.layers.empty(); });
    return groups;
  }

  void smoothGroup(Group& group, const equalize::ChannelStatistics& stats,
                   std::optional<double> fixedAlpha, const smooth::LayerLookup& lookup,
                   PassContext& context, PassResult& result) {
    const int64_t channels = group.layers[0]->inputChannels();
    std::string subject = fmt::format("tensor '{}'", group.input->name());
    if (stats.channels == 0) {
      result.statistics.add("layers-skipped", static_cast<int64_t>(group.layers.size()));
      const Node* holder = group.layers[0]->node().graph()->parentNode();
      result.missed(subject, fmt::format("not smoothed: no calibration sample computed it (a "
                                         "branch the data never takes, inside {})",
                                         holder ? holder->describe() : "the main graph"));
      return;
    }
    if (stats.channels != channels) {
      result.statistics.add("layers-skipped", static_cast<int64_t>(group.layers.size()));
      result.missed(subject, fmt::format("not smoothed: it has {} channels when the model runs, "
                                         "its readers {}",
                                         stats.channels, channels));
      return;
    }
    std::vector<smooth::WeightMatrix> weights;
    for (const LinearLayer* layer : group.layers) weights.push_back(weightMatrix(*layer));
    std::string how;
    double alpha = 0;
    if (fixedAlpha) {
      alpha = *fixedAlpha;
      how = fmt::format("alpha={}", alpha);
    } else {
      smooth::AlphaChoice choice = smooth::searchAlpha(stats.rows, stats.absMax, weights);
      alpha = choice.alpha;
      double rows = static_cast<double>(stats.rowCount());
      how = fmt::format("alpha={:.2f} chosen on {} rows (int8 output mse {:.4g} -> {:.4g})", alpha,
                        stats.rowCount(), choice.unsmoothedError / std::max(rows, 1.0),
                        choice.error / std::max(rows, 1.0));
    }
    std::vector<double> s =
        smooth::smoothingScales(stats.absMax, smooth::rowAbsMax(weights), alpha);

    std::vector<Node*> readers;
    for (LinearLayer* layer : group.layers) readers.push_back(&layer->node());
    smooth::Division division =
        smooth::divideFor(group.input, smooth::factorShape(group.input, *group.layers[0]), s,
                          readers, lookup, context);
    result.statistics.add(division.folded ? "folded" : "mul-inserted");
    for (LinearLayer* layer : group.layers) layer->scaleInputChannels(s);
    result.statistics.add("layers-smoothed", static_cast<int64_t>(group.layers.size()));
    result.applied(subject, fmt::format("smoothed {} channels for {} layers, {}; {}", channels,
                                        group.layers.size(), how, division.where));
  }

  Option<std::string> alpha_{*this, "alpha", "auto",
                             "Migration strength in [0, 1], or 'auto' to search it per layer "
                             "(0, 0.05, ..., 1) for the smallest int8 error"};
  Option<int64_t> samples_{*this, "samples", 32, "Calibration samples read (0: all)"};
  Option<int64_t> rowsPerSample_{*this, "rows-per-sample", 16,
                                 "Activation rows kept per sample for the alpha search"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("smooth", QOPT_VERSION_STRING, qopt::SmoothPass)
