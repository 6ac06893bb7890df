#include "VerifyOutcome.h"

#include <algorithm>
#include <cmath>
#include <numeric>
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

// The agreement an output's rule judges: clear decisions, or the IoU of a thresholded map.
std::string decisionCell(const CheckedTensor& t) {
  const analysis::ErrorMetrics& m = t.metrics;
  if (t.rule && t.rule->kind == OutputKind::ThresholdMap) {
    return m.mapIou ? fmt::format("IoU {:.3f}", *m.mapIou) : "-";
  }
  if (t.rule && t.rule->decides() && m.clearTop1Agreement) {
    return fmt::format("{:.3f} of {}", *m.clearTop1Agreement, m.clearTop1Rows);
  }
  return "-";
}

std::vector<std::string> metricCells(const analysis::ErrorMetrics& m) {
  return {analysis::formatMetric(m.cosine, 6),
          analysis::formatMetric(m.sqnrDb, 2),
          fmt::format("{:.3g}", m.relativeError()),
          fmt::format("{:.3g}", m.mse),
          fmt::format("{:.3g}", m.maxAbs),
          fmt::format("{:.3g}", m.meanAbs),
          fmt::format("{:.3g}", m.klDivergence),
          fmt::format("{:.3f}", m.histogramOverlap),
          m.top1Agreement ? fmt::format("{:.3f}", *m.top1Agreement) : "-"};
}

std::vector<std::string> metricHeaders() {
  return {">cosine",   ">SQNR(dB)", ">rel-err", ">MSE",  ">max-abs",
          ">mean-abs", ">KL",       ">overlap", ">top-1"};
}

std::string resultText(const CheckedTensor& t) {
  if (!t.failures.empty()) return "FAIL";
  if (t.weakest) return "weakest";
  return t.flagged ? "flagged" : "ok";
}

// Whether the budget sets any bound (cosine above -1, or a non-negative SQNR or max-abs).
bool setsBounds(const analysis::ErrorBudget& budget) {
  return budget.cosine > -1 || budget.sqnrDb >= 0 || budget.maxAbs >= 0;
}

// Computed only from inputs that carry no error at all.
bool inputsExact(const CheckedTensor& t) {
  return !t.inputSqnrDb || (std::isinf(*t.inputSqnrDb) && *t.inputSqnrDb > 0);
}

}  // namespace

void judgeOutput(CheckedTensor& tensor, const VerdictBudget& verdict,
                 const analysis::ErrorBudget& budget) {
  tensor.failures = tensor.rule ? verdictFailures(*tensor.rule, tensor.metrics, verdict)
                                : std::vector<std::string>{};
  for (std::string& f : budget.failures(tensor.metrics)) {
    if (std::find(tensor.failures.begin(), tensor.failures.end(), f) == tensor.failures.end()) {
      tensor.failures.push_back(std::move(f));
    }
  }
  // An output passes or fails; its value histogram (a few samples of a few values) says little.
  tensor.flagged = !tensor.failures.empty();
}

void judgeLayer(CheckedTensor& tensor, const analysis::ErrorBudget& layerBudget) {
  tensor.failures.clear();
  if (setsBounds(layerBudget)) tensor.failures = layerBudget.failures(tensor.metrics);
  tensor.flagged = !tensor.failures.empty() || tensor.weakest || tensor.metrics.nonFinite > 0 ||
                   tensor.metrics.histogramOverlap < analysis::kLowOverlap;
}

void markWeakest(std::vector<CheckedTensor>& layers, size_t count) {
  std::vector<size_t> order(layers.size());
  std::iota(order.begin(), order.end(), 0);
  // Lowest SQNR first; ties in topological order, so the marks do not depend on sorting.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return layers[a].metrics.sqnrDb < layers[b].metrics.sqnrDb;
  });
  for (size_t k = 0; k < std::min(count, order.size()); ++k) {
    CheckedTensor& t = layers[order[k]];
    if (std::isinf(t.metrics.sqnrDb) && t.metrics.sqnrDb > 0) break;  // exact: not weak
    t.weakest = true;
    t.flagged = true;
  }
}

std::string describeDivergence(const CheckedTensor& t) {
  std::string inputs = inputsExact(t)
                           ? std::string("exact")
                           : fmt::format("{} dB", analysis::formatMetric(*t.inputSqnrDb, 2));
  const std::string why = t.failures.empty()
                              ? std::string("its error is as large as the failing output's")
                              : fmt::format("{}", fmt::join(t.failures, ", "));
  return fmt::format("node '{}' ({}), tensor '{}': SQNR {} dB (inputs {}): {}", t.node, t.op,
                     t.tensor, analysis::formatMetric(t.metrics.sqnrDb, 2), inputs, why);
}

