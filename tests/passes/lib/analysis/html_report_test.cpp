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
