#include "qopt/analysis/Sensitivity.h"

#include <gtest/gtest.h>

#include "AnalysisTestUtil.h"

namespace qopt::analysis {
namespace {

using testing::parse;

// Three quantized 1x1 convolutions in a chain. The second one's input is quantized with a scale
// far too small (it saturates at 127 * 0.001): that layer costs the most accuracy.
constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x) => (float[1,2,4,4] y)
<int8[2,2,1,1] wq = {100, 20, -30, 90}, float ws = {0.01}, int8 z = {0},
 float good = {0.03}, float tiny = {0.001}>
{
  aq = QuantizeLinear(x, good, z)
  ad = DequantizeLinear(aq, good, z)
  w1 = DequantizeLinear(wq, ws, z)
  first = Conv <kernel_shape = [1, 1]> (ad, w1)
  bq = QuantizeLinear(first, tiny, z)
  bd = DequantizeLinear(bq, tiny, z)
  w2 = DequantizeLinear(wq, ws, z)
  second = Conv <kernel_shape = [1, 1]> (bd, w2)
  cq = QuantizeLinear(second, good, z)
  cd = DequantizeLinear(cq, good, z)
  w3 = DequantizeLinear(wq, ws, z)
  y = Conv <kernel_shape = [1, 1]> (cd, w3)
}
)";

TEST(SensitivityTest, RanksTheSaturatingLayerFirst) {
  auto model = parse(kModel);
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 4, 0);
  std::vector<size_t> all = quantizedLayerPositions(*model);
  ASSERT_EQ(all.size(), 3u);
  auto floatModel = withLayersInFloat(*model, all);
  OutputSets reference = runOutputs(floatModel->graph(), samples);
  SensitivityResult result = measureSensitivity(*model, samples, reference, true);
  ASSERT_EQ(result.layers.size(), 3u);
  EXPECT_EQ(result.layers[0].name, "second");
  EXPECT_EQ(result.layers[0].op, "Conv");
  EXPECT_LT(result.layers[0].onlyQuantized.cosine, 0.9);
  // The other two alone cost little.
  EXPECT_GT(result.layers[1].onlyQuantized.cosine, 0.999);
  EXPECT_GT(result.layers[2].onlyQuantized.cosine, 0.999);
  // Leaving only the harmful layer in float recovers nearly everything.
  ASSERT_TRUE(result.layers[0].onlyFloat.has_value());
  EXPECT_GT(result.layers[0].onlyFloat->cosine, 0.999);
  EXPECT_LT(result.allQuantized.cosine, 0.9);
}

TEST(SensitivityTest, AllFloatCopyHasNoQuantizedLayersAndLeavesTheOriginalAlone) {
  auto model = parse(kModel);
  std::vector<size_t> all = quantizedLayerPositions(*model);
  auto floatModel = withLayersInFloat(*model, all);
  EXPECT_TRUE(findQuantizedLayers(floatModel->graph()).empty());
  EXPECT_EQ(findQuantizedLayers(model->graph()).size(), 3u);
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 2, 0);
  OutputSets reference = runOutputs(floatModel->graph(), samples);
  // The float copy compared with itself has no error.
  ErrorMetrics self = worstOf(outputErrors(floatModel->graph(), samples, reference));
  EXPECT_EQ(self.mse, 0.0);
}

}  // namespace
}  // namespace qopt::analysis
