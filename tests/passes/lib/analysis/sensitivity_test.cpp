#include "qopt/analysis/Sensitivity.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "AnalysisTestUtil.h"

namespace qopt::analysis {
namespace {

using testing::parse;

constexpr uint64_t kKept = uint64_t{1} << 30;

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
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  SpillStore reference = collectOutputs(workers, floatReference(*model)->graph(), source, kKept);
  SensitivityResult result = measureSensitivity(workers, *model, source, reference, true);
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
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  SpillStore reference = collectOutputs(workers, floatModel->graph(), source, kKept);
  // The float copy compared with itself has no error.
  ErrorMetrics self = worstOf(outputErrors(workers, floatModel->graph(), source, reference));
  EXPECT_EQ(self.mse, 0.0);
}

// ONNX Runtime's QDQ layout quantizes every op's output; the next layer re-quantizes the same
// values on the same grid. A layer's own input Q/DQ then changes nothing unless the pairs it
// does not own are removed too, which withOnlyLayersQuantized does.
constexpr const char* kRequantized = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x) => (float[1,2,4,4] y)
<int8[2,2,1,1] wq = {100, 20, -30, 90}, float ws = {0.01}, int8 z = {0}, float coarse = {0.25}>
{
  aq = QuantizeLinear(x, coarse, z)
  ad = DequantizeLinear(aq, coarse, z)
  r = Relu(ad)
  rq = QuantizeLinear(r, coarse, z)
  rd = DequantizeLinear(rq, coarse, z)
  w = DequantizeLinear(wq, ws, z)
  y = Conv <kernel_shape = [1, 1]> (rd, w)
}
)";

TEST(SensitivityTest, OnlyTheLayersOwnQuantizationIsKept) {
  auto model = parse(kRequantized);
  std::vector<size_t> positions = quantizedLayerPositions(*model);
  ASSERT_EQ(positions.size(), 1u);
  auto reference = floatReference(*model);
  EXPECT_EQ(reference->graph().findValue("ad"), nullptr);  // the Relu's pair went too
  EXPECT_EQ(reference->graph().findValue("rd"), nullptr);
  auto only = withOnlyLayersQuantized(*model, positions);
  EXPECT_EQ(only->graph().findValue("ad"), nullptr);
  EXPECT_NE(only->graph().findValue("rd"), nullptr);
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 4, 0);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  SpillStore floatOutputs = collectOutputs(workers, reference->graph(), source, kKept);
  ErrorMetrics m = worstOf(outputErrors(workers, only->graph(), source, floatOutputs));
  EXPECT_GT(m.mse, 0.0);  // the layer's own rounding shows
  SensitivityResult result = measureSensitivity(workers, *model, source, floatOutputs, false);
  EXPECT_EQ(result.layers[0].onlyQuantized.mse, m.mse);
}

TEST(SensitivityTest, QuantizedGraphOutputsBecomeFloatInTheReference) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) <float s = {0.5}, int8 z = {0}>
{
  q = QuantizeLinear(x, s, z)
  y = DequantizeLinear(q, s, z)
}
)");
  auto reference = floatReference(*model);
  EXPECT_EQ(reference->graph().outputs()[0]->name(), "x");
  EXPECT_EQ(reference->graph().numNodes(), 0u);
}

// The local measure: each layer against a float twin reading the same upstream values before
// their Q/DQ, all layers in one run per sample. The saturating layer is the one with the lowest
// local SQNR; the others cost little (above 20 dB).
TEST(LocalSensitivityTest, RanksTheSaturatingLayerFirstInOneRun) {
  auto model = parse(kModel);
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 4, 0);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  std::vector<LocalSensitivity> local = measureLocalSensitivity(workers, *model, source);
  ASSERT_EQ(local.size(), 3u);
  EXPECT_EQ(local[0].name, "second");
  EXPECT_LT(local[0].error.sqnrDb, 10.0);
  EXPECT_GT(local[1].error.sqnrDb, 20.0);
  EXPECT_GT(local[2].error.sqnrDb, 20.0);
  EXPECT_GT(local[0].error.count, 0u);
  // The model itself is left alone.
  EXPECT_EQ(findQuantizedLayers(model->graph()).size(), 3u);
}

