// equalize: cross-layer equalization with high-bias absorption (Nagel et al. 2019, "Data-Free
// Quantization Through Weight Equalization and Bias Correction"), exact in float.
//
// For each pair of linear layers joined directly or through a Relu (LayerPairs.h), output
// channel i of the first layer is divided by s_i = sqrt(r1_i r2_i) / r2_i and input channel i of
// the second multiplied by it, so both channels end with the range sqrt(r1_i r2_i): per-tensor
// weight quantization then no longer wastes its levels on one channel's range. Chains are swept
// until the factors settle (at most max-sweeps). The weights are rescaled in double and rounded
// once to their type. With --calib-data, high-bias absorption (BiasAbsorption.h) then moves the
// part of each Relu pair's pre-activation that stays positive into the next layer's bias,
// narrowing the activation range that quantization must cover. Then, with --calib-data, the
// inputs of depthwise convolutions are balanced (DepthwiseInputs.h): every channel of the
// activation a depthwise convolution reads is scaled to the widest channel's range, the weights
// taking the inverse, which per-channel weight quantization absorbs at no cost. Only the main
// graph is rewritten.
//
// The factors balance weight ranges, which is what per-tensor weight quantization needs. With
// per-channel weights (TensorRT's) the first layer's rows gain nothing, the second layer's rows
// still do (their input channels are balanced), and the activation between them changes its
// per-channel ranges, for better or worse: measure the quantized model before adopting it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "BiasAbsorption.h"
#include "DepthwiseInputs.h"
#include "LayerPairs.h"
#include "qopt/analysis/ChannelAffine.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/rescale/ChannelStatistics.h"
#include "qopt/rescale/ScaleFolding.h"

namespace qopt {
namespace {

using equalize::LayerPair;

// Factors within this of 1 end the sweeps: rescaling further changes weights by less than
// float32 resolves.
constexpr double kSweepTolerance = 1e-7;

class EqualizePass : public Pass {
 public:
  EqualizePass()
      : Pass("equalize",
             "Cross-layer equalization of Conv/Gemm/MatMul pairs; with --calib-data, high-bias "
             "absorption and balanced depthwise convolution inputs") {}

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    for (const char* name : {"pairs-found", "pairs-equalized", "pairs-skipped"}) {
      result.statistics[name] = 0;
    }
    if (*maxSweeps_ < 1) {
      throw Error(ErrorKind::Usage, {}, {},
                  fmt::format("equalize: max-sweeps must be at least 1, not {}", *maxSweeps_));
    }
    if (!(*maxFactor_ >= 1)) {
      throw Error(ErrorKind::Usage, {}, {},
                  fmt::format("equalize: max-factor must be at least 1, not {}", *maxFactor_));
    }
    equalize::LayerPairs found = equalize::findLayerPairs(model.graph(), result);
    if (!*crossLayer_) found.pairs.clear();
    result.statistics.add("pairs-found", static_cast<int64_t>(found.pairs.size()));
    if (!found.pairs.empty()) equalizeCrossLayer(model, found, context, result);
    if (*depthwiseInputs_) balanceDepthwiseInputs(model, found.layers, context, result);
    return result;
  }

 private:
  // What a change of the first layer's output channels reaches: its output and the activation's.
  static std::vector<const Value*> affectedByFirst(const LayerPair& pair) {
    std::vector<const Value*> values{pair.preActivation};
    if (pair.activation != nullptr) values.push_back(pair.activation->output(0));
    return values;
  }

  static std::string subjectOf(const LayerPair& pair) {
    return fmt::format("{} -> {}", pair.first->node().describe(), pair.second->node().describe());
  }

  void equalizeCrossLayer(Model& model, equalize::LayerPairs& found, PassContext& context,
                          PassResult& result) {
    equalize::EqualizeOutcome outcome =
        equalize::equalizePairs(found.pairs, static_cast<int>(*maxSweeps_), kSweepTolerance);
    // The first layer's output channels are scaled (weights and bias alike), and so is the
    // activation after it (positive homogeneous).
    for (const LayerPair& pair : found.pairs) {
      for (const Value* changed : affectedByFirst(pair)) {
        analysis::recordChannelAffine(context, changed->name(), pair.first->channelAxis(),
                                      pair.outputFactor);
      }
    }
    result.statistics["sweeps"] = outcome.sweeps;
    if (!outcome.converged) {
      result.statistics.add("sweeps-capped");
      result.note("model", fmt::format("stopped after max-sweeps={} sweeps; the last still "
                                       "changed a factor by {:.2g} (|s - 1|); the pairs are "
                                       "balanced that closely, and the result stays exact",
                                       *maxSweeps_, outcome.largestLastChange));
    }
    for (const LayerPair& pair : found.pairs) {
      std::vector<double> r1 = pair.first->outputChannelAbsMax();
      auto [lo, hi] = std::minmax_element(r1.begin(), r1.end());
      result.applied(subjectOf(pair),
                     fmt::format("equalized {} channels (weight ranges now {:.3g} to {:.3g})",
                                 r1.size(), *lo, *hi));
    }
    for (const auto& layer : found.layers.layers()) layer->writeBack();
    result.statistics.add("pairs-equalized", static_cast<int64_t>(found.pairs.size()));
    result.changed = true;
    if (*absorbBias_) absorbHighBias(model, found.pairs, context, result);
  }

