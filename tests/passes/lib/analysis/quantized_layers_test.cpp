#include "qopt/analysis/QuantizedLayers.h"

#include <gtest/gtest.h>

#include "AnalysisTestUtil.h"
#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Precision.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Verifier.h"

namespace qopt::analysis {
namespace {

using testing::parse;
using testing::producerOf;

// Two quantized convolutions; the second's input Q/DQ is shared with an Add, and its int32 bias
// comes through DequantizeLinear. A float Conv is not a quantized layer.
constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,3,3] x) => (float[1,2,3,3] y, float[1,2,3,3] side, float[1,2,3,3] plain)
<int8[2,2,1,1] wq = {10, -20, 30, 40}, float[2] ws = {0.01, 0.02}, int8[2] wz = {0, 0},
 float xs = {0.02}, float cs = {0.05}, int8 xz = {0}, int32[2] bq = {100, -50}, float[2] bs = {0.001, 0.002},
 float[2,2,1,1] fw = {1, 0, 0, 1}>
{
  xq = QuantizeLinear(x, xs, xz)
  xd = DequantizeLinear(xq, xs, xz)
  wd = DequantizeLinear <axis = 0> (wq, ws, wz)
  c1 = Conv <kernel_shape = [1, 1]> (xd, wd)
  cq = QuantizeLinear(c1, cs, xz)
  cd = DequantizeLinear(cq, cs, xz)
  bd = DequantizeLinear <axis = 0> (bq, bs)
  y = Conv <kernel_shape = [1, 1]> (cd, wd, bd)
  side = Add(cd, cd)
  plain = Conv <kernel_shape = [1, 1]> (x, fw)
}
)";

TEST(QuantizedLayersTest, FindsWeightedOpsReadingDequantize) {
  auto model = parse(kModel);
  std::vector<QuantizedLayer> layers = findQuantizedLayers(model->graph());
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].name, "c1");
  EXPECT_EQ(layers[1].name, "y");
  EXPECT_EQ(nodeAtPosition(model->graph(), layers[1].position), layers[1].node);
  EXPECT_EQ(nodeAtPosition(model->graph(), 1000), nullptr);
}

TEST(QuantizedLayersTest, DequantizeConstantPerAxisAndPerTensor) {
  auto model = parse(kModel);
  Tensor w = dequantizeConstant(*producerOf(model->graph(), "wd"));
  EXPECT_EQ(w.dataType(), DataType::Float);
  EXPECT_EQ(w.dims(), (std::vector<int64_t>{2, 2, 1, 1}));
  std::vector<double> values = w.toDoubles();
  EXPECT_FLOAT_EQ(values[0], 0.1f);   // 10 * 0.01
  EXPECT_FLOAT_EQ(values[1], -0.2f);  // -20 * 0.01
  EXPECT_FLOAT_EQ(values[2], 0.6f);   // 30 * 0.02
  EXPECT_FLOAT_EQ(values[3], 0.8f);
  Tensor b = dequantizeConstant(*producerOf(model->graph(), "bd"));
  EXPECT_FLOAT_EQ(b.toDoubles()[1], -0.1f);  // -50 * 0.002
}

TEST(QuantizedLayersTest, DequantizeConstantBlockedAndWithZeroPoint) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 21]>
g () => (float[2,4] y, float[3] z)
<int8[2,4] q = {1, 2, 3, 4, 5, 6, 7, 8}, float[2,2] s = {1, 10, 100, 1000},
 uint8[3] u = {130, 128, 0}, float us = {0.5}, uint8 uz = {128}>
{
  y = DequantizeLinear <axis = 1, block_size = 2> (q, s)
  z = DequantizeLinear(u, us, uz)
}
)");
  std::vector<double> y = dequantizeConstant(*producerOf(model->graph(), "y")).toDoubles();
  EXPECT_EQ(y, (std::vector<double>{1, 2, 30, 40, 500, 600, 7000, 8000}));
  std::vector<double> z = dequantizeConstant(*producerOf(model->graph(), "z")).toDoubles();
  EXPECT_EQ(z, (std::vector<double>{1, 0, -64}));
}

