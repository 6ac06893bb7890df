// mixed-precision: meets an output error budget by returning the most sensitive quantized
// layers to float (or float16), one at a time, until the model's outputs are within the budget
// of the float model (every Q/DQ removed). Layers are ranked as the sensitivity pass ranks them
// (output error with only that layer quantized). Reports what it kept in float and the final
// error.
//
// One at a time, a layer stays in float only if that lowers the output error by min-gain. Where
// several layers each ruin the output alone (early layers whose error the network amplifies),
// none does; when the budget is then missed, the layers return together in rank order until it
// is met, and each, least sensitive first, goes back to its quantization where the budget holds
// without it.
#include <algorithm>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "qopt/analysis/FallbackOption.h"
#include "qopt/analysis/PassOutcomes.h"
#include "qopt/analysis/Sensitivity.h"
#include "qopt/analysis/TextTable.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

struct Step {
  std::string name;
  std::string op;
  size_t position;
  analysis::ErrorMetrics metrics;
  bool kept = true;  // false: stays quantized, for `why`
  std::string why;   // "no gain" or "not needed"
};

/// The layers returned together and the error with them.
struct Together {
  std::vector<Step> steps;
  analysis::ErrorMetrics metrics;
};

/// What every candidate is measured on: the samples, streamed again for each, and the float
/// model's outputs on them.
struct Measuring {
  analysis::SampleWorkers& workers;
  analysis::FloatBaseline& baseline;
};

class MixedPrecisionPass : public Pass {
 public:
  MixedPrecisionPass()
      : Pass("mixed-precision",
             "Returns the most sensitive quantized layers to float until an output error "
             "budget is met") {}

  void validateOptions() const override {
    if (*samples_ < 0) failOption("samples", "must be 0 (all) or more");
    if (*maxLayers_ < 0) failOption("max-layers", "must be 0 (no limit) or more");
    if (*cosine_ > 1) failOption("cosine", "a cosine similarity is at most 1");
    if (*clearTop1_ > 1) failOption("clear-top1", "an agreement is at most 1");
    if (!(*minGain_ >= 0 && *minGain_ < 1)) failOption("min-gain", "must be in [0, 1)");
    if (*ranking_ != "local" && *ranking_ != "output") {
      failOption("ranking", fmt::format("'{}' is not local or output", *ranking_));
    }
  }

  std::vector<Requirement> requirements() const override {
    return {{ModelProperty::Quantized,
             "run insert-qdq (or static-quant) before it, or give it a Q/DQ model"}};
  }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    analysis::ErrorBudget budget;
    budget.cosine = *cosine_;
    budget.sqnrDb = *sqnr_;
    budget.top1 = *top1_;
    budget.clearTop1 = *clearTop1_;
    std::vector<size_t> positions = analysis::quantizedLayerPositions(model);
    result.statistics["quantized-layers"] = static_cast<int64_t>(positions.size());

    analysis::FloatBaseline baseline =
        analysis::measureFloatBaseline(model, context, static_cast<size_t>(*samples_), name(),
                                       "; the choice of layers is only as good as that data");
    const std::string& origin = baseline.origin();
    Measuring on{analysis::sampleWorkers(context), baseline};
    analysis::ErrorMetrics initial = errorOf(model, on);

    std::vector<Step> steps;
    analysis::ErrorMetrics finalMetrics = initial;  // with the layers kept in float so far
    bool met = budget.met(initial);
    if (!met && !positions.empty()) {
      std::vector<Step> ranking = rank(model, on);
      std::vector<size_t> inFloat;
      for (const Step& layer : ranking) {
        if (*maxLayers_ > 0 && static_cast<int64_t>(inFloat.size()) >= *maxLayers_) break;
        inFloat.push_back(layer.position);
        analysis::ErrorMetrics m = errorWith(model, inFloat, on);
        met = budget.met(m);
        // A layer whose return to float barely changes the output error stays quantized: the
        // ranking is an estimate, the output error is the measurement.
        const bool gain = met || m.mse <= finalMetrics.mse * (1.0 - *minGain_);
        steps.push_back({layer.name, layer.op, layer.position, m, gain, gain ? "" : "no gain"});
        if (!gain) {
          inFloat.pop_back();
          continue;
        }
        finalMetrics = m;
        if (met) break;
      }
      const bool someWithoutGain =
          std::any_of(steps.begin(), steps.end(), [](const Step& s) { return !s.kept; });
      if (!met && someWithoutGain) {
        if (std::optional<Together> together = returnTogether(model, ranking, on, budget)) {
          result.note("model",
                      fmt::format("no layer returned to float alone lowered the output MSE by "
                                  "min-gain={}; {} returned together in rank order met the "
                                  "budget, {} of them needed",
                                  *minGain_, together->steps.size(),
                                  std::count_if(together->steps.begin(), together->steps.end(),
                                                [](const Step& s) { return s.kept; })));
          steps = std::move(together->steps);
          finalMetrics = together->metrics;
          met = true;
        }
      }
      apply(model, steps, result);
    }
    const auto kept = static_cast<size_t>(
        std::count_if(steps.begin(), steps.end(), [](const Step& s) { return s.kept; }));
    if (!met) {
      context.diagnostics().warning(fmt::format(
          "mixed-precision: the budget ({}) is not met with {} of {} quantized layers in float",
          fmt::join(budget.failures(finalMetrics), ", "), kept, positions.size()));
    }
    result.statistics["layers-in-float"] = static_cast<int64_t>(kept);
    result.statistics["layers-tried"] = static_cast<int64_t>(steps.size());
    result.statistics["budget-met"] = met ? 1 : 0;
    result.changed = kept > 0;