  void balanceDepthwiseInputs(Model& model, equalize::LinearLayerCache& layers,
                              PassContext& context, PassResult& result) {
    for (const char* counter : {"depthwise-balanced", "depthwise-folded", "depthwise-mul-inserted"})
      result.statistics[counter] = 0;
    std::vector<equalize::DepthwiseGroup> groups =
        equalize::findDepthwiseGroups(model.graph(), layers, result);
    if (groups.empty()) return;
    if (context.data.calibData.empty()) {
      result.statistics.add("depthwise-skipped-no-data", static_cast<int64_t>(groups.size()));
      result.note("model", fmt::format("the inputs of {} depthwise convolutions are not balanced: "
                                       "their channel ranges come from --calib-data",
                                       groups.size()));
      return;
    }
    std::vector<equalize::ChannelRequest> requests;
    for (const equalize::DepthwiseGroup& g : groups) requests.push_back({g.input, 1, 0});
    std::map<const Value*, equalize::ChannelStatistics> stats = equalize::collectChannelStatistics(
        model, requests, context, static_cast<size_t>(std::max<int64_t>(0, *samples_)), name());
    smooth::LayerLookup lookup = [&](Node* node, std::string& why) {
      return layers.get(node, why);
    };
    for (equalize::DepthwiseGroup& group : groups) {
      balanceGroup(group, stats[group.input], lookup, context, result);
    }
    for (const auto& layer : layers.layers()) layer->writeBack();
  }

  void balanceGroup(equalize::DepthwiseGroup& group, const equalize::ChannelStatistics& stats,
                    const smooth::LayerLookup& lookup, PassContext& context, PassResult& result) {
    const equalize::LinearLayer& first = *group.layers[0];
    std::string subject = fmt::format("tensor '{}'", group.input->name());
    if (stats.channels == 0) {
      result.missed(subject,
                    "depthwise input not balanced: the calibration data never ran it "
                    "(inside a body no sample ran)");
      return;
    }
    if (stats.channels != first.inputChannels()) {
      result.missed(subject, fmt::format("depthwise input not balanced: it has {} channels when "
                                         "the model runs, its readers {}",
                                         stats.channels, first.inputChannels()));
      return;
    }
    std::vector<double> s = equalize::balancingScales(stats.absMax, *maxFactor_);
    if (std::all_of(s.begin(), s.end(), [](double f) { return f == 1.0; })) return;

    std::vector<Node*> readers;
    for (equalize::LinearLayer* layer : group.layers) readers.push_back(&layer->node());
    smooth::Division division = smooth::divideFor(
        group.input, smooth::factorShape(group.input, first), s, readers, lookup, context);
    result.statistics.add(division.folded ? "depthwise-folded" : "depthwise-mul-inserted");
    for (equalize::LinearLayer* layer : group.layers) layer->scaleInputChannels(s);
    result.statistics.add("depthwise-balanced", static_cast<int64_t>(group.layers.size()));
    result.changed = true;
    double narrowest = *std::min_element(stats.absMax.begin(), stats.absMax.end());
    double widest = *std::max_element(stats.absMax.begin(), stats.absMax.end());
    result.applied(subject, fmt::format("balanced {} channels for {} depthwise convolutions "
                                        "(ranges {:.3g} to {:.3g}, now all {:.3g}); {}",
                                        s.size(), group.layers.size(), narrowest, widest, widest,
                                        division.where));
  }

