// verify: runs the model as it entered the pipeline and the model as it is now on the same
// inputs with the reference interpreter and checks the error against a budget: per graph output
// and, with layers=all, per layer output (a Conv fused with what follows it is one layer) or,
// with layers=tensors, per intermediate tensor (matched through the pass manager's name map).
// A failure is a qopt::Error (Verification): the driver still writes the output and the report,
// then exits 1. The report names the first layer, in topological order, whose error exceeds the
// budget.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "LayerComparison.h"
#include "TensorPairs.h"
#include "VerifyOutcome.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/PassOutcomes.h"
#include "qopt/analysis/Precision.h"
#include "qopt/analysis/QuantizedLayers.h"
#include "qopt/analysis/SampleCache.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/quant/GraphValues.h"

namespace qopt {
namespace {

enum class LayerMode { Outputs, All, Tensors };
enum class DataChoice { Auto, Calib, Eval, Random };

constexpr int kHistogramBins = 128;

// The lowest SQNR among the compared tensors `value` is computed from, looking through tensors
// that are not compared (removed by the pipeline, integer tensors). nullopt: only exact inputs.
class UpstreamSqnr {
 public:
  UpstreamSqnr(const std::vector<verify::TensorPair>& pairs,
               const std::vector<verify::CheckedTensor>& checked) {
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (checked[i].metrics.count > 0) sqnr_[pairs[i].reference] = checked[i].metrics.sqnrDb;
    }
  }

  std::optional<double> ofInputs(const Value* value) {
    const Node* producer = value->producer();
    if (producer == nullptr) return std::nullopt;
    std::optional<double> lowest;
    for (const Value* in : producer->inputs()) {
      if (in == nullptr) continue;
      std::optional<double> s = of(in);
      if (s && (!lowest || *s < *lowest)) lowest = s;
    }
    return lowest;
  }

 private:
  std::optional<double> of(const Value* value) {
    if (auto it = sqnr_.find(value); it != sqnr_.end()) return it->second;
    if (auto it = memo_.find(value); it != memo_.end()) return it->second;
    memo_[value] = std::nullopt;  // guards against revisiting
    std::optional<double> s = ofInputs(value);
    memo_[value] = s;
    return s;
  }

  std::unordered_map<const Value*, double> sqnr_;
  std::unordered_map<const Value*, std::optional<double>> memo_;
};

class VerifyPass : public Pass {
 public:
  VerifyPass()
      : Pass("verify",
             "Checks the model against the pipeline's input model on data (error per output "
             "and per layer)") {}

  bool needsOriginalModel() const override { return true; }
  bool isCheck() const override { return true; }

  void validateOptions() const override {
    if (*samples_ < 0) failOption("samples", "must be 0 (all) or more");
    if (*cosine_ > 1) failOption("cosine", "a cosine similarity is at most 1");
    if (*layerCosine_ > 1) failOption("layer-cosine", "a cosine similarity is at most 1");
    if (*decisions_ < 0 || *decisions_ > 1) failOption("decisions", "must be in [0, 1]");
    if (*mapIou_ < 0 || *mapIou_ > 1) failOption("map-iou", "must be in [0, 1]");
    if (*relError_ < 0) failOption("rel-error", "must not be negative");
    if (*guard_ < 0) failOption("guard", "must not be negative");
    if (*weakest_ < 0) failOption("weakest", "must not be negative");
    if (*histograms_ < 0) failOption("histograms", "must not be negative");
  }