    context.results()["mixed-precision"] =
        publish(budget, origin, baseline.samples, initial, finalMetrics, steps, met);
    analysis::MixedPrecisionOutcome outcome;
    outcome.budgetMet = met;
    for (const Step& step : steps) {
      if (step.kept) outcome.keptInFloat.push_back(step.name);
    }
    analysis::publishOutcome(context, std::move(outcome));
    context.diagnostics().report(table(budget, initial, steps, met));
    return result;
  }

 private:
  // The worst output error of `candidate` against the float model.
  static analysis::ErrorMetrics errorOf(const Model& candidate, Measuring& on) {
    return analysis::worstOf(analysis::outputErrors(on.workers, candidate.graph(),
                                                    on.baseline.source, on.baseline.reference));
  }

  // The worst output error with the layers at `inFloat` (graph positions) returned to float.
  analysis::ErrorMetrics errorWith(const Model& model, const std::vector<size_t>& inFloat,
                                   Measuring& on) const {
    return errorOf(*analysis::withLayersInFloat(model, inFloat, *fallback_), on);
  }

  // Layers in rank order return to float together until the budget is met; then each, least
  // sensitive first, is quantized again where the budget holds without it. Nothing when even
  // all of them (or max-layers) miss the budget.
  std::optional<Together> returnTogether(const Model& model, const std::vector<Step>& ranking,
                                         Measuring& on, const analysis::ErrorBudget& budget) const {
    Together together;
    std::vector<size_t> inFloat;
    bool met = false;
    for (const Step& layer : ranking) {
      if (*maxLayers_ > 0 && static_cast<int64_t>(inFloat.size()) >= *maxLayers_) break;
      inFloat.push_back(layer.position);
      analysis::ErrorMetrics m = errorWith(model, inFloat, on);
      together.steps.push_back({layer.name, layer.op, layer.position, m, true, ""});
      together.metrics = m;
      if (budget.met(m)) {
        met = true;
        break;
      }
    }
    if (!met) return std::nullopt;
    for (size_t i = together.steps.size(); i-- > 0;) {
      std::vector<size_t> without;
      for (size_t j = 0; j < together.steps.size(); ++j) {
        if (j != i && together.steps[j].kept) without.push_back(together.steps[j].position);
      }
      if (without.empty()) break;
      analysis::ErrorMetrics m = errorWith(model, without, on);
      if (!budget.met(m)) continue;
      together.steps[i].kept = false;
      together.steps[i].why = "not needed";
      together.metrics = m;
    }
    return together;
  }

  // The order in which layers return to float (the metrics are the ranking's own).
  std::vector<Step> rank(const Model& model, Measuring& on) const {
    std::vector<Step> order;
    if (*ranking_ == "local") {
      for (analysis::LocalSensitivity& layer :
           analysis::measureLocalSensitivity(on.workers, model, on.baseline.source)) {
        order.push_back({layer.name, layer.op, layer.position, layer.error, true, ""});
      }
      return order;
    }
    analysis::SensitivityResult measured = analysis::measureSensitivity(
        on.workers, model, on.baseline.source, on.baseline.reference, false, *fallback_);
    for (analysis::LayerSensitivity& layer : measured.layers) {
      order.push_back({layer.name, layer.op, layer.position, layer.onlyQuantized, true, ""});
    }
    return order;
  }

  void apply(Model& model, const std::vector<Step>& steps, PassResult& result) const {
    std::vector<const Step*> kept;
    std::vector<size_t> positions;
    for (const Step& step : steps) {
      if (!step.kept) continue;
      kept.push_back(&step);
      positions.push_back(step.position);
    }
    const std::vector<Node*> nodes = analysis::nodesAtPositions(model.graph(), positions);
    for (size_t i = 0; i < kept.size(); ++i) {
      analysis::BypassResult bypass = analysis::returnToFloat(*nodes[i], *fallback_);
      std::string what = fmt::format("kept in {}: {} inputs read before their QuantizeLinear",
                                     fallback_.spelling(), bypass.activationsBypassed);
      const int dequantized = bypass.constantsDequantized - bypass.constantsRestored;
      if (bypass.constantsRestored > 0) {
        what += fmt::format(", {} constants back to their values before quantization",
                            bypass.constantsRestored);
      }
      if (dequantized > 0) what += fmt::format(", {} constants dequantized", dequantized);
      for (const std::string& kept : bypass.kept) what += "; still quantized: " + kept;
      result.applied(fmt::format("node '{}' ({})", kept[i]->name, kept[i]->op), what);
    }
  }

  Json publish(const analysis::ErrorBudget& budget, const std::string& origin, size_t samples,
               const analysis::ErrorMetrics& initial, const analysis::ErrorMetrics& finalMetrics,
               const std::vector<Step>& steps, bool met) const {
    Json out = Json::object();
    out.append("budget", budget.toJson());
    out.append("met", met);
    out.append("data", origin);
    out.append("samples", static_cast<int64_t>(samples));
    out.append("fallback", fallback_.spelling());
    out.append("initial", initial.toJson());
    out.append("final", finalMetrics.toJson());
    Json kept = Json::array();
    Json stepJson = Json::array();
    for (const Step& step : steps) {
      if (step.kept) kept.push(step.name);
      Json entry = Json::object();
      entry.append("node", step.name);
      entry.append("op", step.op);
      entry.append("kept-in-float", step.kept);
      entry.append("metrics", step.metrics.toJson());
      stepJson.push(std::move(entry));
    }
    out.append("kept-in-float", std::move(kept));
    out.append("steps", std::move(stepJson));
    return out;
  }

  std::string table(const analysis::ErrorBudget& budget, const analysis::ErrorMetrics& initial,
                    const std::vector<Step>& steps, bool met) const {
    std::ostringstream out;
    const bool clear = budget.clearTop1 >= 0;
    out << fmt::format("qopt: mixed-precision: budget cosine >= {}{}{}; against the float model:\n",
                       budget.cosine,
                       budget.sqnrDb >= 0 ? fmt::format(", SQNR >= {} dB", budget.sqnrDb) : "",
                       clear ? fmt::format(", clear top-1 >= {}", budget.clearTop1) : "");
    std::vector<std::string> head = {
        ">step", "kept in " + fallback_.spelling(), "op", ">cosine", ">SQNR(dB)", ">MSE"};
    if (clear) head.push_back(">clear top-1");
    analysis::TextTable t(head);
    auto row = [&](std::string step, std::string layer, std::string op,
                   const analysis::ErrorMetrics& m) {
      std::vector<std::string> cells = {std::move(step),
                                        std::move(layer),
                                        std::move(op),
                                        analysis::formatMetric(m.cosine, 6),
                                        analysis::formatMetric(m.sqnrDb, 2),
                                        fmt::format("{:.3g}", m.mse)};
      if (clear) {
        cells.push_back(m.clearTop1Agreement
                            ? fmt::format("{:.4f} of {}", *m.clearTop1Agreement, m.clearTop1Rows)
                            : "-");
      }
      t.addRow(cells);
    };
    row("0", "(none)", "", initial);
    for (size_t i = 0; i < steps.size(); ++i) {
      row(std::to_string(i + 1),
          steps[i].kept ? steps[i].name
                        : fmt::format("{} ({}: stays quantized)", steps[i].name, steps[i].why),
          steps[i].op, steps[i].metrics);
    }
    t.print(out);
    const auto kept =
        std::count_if(steps.begin(), steps.end(), [](const Step& s) { return s.kept; });
    out << fmt::format("qopt: mixed-precision: {} layers kept in {}; budget {}\n", kept,
                       fallback_.spelling(), met ? "met" : "NOT met");
    return out.str();
  }

  Option<double> cosine_{*this, "cosine", 0.995, "Lowest output cosine similarity accepted"};
  Option<double> sqnr_{*this, "sqnr", -1.0,
                       "Lowest output SQNR in dB accepted (negative: not checked)"};
  Option<double> top1_{*this, "top1", -1.0,
                       "Lowest top-1 agreement of class scores along the last axis of [N, C] "
                       "and [N, T, C] outputs (negative: not checked)"};
  Option<double> clearTop1_{
      *this, "clear-top1", -1,
      "Lowest top-1 agreement over the decisions the float model takes clearly (classes of [N, "
      "C] or per position of [N, T, C] outputs whose top two probabilities are 0.1 or more "
      "apart; negative: not checked)"};
  Option<int64_t> maxLayers_{*this, "max-layers", 0,
                             "Keep at most this many layers in float (0: no limit)"};
  Option<int64_t> samples_{*this, "samples", 8, "Samples to measure on (0: all of the data)"};
  analysis::FallbackOption fallback_{*this};
  Option<double> minGain_{*this, "min-gain", 0.05,
                          "A layer stays in float only if that lowers the output MSE by at "
                          "least this fraction (0: keep every layer tried)"};
  Option<std::string> ranking_{
      *this, "ranking", "local",
      "Order of return to float: local (each layer's own error against a float twin, all "
      "layers in one run per sample) or output (the output error with only that layer "
      "quantized, one run per layer, as the sensitivity pass ranks)"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("mixed-precision", QOPT_VERSION_STRING, qopt::MixedPrecisionPass)