// The twin reads the value before QuantizeLinear also when TensorRT-style ops (here a Reshape)
// sit between the DequantizeLinear and the layer: the layer's own input rounding then shows;
// without the copied Reshape the twin would read the quantized values and see no error.
TEST(LocalSensitivityTest, FollowsOpsBetweenDequantizeAndLayer) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x) => (float[1,2] y)
<int8[4,2] wq = {10, 20, 30, 40, 50, 60, 70, 80}, float ws = {0.01}, int8 z = {0},
 float coarse = {0.5}, int64[2] shape = {2, 4}>
{
  q = QuantizeLinear(x, coarse, z)
  d = DequantizeLinear(q, coarse, z)
  r = Reshape(d, shape)
  w = DequantizeLinear(wq, ws, z)
  m = MatMul(r, w)
  y = ReduceSum <keepdims = 0> (m)
}
)");
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 3, 1);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  std::vector<LocalSensitivity> local = measureLocalSensitivity(workers, *model, source);
  ASSERT_EQ(local.size(), 1u);
  EXPECT_EQ(local[0].name, "m");
  EXPECT_GT(local[0].error.mse, 0.0);
  EXPECT_LT(local[0].error.sqnrDb, 40.0);
}

// Weights whose values before quantization the model recorded (insert-qdq does): the float
// reference and a layer's float twin read those, so a weight's rounding error counts as that
// layer's error; without the record a weight-only layer shows none.
TEST(LocalSensitivityTest, RecordedWeightsMakeTheWeightErrorTheLayers) {
  constexpr const char* kWeightOnly = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2] x) => (float[1,2] y)
<int8[2,2] wq = {10, 20, 30, 40}, float ws = {0.01}, int8 z = {0}>
{
  w = DequantizeLinear(wq, ws, z)
  y = MatMul(x, w)
}
)";
  auto model = parse(kWeightOnly);
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 3, 1);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  EXPECT_TRUE(measureLocalSensitivity(workers, *model, source).empty());

  const std::vector<float> original{0.104f, 0.196f, 0.303f, 0.398f};
  model->recordUnrounded(*model->graph().findValue("wq")->initializer(),
                         std::make_shared<Tensor>(Tensor::fromFloats({2, 2}, original)));
  std::vector<LocalSensitivity> local = measureLocalSensitivity(workers, *model, source);
  ASSERT_EQ(local.size(), 1u);
  EXPECT_GT(local[0].error.mse, 0.0);
  EXPECT_LT(local[0].error.sqnrDb, 60.0);

  // The float reference is MatMul(x, original) itself.
  SpillStore reference = collectOutputs(workers, floatReference(*model)->graph(), source, kKept);
  ASSERT_EQ(reference.size(), samples.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    const interp::Array& x = samples[s].inputs.at("x");
    const interp::Array y = reference.get(s)[0];
    for (int64_t j = 0; j < 2; ++j) {
      const double expected =
          x.getDouble(0) * original[static_cast<size_t>(j)] + x.getDouble(1) * original[2 + j];
      EXPECT_NEAR(y.getDouble(j), expected, 1e-6);
    }
  }
}

// Samples run in parallel; the outputs are each sample's own, in sample order.
TEST(ComparisonParallelTest, CollectOutputsKeepsSampleOrder) {
  auto model = parse(kModel);
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 9, 3);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  SpillStore all = collectOutputs(workers, model->graph(), source, kKept);
  ASSERT_EQ(all.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    SampleSource single(std::vector<Sample>{samples[i]}, "held");
    SpillStore one = collectOutputs(workers, model->graph(), single, kKept);
    ASSERT_EQ(one.size(), 1u);
    const interp::Array alone = one.get(0)[0];
    const interp::Array together = all.get(i)[0];
    ASSERT_EQ(alone.numel(), together.numel());
    for (int64_t e = 0; e < together.numel(); ++e) {
      ASSERT_EQ(alone.getDouble(e), together.getDouble(e)) << "sample " << i;
    }
  }
}

// The local measure sums each sample's noise in sample order: the same bits on one worker as on
// three.
TEST(LocalSensitivityTest, SameResultWhateverTheThreadCount) {
  auto model = parse(kModel);
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 7, 2);
  SampleSource source(samples, "held");
  SampleWorkers one(1, uint64_t{1} << 30);
  SampleWorkers three(3, uint64_t{1} << 30);
  std::vector<LocalSensitivity> a = measureLocalSensitivity(one, *model, source);
  std::vector<LocalSensitivity> b = measureLocalSensitivity(three, *model, source);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].name, b[k].name);
    EXPECT_EQ(a[k].error.count, b[k].error.count);
    EXPECT_EQ(a[k].error.mse, b[k].error.mse);
    EXPECT_EQ(a[k].error.sqnrDb, b[k].error.sqnrDb);
    EXPECT_EQ(a[k].error.cosine, b[k].error.cosine);
  }
}

}  // namespace
}  // namespace qopt::analysis
