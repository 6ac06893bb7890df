// insert-qdq: calibrates a float model and inserts QuantizeLinear / DequantizeLinear where the
// deployment target fuses them (see Placement.h): int8 symmetric activations per tensor and int8
// per-channel weights for TensorRT (and generic), uint8 asymmetric activations with int32 biases
// for ONNX Runtime's QDQ format; with precision=fp8, float8 E4M3FN activations per tensor and
// weights per channel, scale amax / 448 and zero point 0, at opset 19 (TensorRT's FP8, as NVIDIA's
// Model Optimizer writes it). Only the tensors that get Q/DQ are calibrated, in one pass over
// the data. Scales can be written as a qopt-scales JSON file and a TensorRT calibration cache.
#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "Placement.h"
#include "WeightRounding.h"
#include "qopt/analysis/Precision.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/half/Converter.h"
#include "qopt/half/ObservedMagnitudes.h"
#include "qopt/half/OpPolicy.h"
#include "qopt/ir/Error.h"
#include "qopt/opset/OpsetUpgrade.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/qdq/Calibrate.h"
#include "qopt/qdq/CalibrationOptions.h"
#include "qopt/qdq/QdqEmitter.h"
#include "qopt/qdq/QuantNumbers.h"

namespace qopt {
namespace {

using quant::CalibratorKind;

enum class WeightRounding { Auto, Nearest, Gptq };

// Remembers `original`'s values for the codes `dequantized` reads, so that a layer returned to
// float later (mixed-precision, sensitivity) reads them again rather than the codes dequantized.
void recordUnrounded(Model& model, const Value& dequantized, const Value& original) {
  const Value* codes = dequantized.producer()->input(0);
  if (TensorPtr values = fold::sharedConstantOf(&original)) {
    model.recordUnrounded(*codes->initializer(), std::move(values));
  }
}

std::vector<std::pair<CalibratorKind, std::string>> calibratorSpellings() {
  return {{CalibratorKind::Max, "max"},
          {CalibratorKind::Percentile, "percentile"},
          {CalibratorKind::Entropy, "entropy"},
          {CalibratorKind::Mse, "mse"},
          {CalibratorKind::Auto, "auto"}};
}

class InsertQdqPass : public Pass {
 public:
  InsertQdqPass()
      : Pass("insert-qdq",
             "Calibrates and inserts QuantizeLinear/DequantizeLinear where the target fuses "
             "them") {}

  std::vector<ModelProperty> provides() const override { return {ModelProperty::Quantized}; }

  void validateOptions() const override {
    calibration_.validate(*this);
    if (*minChannels_ < 0) failOption("min-channels", "must be 0 (no rule) or positive");
    if (fp8() && calibrator_.isExplicit() && *calibrator_ == CalibratorKind::Auto) {
      failOption("calibrator",
                 "auto judges each candidate range by int8 rounding; with precision=fp8 give "
                 "max, percentile, entropy or mse (max when none is given)");
    }
    if (fp8() && !calibration_.cache->empty()) {
      failOption("cache",
                 "TensorRT's calibration cache holds INT8 scales only; with precision=fp8 write "
                 "the scales with scales=FILE.json (each records its type)");
    }
    try {
      std::regex check(*excludeNodes_);
    } catch (const std::regex_error& e) {
      failOption("exclude-nodes", fmt::format("not a regular expression: {}", e.what()));
    }
  }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    for (const char* name : {"nodes-quantized", "activation-qdq-pairs", "weights-quantized",
                             "biases-quantized", "nodes-excluded", "weights-gptq"}) {
      result.statistics[name] = 0;
    }
    Target target = target_.resolve(context);
    bool ortFormat = target.kind == TargetKind::Ort;
    qdq::PlacementOptions placementOptions;
    placementOptions.target = target;
    if (!excludeNodes_->empty()) placementOptions.excludeNodes.emplace(*excludeNodes_);
    placementOptions.excludeOps.insert(excludeOps_->begin(), excludeOps_->end());
    // FP8 keeps the bias in float for every target: ONNX has no float8 bias form.
    placementOptions.quantizeBias = ortFormat && !fp8();
    placementOptions.fp8 = fp8();
    placementOptions.excludeMha = *excludeMha_;
    placementOptions.minChannels = *minChannels_;
    Graph& graph = model.graph();
    qdq::Placement plan = qdq::planPlacement(graph, placementOptions, result);
    result.statistics["nodes-excluded"] = static_cast<int64_t>(plan.excludedNodes.size());
    warnNothingQuantized(plan, context);
    if (plan.quantizedNodes.empty()) {
      result.note("model", "nothing to quantize");
      return result;
    }

