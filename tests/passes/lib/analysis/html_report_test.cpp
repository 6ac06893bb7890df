#include "qopt/analysis/HtmlReport.h"

#include <gtest/gtest.h>

#include "AnalysisTestUtil.h"
#include "qopt/analysis/Inspect.h"

namespace qopt::analysis {
namespace {

using testing::countOf;

Json layer(const char* tensor, const char* node, Json sqnr, bool flagged) {
  Json l = Json::object();
  l.append("tensor", tensor);
  l.append("node", node);
  l.append("op", "Conv");
  l.append("passed", !flagged);
  l.append("flagged", flagged);
  l.append("failures", flagged ? Json(Json::Array{Json("SQNR -6.02 dB < 20 dB")}) : Json::array());
  Json m = Json::object();
  m.append("cosine", 1.0);
  m.append("sqnr-db", std::move(sqnr));
  l.append("metrics", std::move(m));
  return l;
}

Json sampleReport() {
  Json verify = Json::object();
  verify.append("passed", false);
  verify.append("data", "random");
  verify.append("samples", 8);
  verify.append("layers-mode", "all");
  Json budget = Json::object();
  budget.append("cosine", 0.99);
  budget.append("sqnr-db", 20.0);
  verify.append("budget", std::move(budget));
  verify.append("failures", Json(Json::Array{Json("output 'y': SQNR -6.02 dB < 20 dB")}));
  Json out = Json::object();
  out.append("name", "y");
  out.append("passed", false);
  out.append("metrics", Json::object());
  verify.append("outputs", Json(Json::Array{out}));
  verify.append("layers", Json(Json::Array{layer("c1", "c1", Json("inf"), false),
                                           layer("c2", "c2 <&>", Json(-6.02), true),
                                           layer("r2", "r2", Json(-6.02), true)}));
  Json first = Json::object();
  first.append("tensor", "c2");
  first.append("node", "c2 <&>");
  first.append("op", "Conv");
  verify.append("first-divergence", std::move(first));
  Json hist = Json::object();
  hist.append("tensor", "c2");
  hist.append("node", "c2 <&>");
  hist.append("low", -1.0);
  hist.append("bin-width", 0.5);
  hist.append("reference", Json(Json::Array{Json(1), Json(3)}));
  hist.append("actual", Json(Json::Array{Json(2), Json(2)}));
  verify.append("histograms", Json(Json::Array{hist}));

  Json report = Json::object();
  report.append("qopt-version", "0.1.0");
  report.append("pipeline", "perturb-weight{node=c2},verify{layers=all}");
  Json input = Json::object();
  input.append("path", "in.onnx");
  report.append("input", std::move(input));
  Json pass = Json::object();
  pass.append("name", "verify");
  pass.append("changed", false);
  pass.append("statistics", Json::object());
  pass.append("wall-time-ms", 1.5);
  report.append("passes", Json(Json::Array{pass}));
  report.append("warnings", Json(Json::Array{Json("random <inputs>")}));
  Json results = Json::object();
  results.append("verify", std::move(verify));
  report.append("results", std::move(results));
  report.append("failure", "in.onnx: verification failed: output 'y' <...>");
  return report;
}

// A report of the demo's kind: a detector whose Sigmoid map verify judged by IoU, on 16
// evaluation samples, after fold-bn and insert-qdq.
Json detectorReport(bool passed, bool withLayers) {
  Json metrics = Json::object();
  metrics.append("sqnr-db", 21.04);
  metrics.append("rel-err", 0.0888);
  metrics.append("map-iou", passed ? 0.98115 : 0.776);
  Json out = Json::object();
  out.append("name", "sigmoid_0.tmp_0");
  out.append("rule", "map");
  out.append("rule-text",
             "map (Sigmoid [1, 1, 320, 320]): IoU of map > 0.5 >= 0.9, rel-err <= 0.5");
  out.append("threshold", 0.5);
  out.append("passed", passed);
  out.append("failures", passed ? Json::array() : Json(Json::Array{Json("map IoU 0.7760 < 0.9")}));
  out.append("metrics", std::move(metrics));
  Json budget = Json::object();
  budget.append("decisions", 0.98);
  budget.append("map-iou", 0.9);
  budget.append("rel-error", 0.2);
  budget.append("guard", 0.5);
  Json verify = Json::object();
  verify.append("passed", passed);
  verify.append("data", "eval:pages");
  verify.append("samples", 16);
  verify.append("compute-layers", 64);
  verify.append("quantized-layers", 64);
  verify.append("layers-mode", withLayers ? "all" : "outputs");
  verify.append("budget", std::move(budget));
  verify.append("failures", Json::array());
  verify.append("outputs", Json(Json::Array{out}));
  verify.append("layers", withLayers ? Json(Json::Array{layer("c1", "c1", Json(30.0), false),
                                                        layer("c2", "c2", Json(12.0), true)})
                                     : Json::array());
  auto pass = [](const char* name, std::vector<std::pair<const char*, int64_t>> counters) {
    Json p = Json::object();
    p.append("name", name);
    p.append("options", Json::object());
    p.append("changed", true);
    Json stats = Json::object();
    for (auto [key, value] : counters) stats.append(key, value);
    p.append("statistics", std::move(stats));
    p.append("wall-time-ms", 2.0);
    return p;
  };
  Json mixed = pass(
      "mixed-precision",
      {{"quantized-layers", 64}, {"layers-in-float", 1}, {"layers-tried", 3}, {"budget-met", 1}});
  mixed["options"].append("fallback", "fp16");
  Json report = Json::object();
  report.append("pipeline", "fold-bn,insert-qdq,mixed-precision,verify{layers=all}");
  report.append("passes", Json(Json::Array{
                              pass("fold-bn", {{"bn-found", 3}, {"bn-folded", 2}, {"bn-kept", 1}}),
                              pass("insert-qdq", {{"nodes-quantized", 74},
                                                  {"activation-qdq-pairs", 74},
                                                  {"weights-quantized", 64},
                                                  {"nodes-excluded", 0},
                                                  {"weights-gptq", 45}}),
                              std::move(mixed), pass("my-pass", {{"things-done", 7}}),
                              pass("verify", {{"samples", 16},
                                              {"outputs-failed", 0},
                                              {"layers-compared", 2},
                                              {"layers-flagged", 1}})}));
  Json results = Json::object();
  results.append("verify", std::move(verify));
  report.append("results", std::move(results));
  return report;
}

TEST(HtmlReportTest, OpensWithTheTaskFigureThenTheChartThenWhatEachPassChanged) {
  std::string html = renderHtmlReport(detectorReport(true, true), nullptr);
  const std::string figure =
      "Map agreement with FP32 (IoU of positions &gt; 0.5): 98.1 % on 16 evaluation samples "
      "\u2014 bound 90 %: passed";
  size_t at = html.find(figure);
  ASSERT_NE(at, std::string::npos) << html;
  EXPECT_NE(html.find("<p class=\"task-figure pass\"><span class=\"figure\">" + figure),
            std::string::npos);
  EXPECT_NE(html.find("relative error 0.0888 (at most 0.5)"), std::string::npos);
  size_t chart = html.find("class=\"chart layer-error\"");
  size_t passes = html.find("What each pass changed");
  size_t pipeline = html.find("<pre class=\"pipeline\">");
  EXPECT_LT(at, chart);
  EXPECT_LT(chart, passes);
  EXPECT_LT(passes, pipeline);
  // Each pass in words from its statistics, every counter as it is, unknown passes included.
  EXPECT_NE(html.find("2 of 3 BatchNormalization folded into the layer before them; 1 kept"),
            std::string::npos);
  EXPECT_NE(html.find("74 layers quantized (74 activation Q/DQ pairs, 64 weights); 45 weights "
                      "rounded by GPTQ<"),
            std::string::npos);
  EXPECT_NE(html.find("1 of 64 quantized layers returned to FP16; budget met"), std::string::npos);
  EXPECT_NE(html.find("16 samples compared; 2 layers compared, 1 flagged; every output within "
                      "its bound"),
            std::string::npos);
  EXPECT_NE(html.find("things-done 7"), std::string::npos);
}

TEST(HtmlReportTest, AFailedFigureSaysSoAndWhy) {
  std::string html = renderHtmlReport(detectorReport(false, false), nullptr);
  EXPECT_NE(html.find("<p class=\"task-figure fail\"><span class=\"figure\">Map agreement with "
                      "FP32 (IoU of positions &gt; 0.5): 77.6 % on 16 evaluation samples \u2014 "
                      "bound 90 %: FAILED"),
            std::string::npos);
  EXPECT_NE(html.find("map IoU 0.7760 &lt; 0.9"), std::string::npos);
  EXPECT_NE(html.find("run verify{layers=all} for the per-layer chart"), std::string::npos);
}

TEST(HtmlReportTest, EveryRuleHasItsSentence) {
  Json report = detectorReport(true, false);
  Json& outputs = report["results"]["verify"]["outputs"];
  report["results"]["verify"]["data"] = "calib:calib";
  report["results"]["verify"]["samples"] = 1;
  auto entry = [](const char* name, const char* rule, double agreement, int64_t rows) {
    Json m = Json::object();
    m.append("rel-err", 0.25);
    m.append("clear-top1", agreement);
    m.append("clear-rows", rows);
    Json o = Json::object();
    o.append("name", name);
    o.append("rule", rule);
    o.append("passed", true);
    o.append("metrics", std::move(m));
    return o;
  };
  outputs.push(entry("probs", "top-1", 1.0, 15));
  outputs.push(entry("chars", "sequence", 0.99996, 318));
  outputs.push(entry("seg", "class-map", 0.99, 4096));
  Json binary = entry("wake", "binary", 0.5, 2);
  binary.append("threshold", 0.0);
  binary.append("logits-of", "p");
  outputs.push(std::move(binary));
  Json features = entry("features", "relative", 0, 0);
  features["metrics"].append("cosine", 0.995);
  features["metrics"].append("sqnr-db", 20.2);
  outputs.push(std::move(features));
  // Explicit budgets apply to every output on top of its rule.
  report["results"]["verify"]["budget"].append("cosine", 0.98);
  report["results"]["verify"]["budget"].append("sqnr-db", 15.0);
  std::string html = renderHtmlReport(report, nullptr);
  for (const char* sentence :
       {"Top-1 agreement with FP32 (rows it decides clearly): 100.0 % of 15 rows on 1 "
        "calibration sample \u2014 bound 98 %: passed",
        // Short of 1, never shown as 100.0 %.
        "Sequence agreement with FP32 (top-1 per position it decides clearly): 99.996 % of 318 "
        "positions",
        "Class map agreement with FP32 (top-1 per pixel it decides clearly): 99.0 % of 4096 pixels",
        "Its logits: Decision agreement with FP32 (scores &gt; 0 it decides clearly): 50.0 % of 2 "
        "scores",
        "Relative error against FP32: 0.25 on 1 calibration sample \u2014 bound 0.2: passed"}) {
    EXPECT_NE(html.find(sentence), std::string::npos) << sentence;
  }
  EXPECT_NE(html.find("output <code>wake (logits of p)</code>"), std::string::npos);
  EXPECT_NE(html.find("output <code>features</code>; cosine 0.995 (at least 0.98); SQNR (dB) 20.2 "
                      "(at least 15)</span>"),
            std::string::npos);
}

TEST(HtmlReportTest, RendersEverySectionSelfContained) {
  auto model = testing::parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,2] y) <float[4,2] w = {1, 2, 3, 4, 5, 6, 7, 8}> { y = MatMul(x, w) }
)");
  Json inspect = inspectJson(inspectGraph(model->graph()));
  std::string html = renderHtmlReport(sampleReport(), &inspect);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // Nothing is fetched and nothing runs.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  // Pipeline, passes, warnings (escaped), verification, chart, histograms, inspect.
  EXPECT_NE(html.find("perturb-weight{node=c2},verify{layers=all}"), std::string::npos);
  EXPECT_NE(html.find("random &lt;inputs&gt;"), std::string::npos);
  EXPECT_NE(html.find("FAILED"), std::string::npos);
  EXPECT_NE(html.find("The run stopped at a failed check (exit code 1): in.onnx: verification "
                      "failed: output &#39;y&#39; &lt;...&gt;"),
            std::string::npos);
  EXPECT_NE(html.find("First layer whose error jumps: <code>c2 &lt;&amp;&gt;</code>"),
            std::string::npos);
  EXPECT_EQ(countOf(html, "class=\"chart layer-error\""), 1u);
  EXPECT_EQ(countOf(html, "class=\"chart histogram\""), 1u);
  EXPECT_EQ(countOf(html, "class=\"chart share\""), 1u);
  EXPECT_EQ(countOf(html, "<circle class=\"flagged\""), 2u);
  EXPECT_NE(html.find("<table class=\"inspect\">"), std::string::npos);
  EXPECT_EQ(html.find("c2 <&>"), std::string::npos);  // never unescaped
}