  PassResult run(Model& model, PassContext& context) override {
    std::unique_ptr<Model> loadedReference;
    const Model* original = context.originalModel();
    const bool external = !reference_->empty();
    if (external) {
      loadedReference = loadModel(*reference_);
      original = loadedReference.get();
    }
    if (original == nullptr) {
      throw Error(ErrorKind::Internal, model.sourcePath, "pass 'verify'",
                  "the pass manager kept no copy of the input model");
    }
    verify::VerifyOutcome outcome;
    outcome.budget = budget();
    outcome.verdict = verdict();
    outcome.layerBudget = {.cosine = *layerCosine_, .sqnrDb = *layerSqnr_, .maxAbs = -1};
    analysis::SampleSource samples = openSamples(model.graph(), context);
    outcome.data = samples.origin();
    analysis::SampleWorkers& workers = analysis::sampleWorkers(context);
    for (const Node* node : model.graph().allNodes()) {
      if (analysis::isWeightedOp(*node)) ++outcome.computeLayers;
    }
    outcome.quantizedLayers = analysis::findQuantizedLayers(model.graph()).size();

    verify::TensorMatch match;
    // Whole layers unless every tensor is asked for: the values inside a fused layer (a Conv
    // with its BatchNormalization, activation and the like) are compared at the layer's output.
    const bool wholeLayers = *layers_ != LayerMode::Tensors;
    // A reference model from a file shares the model's tensor names; nothing this run did to
    // the names or scales applies to it.
    const NameMap noRenames;
    const NameMap& names = external ? noRenames : context.nameMap();
    const auto affines = external ? std::map<std::string, analysis::ChannelAffine>{}
                                  : analysis::channelAffines(context);
    if (*layers_ != LayerMode::Outputs) {
      match = verify::matchTensors(original->graph(), model.graph(), names, affines);
      outcome.layersMode = *layers_ == LayerMode::All ? "all" : "tensors";
    } else {
      outcome.layersMode = "outputs";
    }
    evaluate(workers, original->graph(), model.graph(), match, samples, wholeLayers, outcome);
    if (!outcome.passed && *layers_ == LayerMode::Outputs && *localize_) {
      // Compare every layer to find where the error starts; outputs were judged already.
      match = verify::matchTensors(original->graph(), model.graph(), names, affines);
      verify::VerifyOutcome localized = outcome;
      evaluate(workers, original->graph(), model.graph(), match, samples, wholeLayers, localized);
      outcome.layers = std::move(localized.layers);
      outcome.firstDivergence = localized.firstDivergence;
      outcome.removedTensors = localized.removedTensors;
      outcome.layersMode = "outputs (localized)";
    }

    context.results()["verify"] = verify::outcomeJson(outcome, static_cast<int>(*histograms_));
    context.diagnostics().report(verify::outcomeTable(outcome));
    PassResult result = summarize(outcome);
    if (!outcome.passed) fail(model, outcome, context);
    return result;
  }

 private:
  analysis::ErrorBudget budget() const {
    return {.cosine = *cosine_, .sqnrDb = *sqnr_, .maxAbs = *maxAbs_, .top1 = *top1_};
  }

  verify::VerdictBudget verdict() const {
    return {.decisions = *decisions_,
            .mapIou = *mapIou_,
            .relativeError = *relError_,
            .guard = *guard_};
  }

  // The samples to compare on, read as the comparison goes (any number of them).
  analysis::SampleSource openSamples(const Graph& graph, PassContext& context) const {
    const size_t limit = static_cast<size_t>(*samples_);
    const size_t randomCount = limit == 0 ? 8 : limit;
    std::vector<analysis::InputSpec> specs = analysis::inputSpecs(graph, context.data);
    auto fromPath = [&](const std::string& path, const char* flag, const char* kind) {
      if (path.empty()) {
        throw Error(ErrorKind::Usage, {}, "pass 'verify'",
                    fmt::format("data={} needs {}", kind, flag));
      }
      return analysis::SampleSource(analysis::sampleCache(context, path, specs), limit,
                                    fmt::format("{}:{}", kind, path));
    };
    std::optional<analysis::SampleSource> samples;
    switch (*data_) {
      case DataChoice::Calib:
        samples = fromPath(context.data.calibData, "--calib-data", "calib");
        break;
      case DataChoice::Eval:
        samples = fromPath(context.data.evalData, "--eval-data", "eval");
        break;
      case DataChoice::Auto:
        samples = analysis::sampleSource(graph, context, true, limit, randomCount);
        break;
      case DataChoice::Random: {
        std::vector<std::string> warnings;
        samples = analysis::SampleSource(
            analysis::randomSamples(specs, randomCount, context.seed, &warnings), "random");
        for (const std::string& w : warnings) context.diagnostics().warning(w);
        break;
      }
    }
    if (samples->isRandom()) {
      context.diagnostics().warning(fmt::format(
          "verify: no --eval-data or --calib-data: comparing on {} random inputs (seed {}), "
          "which proves less than real data",
          samples->expectedCount().value_or(0), context.seed));
    }
    // Only the first sample is read here (the cache keeps it for the comparison).
    bool any = false;
    samples->forEach([&](analysis::Sample&) {
      any = true;
      return false;
    });
    if (!any) {
      throw Error(ErrorKind::Input, samples->origin(), "pass 'verify'",
                  "the data holds no samples");
    }
    return std::move(*samples);
  }