    bool perAxis = false;
    for (const qdq::WeightSite& site : plan.weights) perAxis = perAxis || site.axis >= 0;
    bool halfPrecision = false;
    for (const qdq::ActivationSite& site : plan.activations) {
      halfPrecision = halfPrecision || qdq::floatTypeOf(site.value) != DataType::Float;
    }
    for (const qdq::WeightSite& site : plan.weights) {
      halfPrecision = halfPrecision || qdq::floatTypeOf(site.weight) != DataType::Float;
    }
    // Per-channel scales need opset 13, float16 scales 19: the model is converted (old ops
    // rewritten to keep their meaning), and the placement made again on the converted graph.
    // high-precision=fp16/bf16 converts the unquantized rest after insertion, with half Q/DQ
    // scales: opset 19 as for a float16 model.
    // Float8 Q/DQ types need 19 as well.
    halfPrecision = halfPrecision || *highPrecision_ != DataType::Float;
    const int64_t needed = fp8() || halfPrecision ? qdq::kHalfScaleOpset
                           : perAxis              ? qdq::kPerAxisOpset
                                                  : 0;
    const char* why = fp8()           ? "float8 Q/DQ"
                      : halfPrecision ? "half scales"
                                      : "per-channel weight scales";
    if (needed > 0 && qdq::raiseOpset(model, needed, why, result)) {
      PassResult replanned;  // its remarks repeat the ones given above
      plan = qdq::planPlacement(graph, placementOptions, replanned);
    }

    // Calibrate the unchanged model on exactly the tensors that get Q/DQ.
    std::vector<std::string> names;
    for (const qdq::ActivationSite& site : plan.activations) names.push_back(site.value->name());
    // A layer inside a body may never run on the data (an If branch no sample takes): its
    // output's statistics say whether it ran.
    for (const Node* node : plan.quantizedNodes) {
      if (node->graph() != &graph && node->numOutputs() > 0)
        names.push_back(node->output(0)->name());
    }
    const CalibratorKind calibrator = calibratorKind();
    const bool automatic = calibrator == CalibratorKind::Auto;
    qdq::CalibrationRun calibration = qdq::calibrate(
        model, names, context, static_cast<size_t>(*calibration_.samples), name(),
        static_cast<int>(*calibration_.threads), automatic ? quant::kAutoCalibrationSamples : 0);
    dropUnreached(plan, calibration, model, context, result);
    quant::CalibratorSpec spec;
    spec.kind = calibrator;
    spec.percentile = *calibration_.percentile;
    qdq::ActivationScheme scheme = fp8()       ? qdq::ActivationScheme::Float8
                                   : ortFormat ? qdq::ActivationScheme::UnsignedAsymmetric
                                               : qdq::ActivationScheme::SignedSymmetric;
    // Every weight quantized once, rounded to nearest: auto's probe judges the activation ranges
    // with these; GPTQ then rounds them again knowing the activation scales.
    qdq::PlannedWeights plannedWeights = qdq::quantizePlannedWeights(plan.weights, *precision_);
    std::vector<quant::AutoChoice> choices;
    if (automatic) {
      quant::AutoOutputCheck check;
      choices =
          qdq::chooseAutoRanges(analysis::sampleWorkers(context), model, plan.activations,
                                plan.weights, plannedWeights, calibration, spec, scheme, &check);
      if (check.run) result.note("model", quant::describeOutputCheck(check));
    }

