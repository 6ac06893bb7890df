#include "qopt/analysis/HtmlReport.h"

#include <cmath>

#include <fmt/format.h>

#include "ReportSummary.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/analysis/Svg.h"

namespace qopt::analysis {

namespace {

constexpr const char* kStyle = R"(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px;
       color: #222; max-width: 1200px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.flagged td { background: #fde8e8; }
code, pre { font-family: Menlo, Consolas, monospace; font-size: 12px; }
pre { background: #f6f6f6; padding: 8px; white-space: pre-wrap; word-break: break-all; }
.pass { color: #1a7f37; font-weight: bold; } .fail { color: #c62828; font-weight: bold; }
.muted { color: #777; } .histograms { display: flex; flex-wrap: wrap; gap: 12px; }
p.task-figure { font-size: 17px; margin: 10px 0; padding: 8px 12px; border-left: 5px solid #777;
                background: #f6f6f6; }
p.task-figure.pass { border-color: #1a7f37; } p.task-figure.fail { border-color: #c62828; }
p.task-figure.logits { font-size: 13px; padding: 4px 12px; }
p.task-figure .detail { display: block; font-size: 12px; color: #666; margin-top: 3px; }
td.headline { min-width: 320px; } td.counters { font-size: 11px; color: #666; }
)";

std::string esc(std::string_view s) {
  return escapeXml(s);
}

std::string text(const Json& v) {
  if (v.isString()) return v.asString();
  if (v.isNull()) return "";
  return v.dump();
}

const Json::Array& items(const Json& v) {
  static const Json::Array kEmpty;
  return v.isArray() ? v.asArray() : kEmpty;
}

double numberOr(const Json& v, double fallback) {
  return v.isNumber() ? v.asDouble() : fallback;
}

std::string metricCell(const Json& metrics, std::string_view key, int decimals) {
  const Json* v = metrics.find(key);
  if (v == nullptr || v->isNull()) return "<td class=\"num\">-</td>";
  return fmt::format("<td class=\"num\">{}</td>", esc(formatMetric(metricFromJson(*v), decimals)));
}

std::string metricsHeader() {
  return "<th>cosine</th><th>SQNR (dB)</th><th>MSE</th><th>max abs</th><th>mean abs</th>"
         "<th>KL</th><th>overlap</th><th>top-1</th>";
}

std::string metricsCells(const Json& m) {
  return metricCell(m, "cosine", 6) + metricCell(m, "sqnr-db", 2) +
         fmt::format("<td class=\"num\">{}</td>",
                     m.find("mse") ? fmt::format("{:.4g}", metricFromJson(m["mse"])) : "-") +
         fmt::format(
             "<td class=\"num\">{}</td>",
             m.find("max-abs") ? fmt::format("{:.4g}", metricFromJson(m["max-abs"])) : "-") +
         fmt::format(
             "<td class=\"num\">{}</td>",
             m.find("mean-abs") ? fmt::format("{:.4g}", metricFromJson(m["mean-abs"])) : "-") +
         metricCell(m, "kl", 4) + metricCell(m, "overlap", 3) + metricCell(m, "top1", 3);
}

// The entry's failures joined; past `limit` of them, how many more there are.
std::string failuresText(const Json& entry, size_t limit = 8) {
  std::string out;
  const Json::Array& list = items(entry["failures"]);
  for (size_t i = 0; i < list.size() && i < limit; ++i) {
    out += (out.empty() ? "" : "; ") + text(list[i]);
  }
  if (list.size() > limit) out += fmt::format(" (and {} more)", list.size() - limit);
  return out;
}

void renderOverview(const Json& report, std::string& html) {
  html += "<h2>Run</h2>\n<table>";
  auto row = [&](std::string_view label, const std::string& value) {
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>", label, esc(value));
  };
  row("qopt", text(report["qopt-version"]));
  row("input", text(report["input"]["path"]));
  row("output", text(report["output"]["path"]));
  row("target", text(report["target"]));
  if (const Json* t = report.find("total-wall-time-ms"); t && t->isNumber()) {
    row("wall time", fmt::format("{:.1f} ms", t->asDouble()));
  }
  html += "</table>\n<h3>Pipeline</h3>\n";
  html += fmt::format("<pre class=\"pipeline\">{}</pre>\n", esc(text(report["pipeline"])));
}

// One row per pass: what its statistics say it changed, in words where qopt knows the pass, and
// every counter as it is.
void renderPasses(const Json& report, std::string& html) {
  const Json* passes = report.find("passes");
  if (passes == nullptr || !passes->isArray()) return;
  html +=
      "<h2>What each pass changed</h2>\n<table class=\"passes\"><tr><th>#</th><th>pass</th>"
      "<th>changed</th><th>what its statistics say</th><th>counters</th><th>wall (ms)</th>"
      "<th>remarks</th></tr>\n";
  int index = 0;
  for (const Json& pass : passes->asArray()) {
    std::string counters;
    const Json& statistics = pass["statistics"];
    if (statistics.isObject()) {
      for (const auto& [key, value] : statistics.asObject()) {
        counters += fmt::format("{}{} {}", counters.empty() ? "" : ", ", key, text(value));
      }
    }
    const std::string name = text(pass["name"]);
    const Json* remarks = pass.find("remarks");
    html += fmt::format(
        "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td>"
        "<td class=\"headline\">{}</td><td class=\"counters\">{}</td><td class=\"num\">{:.1f}"
        "</td><td class=\"num\">{}</td></tr>\n",
        ++index, esc(name), pass["changed"].isBool() && pass["changed"].asBool() ? "yes" : "no",
        esc(passHeadline(name, statistics, pass["options"])), esc(counters),
        pass["wall-time-ms"].isNumber() ? pass["wall-time-ms"].asDouble() : 0.0,
        remarks && remarks->isArray() ? remarks->size() : 0);
  }
  html += "</table>\n";
}

void renderWarnings(const Json& report, std::string& html) {
  const Json* warnings = report.find("warnings");
  if (warnings == nullptr || !warnings->isArray() || warnings->size() == 0) return;
  html += "<h2>Warnings</h2>\n<ul class=\"warnings\">";
  for (const Json& w : warnings->asArray()) html += fmt::format("<li>{}</li>", esc(text(w)));
  html += "</ul>\n";
}

// The verify pass's options in the report (the last verify of the pipeline), or null.
const Json& verifyOptions(const Json& report) {
  static const Json kNull;
  const Json* found = &kNull;
  for (const Json& pass : items(report["passes"])) {
    if (text(pass["name"]) == "verify") found = &pass["options"];
  }
  return *found;
}

// What the report opens with: each output's figure against the float model, as verify judged it.
void renderTaskFigures(const Json& report, const Json* verify, std::string& html) {
  const std::string reference = text(verifyOptions(report)["reference"]);
  html += fmt::format("<h2>Against {}</h2>\n", reference.empty() ? "FP32" : "the reference model");
  if (verify == nullptr) {
    html +=
        "<p class=\"task-figure none\">Not compared with the float model: the pipeline has no "
        "verify pass (add <code>verify</code>, with --eval-data or --calib-data, for the "
        "figure).</p>\n";
    return;
  }
  std::vector<TaskFigure> figures = taskFigures(*verify, reference);
  if (figures.empty()) html += "<p class=\"task-figure none\">verify compared no output.</p>\n";
  for (const TaskFigure& f : figures) {
    std::string detail = "output <code>" + esc(f.output) + "</code>";
    if (!f.detail.empty()) detail += "; " + esc(f.detail);
    html += fmt::format(
        "<p class=\"task-figure {}{}\"><span class=\"figure\">{}{}</span><span "
        "class=\"detail\">{}</span></p>\n",
        f.passed ? "pass" : "fail", f.logits ? " logits" : "", f.logits ? "Its logits: " : "",
        esc(f.sentence), detail);
  }
  if ((*verify)["quantized-layers"].isNumber() && (*verify)["compute-layers"].isNumber()) {
    html += fmt::format("<p class=\"muted\">{} of {} compute layers quantized.</p>\n",
                        text((*verify)["quantized-layers"]), text((*verify)["compute-layers"]));
  }
}

// verify{layers=all}'s SQNR per layer, or how to get it.
void renderLayerChart(const Json& verify, std::string& html) {
  html += "<h2>SQNR per layer</h2>\n";
  const Json* layers = verify.find("layers");
  if (layers == nullptr || !layers->isArray() || layers->size() == 0) {
    html +=
        "<p class=\"muted\">No per-layer errors: run verify{layers=all} for the per-layer "
        "chart.</p>\n";
    return;
  }
  std::string firstTensor;
  if (const Json* first = verify.find("first-divergence"); first && first->isObject()) {
    firstTensor = text((*first)["tensor"]);
  }
  std::vector<LayerErrorPoint> points;
  for (const Json& layer : items(*layers)) {
    LayerErrorPoint p;
    p.label = fmt::format("{} ({})", text(layer["node"]), text(layer["tensor"]));
    p.sqnrDb = metricFromJson(layer["metrics"]["sqnr-db"]);
    p.flagged = layer["flagged"].isBool() && layer["flagged"].asBool();
    p.firstDivergence = !firstTensor.empty() && text(layer["tensor"]) == firstTensor;
    points.push_back(std::move(p));
  }
  std::optional<double> threshold;
  if (const Json* s = verify["budget"].find("sqnr-db"); s && s->isNumber())
    threshold = s->asDouble();
  html += fmt::format(
      "<p class=\"muted\">{} layers in topological order, each against the same layer of the "
      "float model; red: flagged (weakest, or a changed value distribution).</p>\n",
      layers->size());
  html += layerErrorChart(points, threshold);
}

void renderVerify(const Json& verify, std::string& html) {
  bool passed = verify["passed"].isBool() && verify["passed"].asBool();
  html += "<h2>Verification</h2>\n";
  html += fmt::format("<p class=\"{}\">{}</p>\n", passed ? "pass" : "fail",
                      passed ? "PASSED" : "FAILED: " + esc(failuresText(verify, 3)));
  html += fmt::format("<p class=\"muted\">data: {}, {} samples, layers: {}</p>\n",
                      esc(text(verify["data"])), text(verify["samples"]),
                      esc(text(verify["layers-mode"])));
  if (const Json* first = verify.find("first-divergence"); first && first->isObject()) {
    html += fmt::format(
        "<p class=\"divergence\">First layer whose error jumps: <code>{}</code> ({}), tensor "
        "<code>{}</code>: {}</p>\n",
        esc(text((*first)["node"])), esc(text((*first)["op"])), esc(text((*first)["tensor"])),
        esc(failuresText(*first)));
  }
  if (const Json* outputs = verify.find("outputs"); outputs && outputs->isArray()) {
    html += "<table class=\"outputs\"><tr><th>output</th><th>rule</th><th>result</th>" +
            metricsHeader() + "</tr>\n";
    for (const Json& o : outputs->asArray()) {
      bool ok = o["passed"].isBool() && o["passed"].asBool();
      html +=
          fmt::format("<tr class=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td>{}</tr>\n",
                      ok ? "" : "flagged", esc(text(o["name"])), esc(text(o["rule-text"])),
                      ok ? "pass" : esc(failuresText(o)), metricsCells(o["metrics"]));
    }
    html += "</table>\n";
  }
  const Json* layers = verify.find("layers");
  if (layers == nullptr || !layers->isArray() || layers->size() == 0) return;
  if (const Json* hists = verify.find("histograms"); hists && hists->isArray() && hists->size()) {
    html += "<h3>Value histograms of flagged layers</h3>\n<div class=\"histograms\">\n";
    for (const Json& h : hists->asArray()) {
      std::vector<double> ref, act;
      for (const Json& c : items(h["reference"])) ref.push_back(numberOr(c, 0));
      for (const Json& c : items(h["actual"])) act.push_back(numberOr(c, 0));
      html += histogramOverlayChart(fmt::format("{} ({})", text(h["node"]), text(h["tensor"])),
                                    numberOr(h["low"], 0), numberOr(h["bin-width"], 1), ref, act);
    }
    html += "</div>\n";
  }
  html +=
      "<details><summary>Per-layer table</summary>\n<table class=\"layers\"><tr><th>#</th>"
      "<th>node</th><th>op</th><th>tensor</th>" +
      metricsHeader() + "<th>SQNR drop</th><th>why flagged</th></tr>\n";
  int index = 0;
  for (const Json& layer : layers->asArray()) {
    bool flagged = layer["flagged"].isBool() && layer["flagged"].asBool();
    html += fmt::format(
        "<tr class=\"{}\"><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>"
        "<code>{}</code></td>{}{}<td>{}</td></tr>\n",
        flagged ? "flagged" : "", index++, esc(text(layer["node"])), esc(text(layer["op"])),
        esc(text(layer["tensor"])), metricsCells(layer["metrics"]),
        metricCell(layer, "sqnr-drop-db", 2), esc(failuresText(layer)));
  }
  html += "</table></details>\n";
}

void renderSensitivity(const Json& s, std::string& html) {
  html += "<h2>Sensitivity</h2>\n";
  html += fmt::format(
      "<p class=\"muted\">data: {}, {} samples. Output error when only the layer "
      "is quantized, and when only it is left in float.</p>\n",
      esc(text(s["data"])), text(s["samples"]));
  const Json* layers = s.find("layers");
  if (layers == nullptr || !layers->isArray()) return;
  html +=
      "<table class=\"sensitivity\"><tr><th>rank</th><th>layer</th><th>op</th>"
      "<th>only quantized: cosine</th><th>SQNR (dB)</th><th>only float: cosine</th>"
      "<th>SQNR (dB)</th></tr>\n";
  for (const Json& l : layers->asArray()) {
    html += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td>{}{}{}{}</tr>\n", text(l["rank"]),
        esc(text(l["node"])), esc(text(l["op"])), metricCell(l["only-quantized"], "cosine", 6),
        metricCell(l["only-quantized"], "sqnr-db", 2), metricCell(l["only-float"], "cosine", 6),
        metricCell(l["only-float"], "sqnr-db", 2));
  }
  html += "</table>\n";
}

void renderMixedPrecision(const Json& m, std::string& html) {
  bool met = m["met"].isBool() && m["met"].asBool();
  html += "<h2>Mixed precision</h2>\n";
  html += fmt::format("<p class=\"{}\">budget {}: {}</p>\n", met ? "pass" : "fail",
                      esc(m["budget"].dump()), met ? "met" : "not met");
  html += "<table class=\"mixed\"><tr><th>step</th><th>kept in float</th>" + metricsHeader() +
          "</tr>\n";
  html += fmt::format("<tr><td>start</td><td>-</td>{}</tr>\n", metricsCells(m["initial"]));
  if (const Json* steps = m.find("steps"); steps && steps->isArray()) {
    int i = 0;
    for (const Json& step : steps->asArray()) {
      html += fmt::format("<tr><td class=\"num\">{}</td><td>{}</td>{}</tr>\n", ++i,
                          esc(text(step["node"])), metricsCells(step["metrics"]));
    }
  }
  html += "</table>\n";
}

void renderInspect(const Json& inspect, std::string& html) {
  html += "<h2>Layer precision (output model)</h2>\n";
  const Json& summary = inspect["summary"];
  auto share = [&](const char* key) {
    const Json* t = summary.find(key);
    return t && (*t)["mac-share"].isNumber() ? (*t)["mac-share"].asDouble() : 0.0;
  };
  html += fmt::format("<p>{} compute layers; share of multiply-accumulates by precision:</p>\n",
                      text(summary["layers"]));
  html += stackedBar({{"INT8", share("INT8"), "#2e7d32"},
                      {"FP16", share("FP16"), "#1565c0"},
                      {"FP32", share("FP32"), "#757575"}});
  const Json* layers = inspect.find("layers");
  if (layers == nullptr || !layers->isArray()) return;
  html +=
      "<table class=\"inspect\"><tr><th>layer</th><th>op</th><th>precision</th><th>weight</th>"
      "<th>granularity</th><th>weight scale</th><th>MACs</th><th>why float / notes</th></tr>\n";
  for (const Json& l : layers->asArray()) {
    std::string scale;
    if (l["weight-scale-min"].isNumber()) {
      scale = fmt::format("{:.4g}..{:.4g}", l["weight-scale-min"].asDouble(),
                          l["weight-scale-max"].asDouble());
    }
    std::string why = text(l["precision"]) == "INT8" ? std::string() : text(l["reason"]);
    for (const Json& n : items(l["notes"])) why += (why.empty() ? "" : "; ") + text(n);
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td>{}</td></tr>\n",
        esc(text(l["node"])), esc(text(l["op"])), esc(text(l["precision"])),
        esc(text(l["weight-dtype"])), esc(text(l["granularity"])), esc(scale), text(l["macs"]),
        esc(why));
  }
  html += "</table>\n";
}

}  // namespace

std::string renderHtmlReport(const Json& report, const Json* inspect) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n<title>qopt report</title>\n<style>";
  html += kStyle;
  html += "</style>\n</head>\n<body>\n<h1>qopt report</h1>\n";
  if (const Json* failure = report.find("failure"); failure && failure->isString()) {
    html += fmt::format(
        "<p class=\"fail\">The run stopped at a failed check (exit code 1): {}"
        "</p>\n",
        esc(failure->asString()));
  }
  const Json& results = report["results"];
  const Json* verify = results.find("verify");
  if (verify != nullptr && !verify->isObject()) verify = nullptr;
  renderTaskFigures(report, verify, html);
  if (verify != nullptr) renderLayerChart(*verify, html);
  renderPasses(report, html);
  renderOverview(report, html);
  renderWarnings(report, html);
  if (verify != nullptr) renderVerify(*verify, html);
  if (const Json* s = results.find("sensitivity"); s && s->isObject()) renderSensitivity(*s, html);
  if (const Json* m = results.find("mixed-precision"); m && m->isObject()) {
    renderMixedPrecision(*m, html);
  }
  if (inspect != nullptr && inspect->isObject()) renderInspect(*inspect, html);
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace qopt::analysis