TEST(QuantizedLayersTest, ReturnToFloatMatchesTheDequantizedModel) {
  auto model = parse(kModel);
  auto copy = model->clone();
  Node* y = producerOf(copy->graph(), "y");
  BypassResult result = returnToFloat(*y);
  EXPECT_EQ(result.activationsBypassed, 1);
  EXPECT_EQ(result.constantsDequantized, 2);  // weight and bias
  EXPECT_TRUE(result.kept.empty());
  EXPECT_TRUE(verifyModel(*copy).empty());
  // y reads c1 directly now; the Add still reads the shared Q/DQ.
  EXPECT_EQ(y->input(0)->name(), "c1");
  EXPECT_TRUE(producerOf(copy->graph(), "cd") != nullptr);
  EXPECT_TRUE(y->input(1)->isInitializer());
  EXPECT_EQ(y->input(1)->initializer()->dataType(), DataType::Float);
  // The first layer is untouched and its weight DequantizeLinear still exists.
  EXPECT_EQ(findQuantizedLayers(copy->graph()).size(), 1u);
  EXPECT_NE(producerOf(copy->graph(), "wd"), nullptr);

  // Numerically: y now equals Conv(c1, dequantized weight) + dequantized bias.
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 2, 5);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  SpillStore beforeStore = collectOutputs(workers, model->graph(), source, uint64_t{1} << 30);
  SpillStore afterStore = collectOutputs(workers, copy->graph(), source, uint64_t{1} << 30);
  // y now reads c1 unrounded: it differs by at most half a step of c1's scale (0.025, c1 stays
  // far from saturation) times the sum of |weights| of a channel (at most 1.4).
  ASSERT_EQ(beforeStore.size(), samples.size());
  ASSERT_EQ(afterStore.size(), samples.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    const std::vector<interp::Array> before = beforeStore.get(s);
    const std::vector<interp::Array> after = afterStore.get(s);
    const interp::Array& a = before[0];
    const interp::Array& b = after[0];
    for (int64_t i = 0; i < a.numel(); ++i) {
      EXPECT_NEAR(a.getDouble(i), b.getDouble(i), 0.025 * 1.4 + 1e-6);
    }
    // The float Conv is unchanged exactly.
    for (int64_t i = 0; i < before[2].numel(); ++i) {
      EXPECT_EQ(before[2].getDouble(i), after[2].getDouble(i));
    }
  }
}

// The weight's values before quantization, recorded for its codes as insert-qdq records them.
TensorPtr recordOriginalWeight(Model& model) {
  auto original = std::make_shared<Tensor>(
      Tensor::fromFloats({2, 2, 1, 1}, std::vector<float>{0.104f, -0.198f, 0.61f, 0.79f}));
  model.recordUnrounded(*model.graph().findValue("wq")->initializer(), original);
  return original;
}

TEST(QuantizedLayersTest, ReturnToFloatRestoresRecordedValuesBeforeQuantization) {
  auto model = parse(kModel);
  recordOriginalWeight(*model);
  // The record is the codes' buffer's: a clone shares it.
  auto copy = model->clone();
  Node* y = producerOf(copy->graph(), "y");
  BypassResult result = returnToFloat(*y);
  EXPECT_EQ(result.constantsDequantized, 2);
  EXPECT_EQ(result.constantsRestored, 1);  // the weight; the bias has no record
  EXPECT_EQ(y->input(1)->initializer()->toFloats(),
            (std::vector<float>{0.104f, -0.198f, 0.61f, 0.79f}));
  EXPECT_FLOAT_EQ(y->input(2)->initializer()->toFloats()[1], -0.1f);  // -50 * 0.002
  EXPECT_TRUE(verifyModel(*copy).empty());
  // The first layer still reads the codes.
  EXPECT_FLOAT_EQ(dequantizeConstant(*producerOf(copy->graph(), "wd")).toFloats()[0], 0.1f);
}

TEST(QuantizedLayersTest, CodesChangedSinceTheRecordAreDequantized) {
  auto model = parse(kModel);
  recordOriginalWeight(*model);
  // A later pass rewriting the codes installs a new buffer: the record no longer applies.
  Value* codes = model->graph().findValue("wq");
  auto rewritten = std::make_shared<Tensor>(*codes->initializer());
  rewritten->setRawBytes(std::vector<std::byte>(4, std::byte{1}));
  codes->setInitializer(rewritten);
  EXPECT_FALSE(unroundedConstant(*producerOf(model->graph(), "wd")).has_value());
  Node* y = producerOf(model->graph(), "y");
  BypassResult result = returnToFloat(*y);
  EXPECT_EQ(result.constantsRestored, 0);
  EXPECT_FLOAT_EQ(y->input(1)->initializer()->toFloats()[0], 0.01f);  // 1 * 0.01
}

TEST(QuantizedLayersTest, ReturningEveryLayerLeavesNoUnusedQdq) {
  auto model = parse(kModel);
  for (const QuantizedLayer& layer : findQuantizedLayers(model->graph()))
    returnToFloat(*layer.node);
  EXPECT_TRUE(findQuantizedLayers(model->graph()).empty());
  EXPECT_TRUE(verifyModel(*model).empty());
  // The shared activation Q/DQ stays for the Add; the weight and bias DequantizeLinear go.
  EXPECT_NE(producerOf(model->graph(), "cd"), nullptr);
  EXPECT_EQ(model->graph().findValue("wd"), nullptr);
  EXPECT_EQ(model->graph().findValue("wq"), nullptr);
  EXPECT_EQ(model->graph().findValue("bd"), nullptr);
}