    // Every activation's scale, once: GPTQ weighs its inputs' noise with them.
    std::vector<qdq::ActivationParams> siteParams;
    for (size_t a = 0; a < plan.activations.size(); ++a) {
      const quant::TensorStatistics& stats = statisticsOf(calibration, plan.activations[a], model);
      siteParams.push_back(automatic ? qdq::activationParamsForAmax(stats, choices[a].amax, scheme)
                                     : qdq::activationParams(stats, spec, scheme));
    }
    if (roundsByGptq() && context.data.calibData.empty() && weightRounding_.isExplicit()) {
      context.diagnostics().warning(
          fmt::format("{}: weights rounded to nearest: weight-rounding=gptq needs the "
                      "activations of --calib-data",
                      name()));
    } else if (roundsByGptq()) {
      // An integer grid's rounding error is uniform over one step: variance scale^2 / 12. FP8's
      // is relative to the value and small; GPTQ's dampening covers it.
      std::unordered_map<const Value*, double> inputNoise;
      for (size_t a = 0; a < plan.activations.size() && !fp8(); ++a) {
        const double scale = siteParams[a].scale;
        inputNoise[plan.activations[a].value] = scale * scale / 12.0;
      }
      qdq::roundPlannedWeights(plannedWeights, model, plan.weights, *precision_, inputNoise,
                               context, static_cast<size_t>(*calibration_.samples), result);
    }

    std::vector<quant::ScaleEntry> scaleEntries;
    std::unordered_map<const Value*, qdq::ActivationParams> activationParams;
    // Every graph's nodes, bodies included (positions compare within one graph).
    std::unordered_map<const Node*, size_t> order;
    size_t position = 0;
    graph.walk([&](const Node* node) { order[node] = position++; });

    for (size_t a = 0; a < plan.activations.size(); ++a) {
      const qdq::ActivationSite& site = plan.activations[a];
      const quant::TensorStatistics& stats = statisticsOf(calibration, site, model);
      const quant::AutoChoice* choice = automatic ? &choices[a] : nullptr;
      const qdq::ActivationParams& params = siteParams[a];
      std::string subject = fmt::format("tensor '{}'", site.value->name());
      if (choice != nullptr) result.note(subject, quant::describeAutoChoice(*choice));
      if (stats.nonFinite() > 0) {
        context.diagnostics().warning(
            fmt::format("insert-qdq: {} had {} NaN or infinite values during calibration (ignored)",
                        subject, stats.nonFinite()));
      }
      if (params.zeroRange) {
        result.note(subject, fmt::format("every calibrated value was 0: scale set to {} (any "
                                         "positive scale keeps 0 exact)",
                                         qdq::kZeroRangeScale));
      }
      // A value read in two graphs has a site in each, and one scale.
      if (activationParams.emplace(site.value, params).second) {
        scaleEntries.push_back(qdq::activationScaleEntry(site.value->name(), params, calibrator,
                                                         calibration.samples, choice));
      }
      insertActivation(site, params, order, result);
    }

