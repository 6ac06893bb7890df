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
