// check-trt's checks through their library interface: version boundaries (UINT8 from 10.10,
// ConvTranspose axes on 8.x and 9+), weights that are correct for their consumer, the counts per
// id, and the build-flags text of each TensorRT generation.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "BuildFlags.h"
#include "Finding.h"
#include "PlacementChecks.h"
#include "QdqChecks.h"
#include "qopt/ir/TextFormat.h"

namespace qopt::checktrt {
namespace {

// The models here are a few channels wide: the small-layer rule (tests/lit) is off throughout.
std::vector<Finding> checkAll(const Model& model, TrtVersion version) {
  std::vector<Finding> findings;
  checkQdqNodes(model, version, findings);
  checkPlacement(model.graph(), analysis::reportPrecisions(model.graph()), findings,
                 /*minChannels=*/0);
  return findings;
}

std::vector<std::string> ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.id + "@" + f.node);
  return out;
}

constexpr const char* kUInt8Model = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x) => (float[1,4,4,4] y)
<int8[4,2,1,1] wq = {1, -2, 3, 4, 5, 6, -7, 8}, float[4] ws = {0.01, 0.02, 0.03, 0.04},
 float xs = {0.05}, uint8 xz = {0}>
{
  xq = QuantizeLinear(x, xs, xz)
  xd = DequantizeLinear(xq, xs, xz)
  wd = DequantizeLinear <axis = 0> (wq, ws)
  y = Conv <kernel_shape = [1, 1]> (xd, wd)
}
)";

TEST(CheckTrt, UInt8IsAnErrorBefore10_10AndAWarningFrom10_10) {
  auto model = parseModelText(kUInt8Model);
  for (TrtVersion version : {TrtVersion{8, 6, 1}, TrtVersion{10, 1, 0}, TrtVersion{10, 9, 0}}) {
    std::vector<Finding> findings = checkAll(*model, version);
    ASSERT_EQ(findings.size(), 1u) << version.str();
    EXPECT_EQ(findings[0].id, "uint8-quantization");
    EXPECT_EQ(findings[0].severity, Severity::Error) << version.str();
    EXPECT_EQ(findings[0].node, "xq");
  }
  for (TrtVersion version : {TrtVersion{10, 10, 0}, TrtVersion{11, 0, 0}}) {
    std::vector<Finding> findings = checkAll(*model, version);
    ASSERT_EQ(findings.size(), 1u) << version.str();
    EXPECT_EQ(findings[0].severity, Severity::Warning) << version.str();
    EXPECT_NE(findings[0].cause.find("values clip at 6.35"), std::string::npos)
        << findings[0].cause;
  }
}

constexpr const char* kConvTransposeModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x, float[1,8] f) => (float[1,2,4,4] t0, float[1,2,4,4] t1, float[1,2] g1)
<int8[2,2,1,1] cw = {1, 2, 3, 4}, float[2] s = {0.01, 0.02}, int8[2] z = {0, 0},
 int8[2,8] gw = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8}, float xs = {0.05}, int8 xz = {0}>
{
  xq = QuantizeLinear(x, xs, xz)
  xd = DequantizeLinear(xq, xs, xz)
  fq = QuantizeLinear(f, xs, xz)
  fd = DequantizeLinear(fq, xs, xz)
  w0 = DequantizeLinear <axis = 0> (cw, s, z)
  t0 = ConvTranspose <kernel_shape = [1, 1]> (xd, w0)
  w1 = DequantizeLinear <axis = 1> (cw, s, z)
  t1 = ConvTranspose <kernel_shape = [1, 1]> (xd, w1)
  gd = DequantizeLinear <axis = 0> (gw, s, z)
  g1 = Gemm <transB = 1> (fd, gd)
}
)";

TEST(CheckTrt, ConvTransposeAxisDependsOnTheVersion) {
  auto model = parseModelText(kConvTransposeModel);
  EXPECT_EQ(ids(checkAll(*model, {8, 6, 0})), std::vector<std::string>{"per-channel-axis@w1"});
  EXPECT_EQ(ids(checkAll(*model, {9, 0, 0})), std::vector<std::string>{"per-channel-axis@w0"});
  EXPECT_EQ(ids(checkAll(*model, {10, 3, 0})), std::vector<std::string>{"per-channel-axis@w0"});
}

TEST(CheckTrt, CountsPerSeverityAndIdInFirstSeenOrder) {
  std::vector<Finding> findings = {
      {Severity::Error, "b", "n1", "Op", "c", "f"},
      {Severity::Warning, "a", "n2", "Op", "c", "f"},
      {Severity::Error, "b", "n3", "Op", "c", "f"},
      {Severity::Note, "c", "", "", "c", "f"},
  };
  FindingCounts counts = countFindings(findings);
  EXPECT_EQ(counts.errors, 2);
  EXPECT_EQ(counts.warnings, 1);
  EXPECT_EQ(counts.notes, 1);
  using Entry = std::pair<std::string, int>;
  EXPECT_EQ(counts.perId, (std::vector<Entry>{{"b", 2}, {"a", 1}, {"c", 1}}));
  EXPECT_EQ(formatFinding(findings[0]), "error [b] node 'n1' (Op): c; fix: f");
  EXPECT_EQ(formatFinding(findings[3]), "note [c] model: c; fix: f");
  EXPECT_EQ(findingJson(findings[1]).dump(),
            R"({"severity":"warning","id":"a","node":"n2","op":"Op","cause":"c","fix":"f"})");
}