    WeightMap weights;
    std::vector<Value*> replacedWeights;
    std::vector<Value*> weightOrder;  // first-use order, for a deterministic rewrite
    std::map<Value*, std::vector<Use>> redirected;
    std::map<Value*, std::set<Value*>> replacements;
    std::set<std::pair<const Value*, int64_t>> scaled;
    for (const qdq::WeightSite& site : plan.weights) {
      auto key = std::make_pair(static_cast<const Value*>(site.weight), site.axis);
      const WeightKey inGraph{site.weight, site.axis, site.node->graph()};
      auto it = weights.find(inGraph);
      if (it == weights.end()) {
        std::string what =
            fmt::format("weight '{}' of {}", site.weight->name(), site.node->describe());
        auto planned = plannedWeights.find(key);
        if (planned == plannedWeights.end()) {
          throw Error(ErrorKind::Input, model.sourcePath, what, "is not a constant");
        }
        // A copy: a weight read in two graphs gets a DequantizeLinear in each.
        qdq::QuantizedWeight quantized = planned->second;
        if (quantized.zeroChannels > 0) {
          result.note(what, fmt::format("{} channel(s) are all 0: scale {} for them",
                                        quantized.zeroChannels, qdq::kZeroRangeScale));
        }
        const bool firstGraph = scaled.insert(key).second;  // one scale entry per weight
        if (firstGraph)
          scaleEntries.push_back(qdq::weightScaleEntry(site.weight->name(), quantized));
        Graph& userGraph = *site.node->graph();
        Value* dequantized = qdq::insertConstantDequantize(
            userGraph, site.weight->name(), quantized.values, quantized.scales, site.axis,
            firstUser(site.weight, userGraph, order), qdq::floatTypeOf(site.weight));
        recordUnrounded(model, *dequantized, *site.weight);
        it = weights.emplace(inGraph, std::make_pair(dequantized, std::move(quantized))).first;
        if (firstGraph) result.statistics.add("weights-quantized");
        const std::string type = qdq::typeWord(*precision_);
        std::string how = site.axis >= 0 ? fmt::format("{} per channel on axis {}", type, site.axis)
                                         : fmt::format("{} per tensor", type);
        if (!it->second.second.rounding.empty()) how += "; " + it->second.second.rounding;
        result.applied(what, how);
      }
      if (redirected.count(site.weight) == 0) weightOrder.push_back(site.weight);
      redirected[site.weight].push_back({site.node, static_cast<uint32_t>(site.input)});
      replacements[site.weight].insert(it->second.first);
    }
    for (Value* weight : weightOrder) {
      const std::vector<Use>& uses = redirected.at(weight);
      Value* dequantized = *replacements.at(weight).begin();
      // When every reader moves to one dequantized value, the weight's name follows it (the
      // name map then matches the weight across the pass); otherwise each slot moves alone.
      if (replacements.at(weight).size() == 1 && uses.size() == weight->uses().size() &&
          !weight->isGraphOutput()) {
        weight->replaceAllUsesWith(dequantized);
      } else {
        for (const auto& [slot, replacement] : slotReplacements(plan, weights, weight)) {
          slot.user->setInput(slot.index, replacement);
        }
      }
      replacedWeights.push_back(weight);
    }

    for (const qdq::BiasSite& site : plan.biases) {
      const qdq::WeightSite& weightSite = plan.weights[site.weight];
      const qdq::QuantizedWeight& weight =
          weights.at({weightSite.weight, weightSite.axis, weightSite.node->graph()}).second;
      std::optional<Tensor> tensor = fold::constantOf(site.bias);
      std::string what = fmt::format("bias '{}' of {}", site.bias->name(), site.node->describe());
      qdq::QuantizedBias bias = qdq::quantizeBias(
          *tensor, activationParams.at(site.activation).scale, weight.scales, what);
      int64_t axis = bias.scales.size() > 1 ? 0 : -1;
      std::vector<float> scales = bias.scales;
      if (axis < 0) scales.resize(1);
      Value* dequantized =
          qdq::insertConstantDequantize(*site.node->graph(), site.bias->name(), bias.values, scales,
                                        axis, site.node, qdq::floatTypeOf(site.bias));
      recordUnrounded(model, *dequantized, *site.bias);
      Value* old = site.bias;
      site.node->setInput(site.input, dequantized);
      replacedWeights.push_back(old);
      result.statistics.add("biases-quantized");
      result.applied(what, "int32 with scale input scale * weight scale");
    }
    fold::eraseIfUnused(replacedWeights);

    for (const Node* node : plan.quantizedNodes) {
      result.statistics.add("nodes-quantized");
      result.applied(node->describe(), "inputs quantized");
    }
    result.changed = true;
    if (*highPrecision_ != DataType::Float) convertRestToHalf(model, context, result);
    writeFiles(scaleEntries, target, calibrator, result);
    publish(context, calibration, target, calibrator);
    return result;
  }

 private:
  bool fp8() const { return *precision_ == DataType::Float8E4M3FN; }
  bool roundsByGptq() const {
    return *weightRounding_ == WeightRounding::Gptq ||
           (*weightRounding_ == WeightRounding::Auto && fp8());
  }