  void evaluate(analysis::SampleWorkers& workers, const Graph& original, const Graph& current,
                const verify::TensorMatch& match, analysis::SampleSource& samples, bool wholeLayers,
                verify::VerifyOutcome& outcome) const {
    // The logits of each output that a Softmax, LogSoftmax or Sigmoid computes in both models
    // are compared as outputs too: saturated probabilities stay within 1e-7 of float on
    // confident samples whatever the logits do.
    std::vector<verify::TensorPair> pairs = match.pairs;
    std::vector<size_t> logitsOutput;  // by pair after match.pairs: the output position
    for (size_t o = 0; o < std::min(original.outputs().size(), current.outputs().size()); ++o) {
      const Value* reference = logitsOf(*original.outputs()[o]);
      const Value* actual = logitsOf(*current.outputs()[o]);
      if (reference == nullptr || actual == nullptr) continue;
      verify::TensorPair pair{reference->name(), reference, actual, {}, {}, {}, true};
      if (const Node* producer = actual->producer()) {
        pair.node = analysis::layerName(*producer);
        pair.op = producer->opType();
      }
      pairs.push_back(std::move(pair));
      logitsOutput.push_back(o);
    }
    verify::ModelErrors errors = verify::compareModels(
        workers, original, current, pairs, samples, kHistogramBins, wholeLayers, verify::ruleFor);
    outcome.samples = errors.samples;
    outcome.outputs.clear();
    outcome.layers.clear();
    outcome.failures.clear();
    outcome.firstDivergence.reset();
    outcome.removedTensors = match.removed;
    for (size_t o = 0; o < errors.outputs.size(); ++o) {
      verify::CheckedTensor t;
      t.tensor = original.outputs()[o]->name();
      if (const Node* producer = current.outputs()[o]->producer()) {
        t.node = analysis::layerName(*producer);
        t.op = producer->opType();
      }
      t.metrics = errors.outputs[o].result();
      t.histogram = errors.outputs[o].histogram();
      t.rule = errors.outputRules[o];
      verify::judgeOutput(t, outcome.verdict, outcome.budget);
      if (!t.failures.empty()) {
        outcome.failures.push_back(
            fmt::format("output '{}': {}", t.tensor, fmt::join(t.failures, ", ")));
      }
      outcome.outputs.push_back(std::move(t));
    }
    // A compared pair's row, named by the layer computing it (a fused layer: by its Conv).
    auto pairRow = [&](size_t i) {
      verify::CheckedTensor t;
      t.tensor = pairs[i].tensor;
      t.node = pairs[i].node;
      t.op = pairs[i].op;
      if (const Node* head = errors.layerHeads[i]) {
        t.node = analysis::layerName(*head);
        t.op = head->opType();
      }
      t.metrics = errors.layers[i].result();
      t.histogram = errors.layers[i].histogram();
      return t;
    };
    for (size_t k = 0; k < logitsOutput.size(); ++k) {
      const size_t i = match.pairs.size() + k;
      if (errors.layers[i].empty()) continue;  // not float, or its shape changed
      verify::CheckedTensor t = pairRow(i);
      t.logitsOf = original.outputs()[logitsOutput[k]]->name();
      t.rule = errors.pairRules[i];
      verify::judgeOutput(t, outcome.verdict, outcome.budget);
      if (!t.failures.empty()) {
        outcome.failures.push_back(fmt::format("logits '{}' of output '{}': {}", t.tensor,
                                               t.logitsOf, fmt::join(t.failures, ", ")));
      }
      outcome.outputs.push_back(std::move(t));
    }
    std::vector<verify::CheckedTensor> checked;
    for (size_t i = 0; i < match.pairs.size(); ++i) checked.push_back(pairRow(i));
    UpstreamSqnr upstream(match.pairs, checked);
    for (size_t i = 0; i < match.pairs.size(); ++i) {
      // Not floating point, shapes changed, or inside a fused layer (layers=all).
      if (errors.layers[i].empty()) continue;
      checked[i].inputSqnrDb = upstream.ofInputs(match.pairs[i].reference);
      outcome.layers.push_back(std::move(checked[i]));
    }
    verify::markWeakest(outcome.layers, static_cast<size_t>(*weakest_));
    for (size_t i = 0; i < outcome.layers.size(); ++i) {
      verify::CheckedTensor& t = outcome.layers[i];
      verify::judgeLayer(t, outcome.layerBudget);
      if (t.failures.empty()) continue;
      if (!outcome.firstDivergence) outcome.firstDivergence = i;
      outcome.failures.push_back(fmt::format("tensor '{}' (node '{}'): {}", t.tensor, t.node,
                                             fmt::join(t.failures, ", ")));
    }
    if (!outcome.firstDivergence && !outcome.failures.empty()) {
      outcome.firstDivergence = whereErrorEnters(outcome);
    }
    outcome.passed = outcome.failures.empty();
  }