TEST(CheckTrt, BuildFlagsPerGeneration) {
  PlacementSummary allInt8;
  allInt8.hasQdq = true;
  allInt8.weightedLayers = 2;
  allInt8.int8Layers = 2;
  PlacementSummary oneFloat = allInt8;
  oneFloat.int8Layers = 1;
  oneFloat.floatLayers = {"gemm"};

  std::string v8 = buildFlagsText({8, 6, 1}, allInt8);
  EXPECT_EQ(v8.rfind("TensorRT 8.6.1: build with the INT8 flag", 0), 0u) << v8;
  EXPECT_EQ(v8.find("--fp16"), std::string::npos) << v8;
  EXPECT_NE(buildFlagsText({8, 6, 1}, oneFloat).find("add --fp16"), std::string::npos);

  for (TrtVersion v : {TrtVersion{9, 0, 0}, TrtVersion{10, 3, 0}}) {
    std::string text = buildFlagsText(v, oneFloat);
    EXPECT_NE(text.find("strongly typed"), std::string::npos) << text;
    EXPECT_NE(text.find("no --int8 or --fp16 flag is needed"), std::string::npos) << text;
  }
  std::string v11 = buildFlagsText({11, 0, 0}, oneFloat);
  EXPECT_NE(v11.find("no INT8 or FP16 builder flags"), std::string::npos) << v11;
  EXPECT_NE(v11.find("the FP32 layers (1 layer) stay FP32"), std::string::npos) << v11;
}

TEST(CheckTrt, PlacementNamesFloatLayersAndWarnsWhenMostlyFloat) {
  auto model = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] f) => (float[1,4] a, float[1,4] b, float[1,4] c)
<float[4,8] w = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                 1, 2, 3, 4, 5, 6, 7, 8},
 int8[4,8] wq = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                 1, 2, 3, 4, 5, 6, 7, 8}, float xs = {0.05}, int8 xz = {0}>
{
  fq = QuantizeLinear(f, xs, xz)
  fd = DequantizeLinear(fq, xs, xz)
  wd = DequantizeLinear(wq, xs, xz)
  a = Gemm <transB = 1> (fd, wd)
  b = Gemm <transB = 1> (f, w)
  c = Gemm <transB = 1> (f, w)
}
)");
  std::vector<Finding> findings;
  PlacementSummary summary =
      checkPlacement(model->graph(), analysis::reportPrecisions(model->graph()), findings,
                     /*minChannels=*/0);
  EXPECT_EQ(summary.weightedLayers, 3);
  EXPECT_EQ(summary.int8Layers, 1);
  EXPECT_EQ(summary.floatLayers, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(ids(findings),
            (std::vector<std::string>{"float-layer@b", "float-layer@c", "mostly-float@"}));
  EXPECT_EQ(placementText(summary), "1 of 3 weighted layers run in INT8, 2 in float: b, c");
}

// check-trt counts what the shared classification says, so its summary and inspect's agree; a
// Cast between DequantizeLinear and the layer makes the layer FP16, named as a float layer.
TEST(CheckTrt, PlacementCountsWhatInspectCounts) {
  auto model = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] f) => (float16[1,4] a, float[1,4] b)
<int8[4,8] wq = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                 1, 2, 3, 4, 5, 6, 7, 8},
 float xs = {0.05}, int8 xz = {0}>
{
  fq = QuantizeLinear(f, xs, xz)
  fd = DequantizeLinear(fq, xs, xz)
  fh = Cast <to = 10> (fd)
  wd = DequantizeLinear(wq, xs, xz)
  wh = Cast <to = 10> (wd)
  a = Gemm <transB = 1> (fh, wh)
  b = Gemm <transB = 1> (fd, wd)
}
)",
                              "test");
  const analysis::PrecisionReport report = analysis::reportPrecisions(model->graph());
  std::vector<Finding> findings;
  PlacementSummary summary = checkPlacement(model->graph(), report, findings, /*minChannels=*/0);
  EXPECT_EQ(summary.int8Layers, report.int8.layers);
  EXPECT_EQ(summary.fp16Layers, report.fp16.layers);
  EXPECT_EQ(summary.fp32Layers(), report.fp32.layers);
  EXPECT_EQ(summary.int8Layers, 1);
  EXPECT_EQ(summary.fp16Layers, 1);
  EXPECT_EQ(placementText(summary),
            "1 of 2 weighted layers run in INT8, 1 in float (1 FP16, 0 FP32): a");
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].id, "float-layer");
  EXPECT_NE(findings[0].cause.find("runs in FP16: 'fh' comes through DequantizeLinear 'fd' and "
                                   "then Cast 'fh' to FLOAT16"),
            std::string::npos);
}

}  // namespace
}  // namespace qopt::checktrt