  void absorbHighBias(Model& model, std::vector<LayerPair>& pairs, PassContext& context,
                      PassResult& result) {
    std::vector<LayerPair*> candidates;
    for (LayerPair& pair : pairs) {
      if (std::string why = equalize::absorptionRefusal(pair); !why.empty()) {
        if (pair.activation) result.missed(subjectOf(pair), "no high-bias absorption: " + why);
        continue;
      }
      candidates.push_back(&pair);
    }
    if (candidates.empty()) return;
    if (context.data.calibData.empty()) {
      result.statistics.add("absorption-skipped-no-data", static_cast<int64_t>(candidates.size()));
      result.note("model",
                  fmt::format("high-bias absorption skipped for {} Relu pairs: it needs "
                              "--calib-data (the BatchNorm statistics of the data-free form are "
                              "gone once fold-bn ran)",
                              candidates.size()));
      return;
    }
    std::vector<equalize::ChannelRequest> requests;
    for (LayerPair* pair : candidates)
      requests.push_back({pair->preActivation, pair->first->channelAxis(), 0});
    std::map<const Value*, equalize::ChannelStatistics> stats = equalize::collectChannelStatistics(
        model, requests, context, static_cast<size_t>(std::max<int64_t>(0, *samples_)), name());
    result.statistics["pairs-absorbed"] = 0;
    result.statistics["channels-absorbed"] = 0;
    for (LayerPair* pair : candidates) {
      const equalize::ChannelStatistics& s = stats[pair->preActivation];
      if (s.channels == 0) {
        result.missed(subjectOf(*pair),
                      "no high-bias absorption: the calibration data never ran "
                      "it (inside a body no sample ran)");
        continue;
      }
      if (s.channels != pair->first->outputChannels()) {
        result.missed(subjectOf(*pair), fmt::format("no high-bias absorption: its input has {} "
                                                    "channels when the model runs, not {}",
                                                    s.channels, pair->first->outputChannels()));
        continue;
      }
      std::vector<double> mean(s.min.size()), deviation(s.min.size());
      for (size_t c = 0; c < mean.size(); ++c) {
        mean[c] = s.mean(c);
        deviation[c] = s.standardDeviation(c);
      }
      uint64_t observed = s.count.empty() ? 0 : *std::min_element(s.count.begin(), s.count.end());
      if (observed < static_cast<uint64_t>(std::max<int64_t>(0, *minObservations_))) {
        result.statistics.add("absorption-skipped-few-values");
        result.missed(subjectOf(*pair),
                      fmt::format("no high-bias absorption: the calibration data gave {} values "
                                  "per channel, fewer than min-observations={}: too few to bound "
                                  "what other inputs give",
                                  observed, *minObservations_));
        continue;
      }
      std::vector<double> shift = equalize::absorbableShift(s.min, mean, deviation);
      int64_t channels = std::count_if(shift.begin(), shift.end(), [](double c) { return c > 0; });
      if (channels == 0) continue;
      equalize::absorbShift(*pair, shift);
      std::vector<double> minus(shift.size()), one(shift.size(), 1.0);
      for (size_t c = 0; c < shift.size(); ++c) minus[c] = -shift[c];
      for (const Value* changed : affectedByFirst(*pair)) {
        analysis::recordChannelAffine(context, changed->name(), pair->first->channelAxis(), one,
                                      minus);
      }
      pair->first->writeBack();
      pair->second->writeBack();
      result.statistics.add("pairs-absorbed");
      result.statistics.add("channels-absorbed", channels);
      result.applied(subjectOf(*pair),
                     fmt::format("absorbed the high bias of {} channels (largest {:.3g}); exact "
                                 "where the pre-activation stays above it, as on the calibration "
                                 "data",
                                 channels, *std::max_element(shift.begin(), shift.end())));
    }
  }

  Option<int64_t> maxSweeps_{*this, "max-sweeps", 20,
                             "Most sweeps over chains of pairs before giving up on convergence"};
  Option<bool> absorbBias_{*this, "absorb-bias", true,
                           "Move the part of Relu pairs' pre-activations that stays positive "
                           "into the next layer's bias (needs --calib-data)"};
  Option<int64_t> minObservations_{
      *this, "min-observations", 1024,
      "Fewest values per channel the calibration data must give before a channel's minimum is "
      "absorbed (a squeeze-excite layer gives one per sample)"};
  Option<int64_t> samples_{*this, "samples", 0,
                           "Calibration samples read for absorption and depthwise balancing (0: "
                           "all)"};
  Option<bool> crossLayer_{*this, "cross-layer", true,
                           "Balance the weight ranges of consecutive layers (what per-tensor "
                           "weight quantization needs)"};
  Option<bool> depthwiseInputs_{*this, "depthwise-inputs", true,
                                "Scale every channel of a depthwise convolution's input to the "
                                "widest channel's range, the weights taking the inverse (needs "
                                "--calib-data)"};
  Option<double> maxFactor_{*this, "max-factor", 1024,
                            "Most a depthwise channel's range is widened by"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("equalize", QOPT_VERSION_STRING, qopt::EqualizePass)
