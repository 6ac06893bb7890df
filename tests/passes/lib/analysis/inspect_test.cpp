#include "qopt/analysis/Inspect.h"

#include <gtest/gtest.h>

#include <sstream>

#include "AnalysisTestUtil.h"

namespace qopt::analysis {
namespace {

using testing::parse;

// One INT8 Conv (128 MACs), one FP32 Gemm (32 MACs), one FP16 MatMul (32 MACs).
constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x, float[1,8] f) => (float[1,4,4,4] conv, float[1,4] gemm, float16[1,4] half)
<int8[4,2,1,1] wq = {1, -2, 3, 4, 5, 6, -7, 8}, float[4] ws = {0.01, 0.02, 0.03, 0.04},
 int8[4] wz = {0, 0, 0, 0}, float xs = {0.05}, int8 xz = {0},
 float[4,8] gw = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                  1, 2, 3, 4, 5, 6, 7, 8}>
{
  xq = QuantizeLinear(x, xs, xz)
  xd = DequantizeLinear(xq, xs, xz)
  wd = DequantizeLinear <axis = 0> (wq, ws, wz)
  conv = Conv <kernel_shape = [1, 1]> (xd, wd)
  gemm = Gemm <transB = 1> (f, gw)
  f16 = Cast <to = 10> (f)
  g16 = Cast <to = 10> (gw)
  half = Gemm <transB = 1> (f16, g16)
}
)";

TEST(InspectTest, SummaryCountsLayersAndMacsByPrecision) {
  auto model = parse(kModel);
  InspectResult r = inspectGraph(model->graph());
  EXPECT_EQ(r.shapes.origin, "declared");
  EXPECT_EQ(r.shapes.failure, "");
  ASSERT_EQ(r.layers.size(), 3u);
  EXPECT_EQ(r.int8.layers, 1);
  EXPECT_EQ(r.fp32.layers, 1);
  EXPECT_EQ(r.fp16.layers, 1);
  EXPECT_EQ(r.totalMacs, 192u);
  EXPECT_EQ(r.int8.macs, 128u);
  EXPECT_DOUBLE_EQ(r.int8MacShare(), 128.0 / 192.0);
  EXPECT_EQ(r.layersWithoutMacs, 0);
}

TEST(InspectTest, JsonHasOneObjectPerLayer) {
  auto model = parse(kModel);
  Json j = inspectJson(inspectGraph(model->graph()));
  ASSERT_EQ(j["layers"].size(), 3u);
  const Json& conv = j["layers"].asArray()[0];
  EXPECT_EQ(conv["node"], Json("conv"));
  EXPECT_EQ(conv["precision"], Json("INT8"));
  EXPECT_EQ(conv["weight-dtype"], Json("INT8"));
  EXPECT_EQ(conv["granularity"], Json("per-channel"));
  EXPECT_EQ(conv["axis"], Json(0));
  EXPECT_EQ(conv["macs"], Json(128));
  const Json& gemm = j["layers"].asArray()[1];
  EXPECT_EQ(gemm["precision"], Json("FP32"));
  EXPECT_EQ(gemm["granularity"], Json());
  EXPECT_EQ(j["layers"].asArray()[2]["precision"], Json("FP16"));
  EXPECT_EQ(j["summary"]["INT8"]["macs"], Json(128));
  EXPECT_EQ(j["summary"]["total-macs"], Json(192));
}

TEST(InspectTest, TablePrintsEveryLayerAndTheShare) {
  auto model = parse(kModel);
  std::ostringstream out;
  printInspectTable(inspectGraph(model->graph()), out);
  std::string text = out.str();
  EXPECT_NE(text.find("per-channel(axis 0)"), std::string::npos);
  EXPECT_NE(text.find("0.01..0.04"), std::string::npos);
  EXPECT_NE(text.find("INT8 1 layers (66.7% of MACs), FP16 1 (16.7%), FP32 1 (16.7%)"),
            std::string::npos);
}

// Dynamic H and W: MACs at the given shapes, by hand: Conv 4*64*32 outputs * 3 = 24576 and
// Gemm-like MatMul on the pooled [1,4]: 2 outputs * 4 = 8.
constexpr const char* kDynamicModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,H,W] x) => (float[1,2] y)
<float[4,3,1,1] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, float[4,2] m = {1, 2, 3, 4, 5, 6, 7, 8}>
{
  c = Conv <kernel_shape = [1, 1]> (x, w)
  p = GlobalAveragePool(c)
  f = Flatten(p)
  y = MatMul(f, m)
}
)";

TEST(InspectTest, MacsAtTheGivenShapes) {
  auto model = parse(kDynamicModel);
  ShapeRequest request;
  request.inputShapes = {{"x", {1, 3, 64, 32}}};
  InspectResult r = inspectGraph(model->graph(), request);
  EXPECT_EQ(r.totalMacs, 24576u + 8u);
  EXPECT_EQ(r.layers[0].macs, 24576u);
  EXPECT_TRUE(precisionCaveats(r).empty());
  Json summary = inspectJson(r)["summary"];
  EXPECT_EQ(summary["shapes"]["source"], Json("input-shapes"));
  EXPECT_EQ(summary["shapes"]["assumed"].size(), 0u);
}

TEST(InspectTest, AssumedDimsAreInTheTableAndTheJson) {
  auto model = parse(kDynamicModel);
  InspectResult r = inspectGraph(model->graph());
  EXPECT_EQ(r.totalMacs, 12u + 8u);  // H = W = 1
  std::ostringstream out;
  printInspectTable(r, out);
  const std::string caveat =
      "MACs assume H=1, W=1 for input 'x' (dynamic); pass --input-shapes x:1x3x<H>x<W>";
  EXPECT_NE(out.str().find(caveat), std::string::npos);
  Json summary = inspectJson(r)["summary"];
  ASSERT_EQ(summary["shapes"]["assumed"].size(), 2u);
  EXPECT_EQ(summary["shapes"]["assumed"].asArray()[0]["dim"], Json("H"));
  EXPECT_EQ(summary["shapes"]["assumed"].asArray()[0]["axis"], Json(2));
  EXPECT_EQ(summary["shapes"]["inputs"]["x"].size(), 4u);
  ASSERT_EQ(summary["caveats"].size(), 1u);
  EXPECT_EQ(summary["caveats"].asArray()[0], Json(caveat));
}

TEST(InspectTest, UnrunnableModelsFallBackToDeclaredShapes) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
g (float[2,3] a) => (float[2,4] y)
<float[3,4] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}>
{
  b = custom.Mystery(a)
  y = MatMul(b, w)
}
)");
  InspectResult r = inspectGraph(model->graph());
  EXPECT_NE(r.shapes.failure.find("Mystery"), std::string::npos);
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_FALSE(r.layers[0].macs.has_value());
  EXPECT_EQ(r.layersWithoutMacs, 1);
}

}  // namespace
}  // namespace qopt::analysis
