// sensitivity: for each quantized layer (a weighted op reading through DequantizeLinear), the
// output error when only that layer is quantized and when only it is left in float, against the
// float model (every Q/DQ removed); ranked most sensitive first. Read-only: publishes
// results["sensitivity"] and prints the table.
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

std::string metricsText(const analysis::ErrorMetrics& m) {
  return fmt::format("{} / {}", analysis::formatMetric(m.cosine, 6),
                     analysis::formatMetric(m.sqnrDb, 2));
}

class SensitivityPass : public Pass {
 public:
  SensitivityPass()
      : Pass("sensitivity",
             "Ranks quantized layers by the output error each one causes (read-only)") {}

  void validateOptions() const override {
    if (*samples_ < 0) failOption("samples", "must be 0 (all) or more");
  }

  std::vector<Requirement> requirements() const override {
    return {{ModelProperty::Quantized,
             "run insert-qdq (or static-quant) before it, or give it a Q/DQ model"}};
  }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    std::vector<size_t> positions = analysis::quantizedLayerPositions(model);
    result.statistics["quantized-layers"] = static_cast<int64_t>(positions.size());
    analysis::FloatBaseline baseline =
        analysis::measureFloatBaseline(model, context, static_cast<size_t>(*samples_), name(),
                                       ", which ranks layers less reliably than real data");
    const size_t samples = baseline.samples;
    const std::string& origin = baseline.origin();
    analysis::SensitivityResult measured =
        analysis::measureSensitivity(analysis::sampleWorkers(context), model, baseline.source,
                                     baseline.reference, *onlyFloat_, *fallback_);

    Json layers = Json::array();
    int64_t rank = 0;
    for (const analysis::LayerSensitivity& layer : measured.layers) {
      Json entry = Json::object();
      entry.append("rank", ++rank);
      entry.append("node", layer.name);
      entry.append("op", layer.op);
      entry.append("only-quantized", layer.onlyQuantized.toJson());
      entry.append("only-float", layer.onlyFloat ? layer.onlyFloat->toJson() : Json());
      layers.push(std::move(entry));
      result.note(fmt::format("node '{}' ({})", layer.name, layer.op),
                  fmt::format("rank {}: only this layer quantized gives cosine {}, SQNR {} dB",
                              rank, analysis::formatMetric(layer.onlyQuantized.cosine, 6),
                              analysis::formatMetric(layer.onlyQuantized.sqnrDb, 2)));
    }
    Json published = Json::object();
    published.append("data", origin);
    published.append("samples", static_cast<int64_t>(samples));
    published.append("fallback", fallback_.spelling());
    published.append("all-quantized", measured.allQuantized.toJson());
    published.append("layers", std::move(layers));
    context.results()["sensitivity"] = std::move(published);
    context.diagnostics().report(table(measured, samples, origin));
    result.statistics["samples"] = static_cast<int64_t>(samples);
    return result;
  }

 private:
  std::string table(const analysis::SensitivityResult& measured, size_t samples,
                    const std::string& origin) const {
    std::ostringstream out;
    out << fmt::format(
        "qopt: sensitivity: {} quantized layers, {} samples ({}); all quantized: cosine {}, "
        "SQNR {} dB\n",
        measured.layers.size(), samples, origin,
        analysis::formatMetric(measured.allQuantized.cosine, 6),
        analysis::formatMetric(measured.allQuantized.sqnrDb, 2));
    analysis::TextTable table({">rank", "layer", "op", ">only quantized: cosine / SQNR(dB)",
                               ">only float: cosine / SQNR(dB)"});
    size_t rows = *top_ > 0 ? static_cast<size_t>(*top_) : measured.layers.size();
    for (size_t i = 0; i < measured.layers.size() && i < rows; ++i) {
      const analysis::LayerSensitivity& layer = measured.layers[i];
      table.addRow({std::to_string(i + 1), layer.name, layer.op, metricsText(layer.onlyQuantized),
                    layer.onlyFloat ? metricsText(*layer.onlyFloat) : "-"});
    }
    table.print(out);
    return out.str();
  }

  Option<int64_t> samples_{*this, "samples", 8, "Samples to measure on (0: all of the data)"};
  Option<bool> onlyFloat_{*this, "only-float", true,
                          "Also measure each layer left alone in float (doubles the runs)"};
  Option<int64_t> top_{*this, "top", 0, "Rows printed (0: every layer); the report has all"};
  analysis::FallbackOption fallback_{*this};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("sensitivity", QOPT_VERSION_STRING, qopt::SensitivityPass)