TEST(HtmlReportTest, WithoutVerifyOrInspectTheRestStillRenders) {
  Json report = Json::object();
  report.append("pipeline", "dce");
  std::string html = renderHtmlReport(report, nullptr);
  EXPECT_NE(html.find("<pre class=\"pipeline\">dce</pre>"), std::string::npos);
  EXPECT_NE(html.find("Not compared with the float model: the pipeline has no verify pass"),
            std::string::npos);
  EXPECT_EQ(html.find("Verification"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

TEST(HtmlReportTest, LongFailureListsAreCut) {
  Json report = sampleReport();
  Json failures = Json::array();
  for (const char* f : {"a", "b", "c", "d", "e"}) failures.push(f);
  report["results"]["verify"]["failures"] = std::move(failures);
  std::string html = renderHtmlReport(report, nullptr);
  EXPECT_NE(html.find("FAILED: a; b; c (and 2 more)"), std::string::npos);
}

TEST(HtmlReportTest, VerifyWithoutLayersSaysHowToGetTheChart) {
  Json report = sampleReport();
  Json& verify = report["results"]["verify"];
  verify["layers"] = Json::array();
  std::string html = renderHtmlReport(report, nullptr);
  EXPECT_NE(html.find("verify{layers=all}"), std::string::npos);
  EXPECT_EQ(html.find("class=\"chart layer-error\""), std::string::npos);
}

}  // namespace
}  // namespace qopt::analysis