TEST(QuantizedLayersTest, Float16FallbackCastsAroundTheLayer) {
  auto model = parse(kModel);
  Node* c1 = producerOf(model->graph(), "c1");
  returnToFloat(*c1, FloatFallback::Float16);
  EXPECT_TRUE(verifyModel(*model).empty());
  ASSERT_NE(c1->input(0)->producer(), nullptr);
  EXPECT_EQ(c1->input(0)->producer()->opType(), "Cast");
  EXPECT_EQ(c1->input(1)->initializer()->dataType(), DataType::Float16);
  // Readers of c1's result read a Cast back to float.
  Value* out = c1->output(0);
  ASSERT_EQ(out->uses().size(), 1u);
  EXPECT_EQ(out->uses()[0].user->opType(), "Cast");
  TensorInfoMap info =
      observeTensorInfo(model->graph(), randomSamples(inputSpecs(model->graph()), 1, 0)[0].inputs);
  LayerInfo layer = classifyLayer(*c1, info);
  EXPECT_EQ(layer.precision, Precision::Fp16);
  // The model still runs and gives float outputs.
  std::vector<Sample> samples = randomSamples(inputSpecs(model->graph()), 1, 1);
  SampleWorkers workers(2, uint64_t{1} << 30);
  SampleSource source(samples, "held");
  SpillStore outputs = collectOutputs(workers, model->graph(), source, uint64_t{1} << 30);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs.get(0)[0].dataType(), DataType::Float);
}

TEST(QuantizedLayersTest, QatWeightsQuantizedInTheGraphReturnAsDequantizedValues) {
  // A QAT export stores the float weight and quantizes it in the graph: left in float, the layer
  // reads DequantizeLinear(QuantizeLinear(w)) evaluated (0.26 -> 3 * 0.1 = 0.3), not w itself.
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,1,1] x) => (float[1,2,1,1] y)
<float[2,2,1,1] w = {0.26, -0.04, 20.0, 0.149}, float s = {0.1}, int8 z = {0}>
{
  xq = QuantizeLinear(x, s, z)
  xd = DequantizeLinear(xq, s, z)
  wq = QuantizeLinear(w, s, z)
  wd = DequantizeLinear(wq, s, z)
  y = Conv <kernel_shape = [1, 1]> (xd, wd)
}
)");
  TensorInfoMap info;
  Node* y = producerOf(model->graph(), "y");
  LayerInfo layer = classifyLayer(*y, info);
  EXPECT_EQ(layer.precision, Precision::Int8);
  EXPECT_EQ(layer.weightType, DataType::Int8);
  EXPECT_TRUE(layer.weight->constantData);
  BypassResult r = returnToFloat(*y);
  EXPECT_EQ(r.constantsDequantized, 1);
  EXPECT_EQ(r.activationsBypassed, 1);
  std::vector<double> w = y->input(1)->initializer()->toDoubles();
  // Rounded half to even and saturated to int8: 0.26 -> 3, -0.04 -> 0, 20 -> 127, 0.149 -> 1.
  EXPECT_FLOAT_EQ(w[0], 0.3f);
  EXPECT_FLOAT_EQ(w[1], 0.0f);
  EXPECT_FLOAT_EQ(w[2], 12.7f);
  EXPECT_FLOAT_EQ(w[3], 0.1f);
  EXPECT_EQ(model->graph().findValue("wq"), nullptr);
  EXPECT_TRUE(verifyModel(*model).empty());
}

TEST(QuantizedLayersTest, DequantizeOfARunTimeTensorIsKept) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (int8[1,2,3,3] xq) => (float[1,2,3,3] y)
<int8[2,2,1,1] wq = {1, 2, 3, 4}, float ws = {0.1}, float xs = {0.5}>
{
  xd = DequantizeLinear(xq, xs)
  wd = DequantizeLinear(wq, ws)
  y = Conv <kernel_shape = [1, 1]> (xd, wd)
}
)");
  BypassResult r = returnToFloat(*producerOf(model->graph(), "y"));
  EXPECT_EQ(r.activationsBypassed, 0);
  EXPECT_EQ(r.constantsDequantized, 1);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_NE(r.kept[0].find("run-time tensor"), std::string::npos);
}

}  // namespace
}  // namespace qopt::analysis