Json outcomeJson(const VerifyOutcome& outcome, int maxHistograms) {
  Json out = Json::object();
  out.append("passed", outcome.passed);
  out.append("data", outcome.data);
  out.append("samples", static_cast<int64_t>(outcome.samples));
  out.append("compute-layers", static_cast<int64_t>(outcome.computeLayers));
  out.append("quantized-layers", static_cast<int64_t>(outcome.quantizedLayers));
  out.append("layers-mode", outcome.layersMode);
  Json budget = outcome.budget.toJson();
  budget.append("decisions", outcome.verdict.decisions);
  budget.append("map-iou", outcome.verdict.mapIou);
  budget.append("rel-error", outcome.verdict.relativeError);
  budget.append("guard", outcome.verdict.guard);
  const analysis::ErrorBudget& lb = outcome.layerBudget;
  budget.append("layer-cosine", lb.cosine > -1 ? Json(lb.cosine) : Json());
  budget.append("layer-sqnr-db", lb.sqnrDb >= 0 ? Json(lb.sqnrDb) : Json());
  out.append("budget", std::move(budget));
  out.append("failures", stringsJson(outcome.failures));
  Json outputs = Json::array();
  for (const CheckedTensor& t : outcome.outputs) {
    Json entry = Json::object();
    entry.append("name", t.tensor);
    if (!t.logitsOf.empty()) entry.append("logits-of", t.logitsOf);
    if (t.rule) {
      entry.append("rule", t.rule->name());
      entry.append("rule-text", describeRule(*t.rule, outcome.verdict));
      if (t.rule->decisions.kind == analysis::DecisionRule::Kind::Threshold) {
        entry.append("threshold", t.rule->decisions.threshold);  // "positive" means above it
      }
    }
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
    entry.append("weakest", t.weakest);
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
  out << fmt::format("qopt: verify: {} samples ({}), outputs judged by what they decide",
                     outcome.samples, outcome.data);
  const analysis::ErrorBudget& b = outcome.budget;
  if (b.cosine > -1) out << fmt::format(", cosine >= {}", b.cosine);
  if (b.sqnrDb >= 0) out << fmt::format(", SQNR >= {} dB", b.sqnrDb);
  if (b.maxAbs >= 0) out << fmt::format(", max-abs <= {}", b.maxAbs);
  if (b.top1 >= 0) out << fmt::format(", top-1 >= {}", b.top1);
  if (outcome.layerBudget.cosine > -1) {
    out << fmt::format(", layer cosine >= {}", outcome.layerBudget.cosine);
  }
  if (outcome.layerBudget.sqnrDb >= 0) {
    out << fmt::format(", layer SQNR >= {} dB", outcome.layerBudget.sqnrDb);
  }
  out << fmt::format("; {} of {} compute layers quantized{}\n", outcome.quantizedLayers,
                     outcome.computeLayers,
                     outcome.quantizedLayers == 0 && outcome.computeLayers > 0
                         ? " (nothing quantized was verified)"
                         : "");
  std::vector<std::string> headers = {"output"};
  for (std::string h : metricHeaders()) headers.push_back(h);
  headers.push_back(">decisions");
  headers.push_back("result");
  analysis::TextTable outputs(headers);
  for (const CheckedTensor& t : outcome.outputs) {
    std::vector<std::string> row = {
        t.logitsOf.empty() ? t.tensor : fmt::format("{} (logits of {})", t.tensor, t.logitsOf)};
    for (std::string c : metricCells(t.metrics)) row.push_back(c);
    row.push_back(decisionCell(t));
    row.push_back(resultText(t));
    outputs.addRow(std::move(row));
  }
  outputs.print(out);
  for (const CheckedTensor& t : outcome.outputs) {
    if (!t.rule) continue;
    out << fmt::format("  {}: {}\n", t.logitsOf.empty() ? t.tensor : t.tensor + " (logits)",
                       describeRule(*t.rule, outcome.verdict));
  }
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
    std::vector<std::string> weakest;
    for (const CheckedTensor& t : outcome.layers) {
      if (t.weakest) {
        weakest.push_back(
            fmt::format("'{}' {} dB", t.node, analysis::formatMetric(t.metrics.sqnrDb, 2)));
      }
    }
    if (!weakest.empty()) {
      out << fmt::format("qopt: verify: weakest layers (flagged): {}\n", fmt::join(weakest, ", "));
    }
  }
  if (outcome.firstDivergence) {
    out << "qopt: verify: first divergence: "
        << describeDivergence(outcome.layers[*outcome.firstDivergence]) << '\n';
  }
  out << (outcome.passed ? "qopt: verify: PASSED\n" : "qopt: verify: FAILED\n");
  return out.str();
}

}  // namespace qopt::verify