  // NVIDIA's Model Optimizer calibrates FP8 with max: entropy's threshold search is built for
  // int8's uniform grid, while E4M3's relative precision is the same across its range, so
  // clipping outliers gains little. An explicit calibrator= wins.
  CalibratorKind calibratorKind() const {
    if (fp8() && !calibrator_.isExplicit()) return CalibratorKind::Max;
    return *calibrator_;
  }

  static const quant::TensorStatistics& statisticsOf(const qdq::CalibrationRun& calibration,
                                                     const qdq::ActivationSite& site,
                                                     const Model& model) {
    auto found = calibration.statistics.find(site.value->name());
    if (found == calibration.statistics.end()) {
      throw Error(ErrorKind::Internal, model.sourcePath,
                  fmt::format("tensor '{}'", site.value->name()),
                  "calibration returned no statistics for it");
    }
    return found->second;
  }

  // A run that quantizes no layer of a model that has some must not pass for a conversion: a
  // warning with the reasons, counted.
  void warnNothingQuantized(const qdq::Placement& plan, PassContext& context) const {
    if (plan.floatLayers.empty()) return;  // no compute layer: nothing was asked
    for (const Node* node : plan.quantizedNodes) {
      if (analysis::isWeightedOp(*node)) return;  // a Conv, Gemm or MatMul is quantized
    }
    std::map<std::string, size_t> reasons;
    for (const auto& [node, reason] : plan.floatLayers) ++reasons[reason];
    std::vector<std::string> parts;
    for (const auto& [reason, count] : reasons)
      parts.push_back(fmt::format("{} {}", count, reason));
    context.diagnostics().warning(fmt::format(
        "{}: nothing quantized: the model's {} compute layer(s) (Conv, Gemm, MatMul) all stay "
        "float: {} (-v names each){}",
        name(), plan.floatLayers.size(), fmt::join(parts, ", "),
        plan.quantizedNodes.empty()
            ? ""
            : fmt::format("; only the inputs of {} other node(s) (pooling, residual Add)",
                          plan.quantizedNodes.size())));
  }

  // Layers inside a body that the calibration data never ran (an If branch no sample took, a
  // Loop that never iterated) have no range for their activations: they stay float, named in a
  // warning.
  void dropUnreached(qdq::Placement& plan, const qdq::CalibrationRun& calibration,
                     const Model& model, PassContext& context, PassResult& result) const {
    std::unordered_set<const Node*> unreached;
    for (const Node* node : plan.quantizedNodes) {
      if (node->graph() == &model.graph() || node->numOutputs() == 0) continue;
      auto stats = calibration.statistics.find(node->output(0)->name());
      if (stats != calibration.statistics.end() && stats->second.count() == 0 &&
          stats->second.nonFinite() == 0) {
        unreached.insert(node);
      }
    }
    if (unreached.empty()) return;
    auto isUnreached = [&](const Node* node) { return unreached.contains(node); };
    for (qdq::ActivationSite& site : plan.activations) {
      std::erase_if(site.uses, [&](const Use& use) { return isUnreached(use.user); });
    }
    std::erase_if(plan.activations, [](const qdq::ActivationSite& s) { return s.uses.empty(); });
    std::vector<size_t> newIndex(plan.weights.size(), SIZE_MAX);
    std::vector<qdq::WeightSite> weights;
    for (size_t w = 0; w < plan.weights.size(); ++w) {
      if (isUnreached(plan.weights[w].node)) continue;
      newIndex[w] = weights.size();
      weights.push_back(plan.weights[w]);
    }
    plan.weights = std::move(weights);
    std::erase_if(plan.biases, [&](const qdq::BiasSite& b) { return isUnreached(b.node); });
    for (qdq::BiasSite& bias : plan.biases) bias.weight = newIndex[bias.weight];
    std::vector<std::string> names;
    for (const Node* node : plan.quantizedNodes) {
      if (!isUnreached(node)) continue;
      const Node* parent = node->graph()->parentNode();
      result.missed(node->describe(),
                    fmt::format("stays float: the calibration data never ran it (inside {})",
                                parent != nullptr ? parent->describe() : "a body"));
      names.push_back(node->describe());
    }
    std::erase_if(plan.quantizedNodes, isUnreached);
    result.statistics["nodes-never-run"] = static_cast<int64_t>(names.size());
    const size_t shown = std::min<size_t>(names.size(), 3);
    context.diagnostics().warning(fmt::format(
        "{}: {} layer(s) inside If/Loop/Scan bodies stay float: the calibration data never ran "
        "them (an If branch no sample took): {}{}",
        name(), names.size(), fmt::join(names.begin(), names.begin() + shown, ", "),
        names.size() > shown ? fmt::format(" and {} more", names.size() - shown) : ""));
  }