  // The logits of an output, looking through the Cast that to-fp16 puts before a float32 output.
  static const Value* logitsOf(const Value& output) {
    const Value* value = &output;
    while (value->producer() != nullptr && value->producer()->is("Cast") &&
           value->producer()->input(0) != nullptr) {
      value = value->producer()->input(0);
    }
    return quant::preActivationOf(*value);
  }

  // Without a per-layer budget: the first layer, in topological order, whose SQNR is within
  // 3 dB of the worst failing output's (an error that large starts there); else the layer of
  // lowest SQNR.
  static std::optional<size_t> whereErrorEnters(const verify::VerifyOutcome& outcome) {
    if (outcome.layers.empty()) return std::nullopt;
    double worst = std::numeric_limits<double>::infinity();
    for (const verify::CheckedTensor& t : outcome.outputs) {
      if (!t.failures.empty()) worst = std::min(worst, t.metrics.sqnrDb);
    }
    if (std::isfinite(worst)) {
      for (size_t i = 0; i < outcome.layers.size(); ++i) {
        if (outcome.layers[i].metrics.sqnrDb <= worst + 3.0) return i;
      }
    }
    size_t lowest = 0;
    for (size_t i = 1; i < outcome.layers.size(); ++i) {
      if (outcome.layers[i].metrics.sqnrDb < outcome.layers[lowest].metrics.sqnrDb) lowest = i;
    }
    return lowest;
  }

  static PassResult summarize(const verify::VerifyOutcome& outcome) {
    PassResult result;
    result.statistics["samples"] = static_cast<int64_t>(outcome.samples);
    result.statistics["outputs-failed"] = 0;
    for (const verify::CheckedTensor& t : outcome.outputs) {
      if (!t.failures.empty()) result.statistics.add("outputs-failed");
    }
    result.statistics["layers-compared"] = static_cast<int64_t>(outcome.layers.size());
    result.statistics["layers-flagged"] = 0;
    for (const verify::CheckedTensor& t : outcome.layers) {
      if (!t.flagged) continue;
      result.statistics.add("layers-flagged");
      result.note(fmt::format("tensor '{}'", t.tensor),
                  t.failures.empty()
                      ? fmt::format("value histogram overlap {:.3f} < {}",
                                    t.metrics.histogramOverlap, analysis::kLowOverlap)
                      : fmt::format("{}", fmt::join(t.failures, ", ")));
    }
    result.statistics["tensors-removed"] = static_cast<int64_t>(outcome.removedTensors);
    return result;
  }

