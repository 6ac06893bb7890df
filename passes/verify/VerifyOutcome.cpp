#include "VerifyOutcome.h"

#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "qopt/analysis/TextTable.h"

namespace qopt::verify {

namespace {

constexpr int kReportBins = 64;

Json histogramJson(const CheckedTensor& t) {
  analysis::PairedHistogram h =
      t.histogram.bins() % kReportBins == 0 ? t.histogram.downsampled(kReportBins) : t.histogram;
  Json out = Json::object();
  out.append("tensor", t.tensor);
  out.append("node", t.node);
  out.append("low", h.low());
  out.append("bin-width", h.binWidth());
  Json ref = Json::array();
  Json act = Json::array();
  for (double c : h.reference()) ref.push(static_cast<int64_t>(c));
  for (double c : h.actual()) act.push(static_cast<int64_t>(c));
  out.append("reference", std::move(ref));
  out.append("actual", std::move(act));
  return out;
}

Json stringsJson(const std::vector<std::string>& items) {
  Json out = Json::array();
  for (const std::string& s : items) out.push(s);
  return out;
}

std::vector<std::string> metricCells(const analysis::ErrorMetrics& m) {
  return {analysis::formatMetric(m.cosine, 6),
          analysis::formatMetric(m.sqnrDb, 2),
          fmt::format("{:.3g}", m.mse),
          fmt::format("{:.3g}", m.maxAbs),
          fmt::format("{:.3g}", m.meanAbs),
          fmt::format("{:.3g}", m.klDivergence),
          fmt::format("{:.3f}", m.histogramOverlap),
          m.top1Agreement ? fmt::format("{:.3f}", *m.top1Agreement) : "-"};
}

std::vector<std::string> metricHeaders() {
  return {">cosine", ">SQNR(dB)", ">MSE", ">max-abs", ">mean-abs", ">KL", ">overlap", ">top-1"};
}

std::string resultText(const CheckedTensor& t) {
  if (!t.failures.empty()) return "FAIL";
  return t.flagged ? "flagged" : "ok";
}

// Computed only from inputs that carry no error at all.
bool inputsExact(const CheckedTensor& t) {
  return !t.inputSqnrDb || (std::isinf(*t.inputSqnrDb) && *t.inputSqnrDb > 0);
}

}  // namespace

void judge(CheckedTensor& tensor, const analysis::ErrorBudget& budget) {
  tensor.failures = budget.failures(tensor.metrics);
  tensor.flagged =
      !tensor.failures.empty() || tensor.metrics.histogramOverlap < analysis::kLowOverlap;
}

std::string describeDivergence(const CheckedTensor& t) {
  std::string inputs = inputsExact(t)
                           ? std::string("exact")
                           : fmt::format("{} dB", analysis::formatMetric(*t.inputSqnrDb, 2));
  return fmt::format("node '{}' ({}), tensor '{}': SQNR {} dB (inputs {}): {}", t.node, t.op,
                     t.tensor, analysis::formatMetric(t.metrics.sqnrDb, 2), inputs,
                     fmt::join(t.failures, ", "));
}

Json outcomeJson(const VerifyOutcome& outcome, int maxHistograms) {
  Json out = Json::object();
  out.append("passed", outcome.passed);
  out.append("data", outcome.data);
  out.append("samples", static_cast<int64_t>(outcome.samples));
  out.append("compute-layers", static_cast<int64_t>(outcome.computeLayers));
  out.append("quantized-layers", static_cast<int64_t>(outcome.quantizedLayers));
  out.append("layers-mode", outcome.layersMode);
  out.append("budget", outcome.budget.toJson());
  out.append("failures", stringsJson(outcome.failures));
  Json outputs = Json::array();
  for (const CheckedTensor& t : outcome.outputs) {
    Json entry = Json::object();
    entry.append("name", t.tensor);
    if (!t.logitsOf.empty()) entry.append("logits-of", t.logitsOf);
    entry.append("passed", t.failures.empty());
    entry.append("failures", stringsJson(t.failures));
    entry.append("metrics", t.metrics.toJson());
    outputs.push(std::move(entry));
  }
  out.append("outputs", std::move(outputs));
  Json layers = Json::array();
  for (const CheckedTensor& t : outcome.layers) {
    Json entry = Json::object();
    entry.append("tensor", t.tensor);
    entry.append("node", t.node);
    entry.append("op", t.op);
    entry.append("passed", t.failures.empty());
    entry.append("flagged", t.flagged);
    entry.append("failures", stringsJson(t.failures));
    if (t.inputSqnrDb && std::isfinite(*t.inputSqnrDb) && std::isfinite(t.metrics.sqnrDb)) {
      entry.append("sqnr-drop-db", *t.inputSqnrDb - t.metrics.sqnrDb);
    }
    entry.append("metrics", t.metrics.toJson());
    layers.push(std::move(entry));
  }
  out.append("layers", std::move(layers));
  out.append("tensors-removed", static_cast<int64_t>(outcome.removedTensors));
  if (outcome.firstDivergence) {
    const CheckedTensor& t = outcome.layers[*outcome.firstDivergence];
    Json first = Json::object();
    first.append("tensor", t.tensor);
    first.append("node", t.node);
    first.append("op", t.op);
    first.append("sqnr-db", t.metrics.toJson()["sqnr-db"]);
    first.append("input-sqnr-db", inputsExact(t) ? Json("exact") : Json(*t.inputSqnrDb));
    first.append("failures", stringsJson(t.failures));
    out.append("first-divergence", std::move(first));
  } else {
    out.append("first-divergence", Json());
  }
  Json histograms = Json::array();
  int kept = 0;
  for (const auto* list : {&outcome.outputs, &outcome.layers}) {
    for (const CheckedTensor& t : *list) {
      if (!t.flagged || t.histogram.empty() || kept >= maxHistograms) continue;
      histograms.push(histogramJson(t));
      ++kept;
    }
  }
  out.append("histograms", std::move(histograms));
  return out;
}

std::string outcomeTable(const VerifyOutcome& outcome) {
  std::ostringstream out;
  out << fmt::format("qopt: verify: {} samples ({}), budget cosine >= {}", outcome.samples,
                     outcome.data, outcome.budget.cosine);
  if (outcome.budget.sqnrDb >= 0) out << fmt::format(", SQNR >= {} dB", outcome.budget.sqnrDb);
  if (outcome.budget.maxAbs >= 0) out << fmt::format(", max-abs <= {}", outcome.budget.maxAbs);
  if (outcome.budget.top1 >= 0) out << fmt::format(", top-1 >= {}", outcome.budget.top1);
  out << fmt::format("; {} of {} compute layers quantized{}\n", outcome.quantizedLayers,
                     outcome.computeLayers,
                     outcome.quantizedLayers == 0 && outcome.computeLayers > 0
                         ? " (nothing quantized was verified)"
                         : "");
  std::vector<std::string> headers = {"output"};
  for (std::string h : metricHeaders()) headers.push_back(h);
  headers.push_back("result");
  analysis::TextTable outputs(headers);
  for (const CheckedTensor& t : outcome.outputs) {
    std::vector<std::string> row = {
        t.logitsOf.empty() ? t.tensor : fmt::format("{} (logits of {})", t.tensor, t.logitsOf)};
    for (std::string c : metricCells(t.metrics)) row.push_back(c);
    row.push_back(resultText(t));
    outputs.addRow(std::move(row));
  }
  outputs.print(out);
  if (!outcome.layers.empty()) {
    out << fmt::format("qopt: verify: {} layers compared ({}), in topological order:\n",
                       outcome.layers.size(), outcome.layersMode);
    std::vector<std::string> layerHeaders = {">#", "node", "op", "tensor"};
    for (std::string h : metricHeaders()) layerHeaders.push_back(h);
    layerHeaders.push_back("result");
    analysis::TextTable layers(layerHeaders);
    for (size_t i = 0; i < outcome.layers.size(); ++i) {
      const CheckedTensor& t = outcome.layers[i];
      std::vector<std::string> row = {std::to_string(i), t.node, t.op, t.tensor};
      for (std::string c : metricCells(t.metrics)) row.push_back(c);
      row.push_back(resultText(t));
      layers.addRow(std::move(row));
    }
    layers.print(out);
  }
  if (outcome.firstDivergence) {
    out << "qopt: verify: first divergence: "
        << describeDivergence(outcome.layers[*outcome.firstDivergence]) << '\n';
  }
  out << (outcome.passed ? "qopt: verify: PASSED\n" : "qopt: verify: FAILED\n");
  return out.str();
}

}  // namespace qopt::verify