  // The first node of `graph` that reads `value`.
  static Node* firstUser(const Value* value, const Graph& graph,
                         const std::unordered_map<const Node*, size_t>& order) {
    Node* first = nullptr;
    for (const Use& use : value->uses()) {
      auto it = order.find(use.user);
      if (it == order.end() || use.user->graph() != &graph) continue;
      if (first == nullptr || it->second < order.at(first)) first = use.user;
    }
    return first;
  }

  // A weight's dequantized value per axis and per graph that reads it.
  using WeightKey = std::tuple<const Value*, int64_t, const Graph*>;
  using WeightMap = std::map<WeightKey, std::pair<Value*, qdq::QuantizedWeight>>;

  // The (slot, dequantized value) pairs of the weight sites reading `weight`.
  static std::vector<std::pair<Use, Value*>> slotReplacements(const qdq::Placement& plan,
                                                              const WeightMap& weights,
                                                              const Value* weight) {
    std::vector<std::pair<Use, Value*>> slots;
    for (const qdq::WeightSite& site : plan.weights) {
      if (site.weight != weight) continue;
      slots.push_back({Use{site.node, static_cast<uint32_t>(site.input)},
                       weights.at({site.weight, site.axis, site.node->graph()}).first});
    }
    return slots;
  }

  // The pair goes into the graph of the site's uses (a body's own pair for a value it reads from
  // an enclosing graph).
  void insertActivation(const qdq::ActivationSite& site, const qdq::ActivationParams& params,
                        const std::unordered_map<const Node*, size_t>& order,
                        PassResult& result) const {
    std::string subject = fmt::format("tensor '{}'", site.value->name());
    Graph& graph = *site.uses.front().user->graph();
    std::string how =
        params.isUnsigned
            ? fmt::format("uint8 scale {} zero point {}", params.scale, params.zeroPoint)
            : fmt::format("{} scale {} (amax {})", qdq::typeWord(params.type), params.scale,
                          params.amax);
    if (*perConsumer_) {
      for (const Use& use : site.uses) {
        Value* dequantized = qdq::insertActivationPair(graph, site.value, params, use.user);
        use.user->setInput(use.index, dequantized);
        result.statistics.add("activation-qdq-pairs");
      }
      result.applied(subject,
                     fmt::format("{}; one Q/DQ pair per consumer ({})", how, site.uses.size()));
      return;
    }
    Node* first = site.uses.front().user;
    for (const Use& use : site.uses) {
      if (order.at(use.user) < order.at(first)) first = use.user;
    }
    Value* dequantized = qdq::insertActivationPair(graph, site.value, params, first);
    for (const Use& use : site.uses) use.user->setInput(use.index, dequantized);
    result.statistics.add("activation-qdq-pairs");
    result.applied(subject,
                   fmt::format("{}; Q/DQ shared by {} consumer(s)", how, site.uses.size()));
  }

  // What to-fp16 does with its defaults (block list, range check on the calibration data, Q/DQ
  // with half scales): the layers quantized here stay INT8, the rest runs in half.
  void convertRestToHalf(Model& model, PassContext& context, PassResult& result) const {
    tofp16::ConversionOptions options;
    options.half = *highPrecision_;
    for (const std::string& op : tofp16::defaultBlockedOps()) options.blockedOps.insert(op);
    options.halfQdq = true;
    if (options.half == DataType::Float16) {
      options.observed = tofp16::observeMagnitudes(model, context, result);
    }
    tofp16::Converter(model, std::move(options), result).run();
    result.note("model", fmt::format("the unquantized rest converted to {} (high-precision)",
                                     dataTypeName(*highPrecision_)));
  }

