// mixed-precision: meets an output error budget by returning the most sensitive quantized
// layers to float (or float16), one at a time, until the model's outputs are within the budget
// of the float model (every Q/DQ removed). Layers are ranked as the sensitivity pass ranks them
// (output error with only that layer quantized). Reports what it kept in float and the final
// error.
#include <sstream>

#include <fmt/format.h>

#include "qopt/analysis/FallbackOption.h"
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
  }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    analysis::ErrorBudget budget;
    budget.cosine = *cosine_;
    budget.sqnrDb = *sqnr_;
    budget.top1 = *top1_;
    std::vector<size_t> positions = analysis::quantizedLayerPositions(model);
    result.statistics["quantized-layers"] = static_cast<int64_t>(positions.size());

    analysis::FloatBaseline baseline =
        analysis::measureFloatBaseline(model, context, static_cast<size_t>(*samples_));
    if (baseline.randomInputs()) {
      context.diagnostics().warning(fmt::format(
          "mixed-precision: no --eval-data or --calib-data: measuring on {} random inputs "
          "(seed {}); the choice of layers is only as good as that data",
          baseline.samples.size(), context.seed));
    }
    const std::vector<analysis::Sample>& samples = baseline.samples;
    const analysis::OutputSets& reference = baseline.reference;
    const std::string& origin = baseline.origin;
    analysis::ErrorMetrics initial =
        analysis::worstOf(analysis::outputErrors(model.graph(), samples, reference));

    std::vector<Step> steps;
    bool met = budget.met(initial);
    if (!met && !positions.empty()) {
      analysis::SensitivityResult ranking =
          analysis::measureSensitivity(model, samples, reference, false, *fallback_);
      std::vector<size_t> inFloat;
      for (const analysis::LayerSensitivity& layer : ranking.layers) {
        if (*maxLayers_ > 0 && static_cast<int64_t>(inFloat.size()) >= *maxLayers_) break;
        inFloat.push_back(layer.position);
        std::unique_ptr<Model> candidate = analysis::withLayersInFloat(model, inFloat, *fallback_);
        analysis::ErrorMetrics m =
            analysis::worstOf(analysis::outputErrors(candidate->graph(), samples, reference));
        steps.push_back({layer.name, layer.op, layer.position, m});
        if (budget.met(m)) {
          met = true;
          break;
        }
      }
      apply(model, steps, result);
    }
    const analysis::ErrorMetrics& finalMetrics = steps.empty() ? initial : steps.back().metrics;
    if (!met) {
      context.diagnostics().warning(fmt::format(
          "mixed-precision: the budget ({}) is not met with {} of {} quantized layers in float",
          fmt::join(budget.failures(finalMetrics), ", "), steps.size(), positions.size()));
    }
    result.statistics["layers-in-float"] = static_cast<int64_t>(steps.size());
    result.statistics["budget-met"] = met ? 1 : 0;
    result.changed = !steps.empty();

    context.results()["mixed-precision"] =
        publish(budget, origin, samples.size(), initial, finalMetrics, steps, met);
    context.diagnostics().report(table(budget, initial, steps, met));
    return result;
  }

 private:
  void apply(Model& model, const std::vector<Step>& steps, PassResult& result) const {
    std::vector<Node*> nodes;
    for (const Step& step : steps)
      nodes.push_back(analysis::nodeAtPosition(model.graph(), step.position));
    for (size_t i = 0; i < steps.size(); ++i) {
      analysis::BypassResult bypass = analysis::returnToFloat(*nodes[i], *fallback_);
      std::string what = fmt::format(
          "kept in {}: {} inputs read before their QuantizeLinear, {} constants dequantized",
          fallback_.spelling(), bypass.activationsBypassed, bypass.constantsDequantized);
      for (const std::string& kept : bypass.kept) what += "; still quantized: " + kept;
      result.applied(fmt::format("node '{}' ({})", steps[i].name, steps[i].op), what);
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
      kept.push(step.name);
      Json entry = Json::object();
      entry.append("node", step.name);
      entry.append("op", step.op);
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
    out << fmt::format("qopt: mixed-precision: budget cosine >= {}{}; against the float model:\n",
                       budget.cosine,
                       budget.sqnrDb >= 0 ? fmt::format(", SQNR >= {} dB", budget.sqnrDb) : "");
    analysis::TextTable t(
        {">step", "kept in " + fallback_.spelling(), "op", ">cosine", ">SQNR(dB)", ">MSE"});
    t.addRow({"0", "(none)", "", analysis::formatMetric(initial.cosine, 6),
              analysis::formatMetric(initial.sqnrDb, 2), fmt::format("{:.3g}", initial.mse)});
    for (size_t i = 0; i < steps.size(); ++i) {
      const analysis::ErrorMetrics& m = steps[i].metrics;
      t.addRow({std::to_string(i + 1), steps[i].name, steps[i].op,
                analysis::formatMetric(m.cosine, 6), analysis::formatMetric(m.sqnrDb, 2),
                fmt::format("{:.3g}", m.mse)});
    }
    t.print(out);
    out << fmt::format("qopt: mixed-precision: {} layers kept in {}; budget {}\n", steps.size(),
                       fallback_.spelling(), met ? "met" : "NOT met");
    return out.str();
  }

  Option<double> cosine_{*this, "cosine", 0.995, "Lowest output cosine similarity accepted"};
  Option<double> sqnr_{*this, "sqnr", -1.0,
                       "Lowest output SQNR in dB accepted (negative: not checked)"};
  Option<double> top1_{*this, "top1", -1.0,
                       "Lowest top-1 agreement of classifier outputs (negative: not checked)"};
  Option<int64_t> maxLayers_{*this, "max-layers", 0,
                             "Keep at most this many layers in float (0: no limit)"};
  Option<int64_t> samples_{*this, "samples", 8, "Samples to measure on (0: all of the data)"};
  analysis::FallbackOption fallback_{*this};
};

}  // namespace
}  // namespace qopt

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "mixed-precision", QOPT_VERSION_STRING,
          [](qopt::PassRegistry& registry) { registry.add<qopt::MixedPrecisionPass>(); }};
}