  [[noreturn]] static void fail(const Model& model, const verify::VerifyOutcome& outcome,
                                const PassContext& context) {
    std::string cause = fmt::format("verification failed: {}", outcome.failures.front());
    if (outcome.failures.size() > 1) {
      cause += fmt::format(" (and {} more)", outcome.failures.size() - 1);
    }
    std::string subject;
    if (outcome.firstDivergence) {
      const verify::CheckedTensor& t = outcome.layers[*outcome.firstDivergence];
      subject = fmt::format("node '{}' ({})", t.node, t.op);
      cause += "; first divergence: " + verify::describeDivergence(t);
    }
    const size_t quantized = analysis::findQuantizedLayers(model.graph()).size();
    const auto* mixed = analysis::findOutcome<analysis::MixedPrecisionOutcome>(context);
    if (quantized > 0 && mixed != nullptr) {
      // The pipeline already kept layers in float: its budget was looser than this one.
      cause += fmt::format(
          "; mixed-precision kept {} layers in float for its own budget: a stricter one (cosine, "
          "sqnr) keeps more of the {} still quantized",
          mixed->keptInFloat.size(), quantized);
    } else if (quantized > 0) {
      cause += fmt::format(
          "; mixed-precision{{fallback=fp16}} after insert-qdq keeps those of its {} quantized "
          "layers that need it in FP16 (sensitivity ranks them)",
          quantized);
    }
    throw Error(ErrorKind::Verification, model.sourcePath, subject, cause);
  }

  Option<double> decisions_{*this, "decisions", verify::VerdictBudget{}.decisions,
                            "Lowest agreement with the reference on the decisions it takes "
                            "clearly (top-1 per row or position, thresholded scores)"};
  Option<double> mapIou_{*this, "map-iou", verify::VerdictBudget{}.mapIou,
                         "Lowest IoU of a thresholded map (a Sigmoid output of rank >= 3)"};
  Option<double> relError_{*this, "rel-error", verify::VerdictBudget{}.relativeError,
                           "Largest relative error (|r - a| / |r| over all values) of an "
                           "output that decides nothing"};
  Option<double> guard_{*this, "guard", verify::VerdictBudget{}.guard,
                        "Largest relative error of an output that decides (a scale gone wrong "
                        "keeps its top-1)"};
  Option<double> cosine_{*this, "cosine", -1.0,
                         "Lowest cosine similarity of every output (-1: not checked)"};
  Option<double> sqnr_{*this, "sqnr", -1.0,
                       "Lowest SQNR in dB of every output (negative: not checked)"};
  Option<double> maxAbs_{*this, "max-abs", -1.0,
                         "Largest absolute error accepted (negative: not checked)"};
  Option<double> top1_{*this, "top1", -1.0,
                       "Lowest top-1 agreement of class scores along the last axis of [N, C] "
                       "and [N, T, C] outputs (negative: not checked)"};
  EnumOption<LayerMode> layers_{
      *this,
      "layers",
      LayerMode::Outputs,
      "Check graph outputs only, every layer's output (a Conv fused "
      "with its BatchNormalization, activation and the like is one "
      "layer, as TensorRT fuses them), or every tensor still computed",
      {{LayerMode::Outputs, "outputs"}, {LayerMode::All, "all"}, {LayerMode::Tensors, "tensors"}}};
  Option<int64_t> samples_{*this, "samples", 8, "Samples to compare (0: every sample of the data)"};
  EnumOption<DataChoice> data_{*this,
                               "data",
                               DataChoice::Auto,
                               "Inputs: auto (--eval-data, else --calib-data, else random), "
                               "calib, eval or random",
                               {{DataChoice::Auto, "auto"},
                                {DataChoice::Calib, "calib"},
                                {DataChoice::Eval, "eval"},
                                {DataChoice::Random, "random"}}};
  Option<bool> localize_{*this, "localize", true,
                         "When outputs fail, compare every layer to name the first divergence"};
  Option<int64_t> histograms_{*this, "histograms", 8,
                              "Flagged tensors whose value histograms go into the report"};
  Option<double> layerCosine_{*this, "layer-cosine", -1.0,
                              "Lowest cosine similarity of every compared layer; set, it can "
                              "fail the run (-1: layers only flag)"};
  Option<double> layerSqnr_{*this, "layer-sqnr", -1.0,
                            "Lowest SQNR in dB of every compared layer; set, it can fail the run "
                            "(negative: layers only flag)"};
  Option<int64_t> weakest_{*this, "weakest", 5,
                           "Compared layers of lowest SQNR flagged as the weakest"};
  Option<std::string> reference_{*this, "reference", "",
                                 "A float model file to compare with instead of the pipeline's "
                                 "input model (a model quantized elsewhere, matched by names)"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("verify", QOPT_VERSION_STRING, qopt::VerifyPass)