  void writeFiles(const std::vector<quant::ScaleEntry>& entries, const Target& target,
                  CalibratorKind calibrator, PassResult& result) const {
    if (!calibration_.scales->empty()) {
      quant::writeScales(entries, *calibration_.scales);
      result.note("model", fmt::format("scales written to {}", *calibration_.scales));
    }
    if (!calibration_.cache->empty()) {
      qdq::writeTensorRtCache(entries, target, calibrator, *calibration_.cache);
      result.note("model",
                  fmt::format("TensorRT calibration cache written to {}", *calibration_.cache));
    }
  }

  void publish(PassContext& context, const qdq::CalibrationRun& calibration, const Target& target,
               CalibratorKind calibrator) const {
    Json& out = context.results()["insert-qdq"];
    out = Json::object();
    out["target"] = target.str();
    out["precision"] = qdq::typeWord(*precision_);
    out["calibrator"] = std::string(quant::calibratorName(calibrator));
    out["data"] = calibration.origin;
    out["samples"] = static_cast<uint64_t>(calibration.samples);
  }

  EnumOption<CalibratorKind> calibrator_{
      *this, "calibrator", CalibratorKind::Auto,
      "Activation calibrator (weights always use their max per channel); auto: per tensor, the "
      "one of max, percentile, entropy and mse whose consumers' outputs stay closest to float; "
      "precision=fp8 uses max unless one is given",
      calibratorSpellings()};
  EnumOption<DataType> precision_{
      *this,
      "precision",
      DataType::Int8,
      "Quantized type: int8, or fp8 (float8 E4M3FN, scale amax/448, opset 19; TensorRT on compute "
      "capability 8.9 or newer)",
      {{DataType::Int8, "int8"}, {DataType::Float8E4M3FN, "fp8"}}};
  EnumOption<WeightRounding> weightRounding_{
      *this,
      "weight-rounding",
      WeightRounding::Auto,
      "How weights get their codes at their per-channel max scales: nearest, gptq (with "
      "--calib-data: each input row rounded in turn, its error spread over the rows left, so "
      "the layer's output on the calibration data moves least), or auto: gptq for fp8 (whose "
      "3-bit mantissa makes the weights' error count), nearest for int8 (activations dominate)",
      {{WeightRounding::Auto, "auto"},
       {WeightRounding::Gptq, "gptq"},
       {WeightRounding::Nearest, "nearest"}}};
  qdq::CalibrationOptions calibration_{*this};
  Option<std::string> excludeNodes_{
      *this, "exclude-nodes", "",
      "Regular expression: nodes whose whole name (unnamed: first output name) matches stay float"};
  ListOption<std::string> excludeOps_{*this, "exclude-ops", {}, "Op types that stay float"};
  TargetOption target_{*this};
  Option<bool> excludeMha_{*this, "exclude-mha", false,
                           "Keep the two MatMuls of each attention block float (Q x K^T and "
                           "probabilities x V); the projections are still quantized"};
  Option<int64_t> minChannels_{
      *this, "min-channels", qdq::kDefaultMinChannels,
      "TensorRT: Conv with fewer input or output channels, Gemm/MatMul with K or N below this, "
      "stay float (TensorRT gains nothing there); 0 quantizes them"};
  Option<bool> perConsumer_{*this, "per-consumer", false,
                            "One Q/DQ pair per consumer instead of one per tensor"};
  EnumOption<DataType> highPrecision_{
      *this,
      "high-precision",
      DataType::Float,
      "Precision of what is not quantized: fp32, or fp16/bf16 as to-fp16 converts it (Q/DQ with "
      "half scales, so the quantized layers keep their fusion in a strongly typed network)",
      {{DataType::Float, "fp32"}, {DataType::Float16, "fp16"}, {DataType::BFloat16, "bf16"}}};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("insert-qdq", QOPT_VERSION_STRING, qopt::InsertQdqPass)
