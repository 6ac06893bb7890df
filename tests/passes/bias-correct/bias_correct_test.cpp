// bias-correct on layers whose error is known in closed form: a constant input whose values
// quantize exactly, weights whose int8 rounding error is computed here, so the corrected layer's
// output must equal the float layer's (the weights' error removed, analytic) or also lose the
// activation's error (empirical). The passes run as the driver runs them: insert-qdq then
// bias-correct in one pipeline, which keeps the float model for bias-correct to compare with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "PipelineTestSupport.h"
#include "QuantTestUtil.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/TextFormat.h"

namespace qopt {
namespace {

using quant::testing::ScratchDir;

interp::Array floats(interp::Shape shape, const std::vector<float>& values) {
  interp::Array a(DataType::Float, std::move(shape));
  std::copy(values.begin(), values.end(), a.data<float>());
  return a;
}

/// Runs `pipeline` on `model` with one calibration sample `x`; the last pass's result.
PassResult runPipeline(Model& model, const std::string& pipeline, const interp::Array& x,
                       const ScratchDir& dir,
                       const PassRegistry& registry = testing::builtinPasses()) {
  std::filesystem::create_directories(dir / "calib");
  interp::writeNpy(dir / "calib" / "x.npy", x);
  return testing::runPipeline(model, pipeline, (dir / "calib").string(), registry).result;
}

/// Whether a Missed remark of `result` holds each of `parts`: the pass said why it left a layer.
bool explainsMissed(const PassResult& result, std::initializer_list<std::string_view> parts) {
  for (const Remark& remark : result.remarks) {
    if (remark.kind == Remark::Kind::Missed &&
        std::all_of(parts.begin(), parts.end(), [&](std::string_view part) {
          return remark.message.find(part) != std::string::npos;
        })) {
      return true;
    }
  }
  return false;
}

std::vector<float> runModel(const Model& model, const interp::Array& x) {
  interp::Interpreter interpreter(model.graph());
  std::vector<interp::Array> out = interpreter.run({{"x", x}});
  return out.front().toFloatVector();
}

/// Per-channel int8 quantize-dequantize of one row (the channel's own max |w|), as insert-qdq
/// quantizes weights.
std::vector<double> int8Row(const std::vector<double>& row) {
  double amax = 0;
  for (double w : row) amax = std::max(amax, std::fabs(w));
  const float scale = static_cast<float>(amax / 127.0);
  std::vector<double> out;
  for (double w : row) {
    out.push_back(static_cast<double>(static_cast<float>(std::nearbyint(w / scale)) * scale));
  }
  return out;
}

// W = [[1.0, 0.3], [-0.45, 0.7]]: 0.3 and 0.45 and 0.7 round off the int8 grid of their row.
const std::vector<std::vector<double>> kWeights = {{1.0, 0.3}, {-0.45, 0.7}};
const std::vector<double> kBias = {0.25, -0.5};

/// y[c] of the float layer and of the layer with int8 weights, for input channels (a, b).
std::vector<double> layerOutput(bool quantized, double a, double b) {
  std::vector<double> y;
  for (size_t c = 0; c < 2; ++c) {
    std::vector<double> w = quantized ? int8Row(kWeights[c]) : kWeights[c];
    y.push_back(w[0] * a + w[1] * b + kBias[c]);
  }
  return y;
}

constexpr const char* kConv = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 2, 3, 3] y)
    <float[2, 2, 1, 1] w = {1.0, 0.3, -0.45, 0.7}, float[2] b = {0.25, -0.5}> {
  y = Conv <kernel_shape = [1, 1]> (x, w, b)
}
)";

// Input channel 0 holds 2 everywhere, channel 1 holds -2: amax 2, both exact in int8.
interp::Array convInput(double a = 2, double b = -2) {
  std::vector<float> values(18);
  for (size_t i = 0; i < 9; ++i) {
    values[i] = static_cast<float>(a);
    values[9 + i] = static_cast<float>(b);
  }
  return floats({1, 2, 3, 3}, values);
}

void expectChannels(const std::vector<float>& y, size_t perChannel,
                    const std::vector<double>& expected, double tolerance) {
  for (size_t c = 0; c < expected.size(); ++c) {
    double mean = 0;
    for (size_t i = 0; i < perChannel; ++i) mean += y[c * perChannel + i];
    mean /= static_cast<double>(perChannel);
    EXPECT_NEAR(mean, expected[c], tolerance) << "channel " << c;
  }
}

TEST(BiasCorrect, Conv1x1AnalyticRemovesTheWeightsError) {
  ScratchDir dir;
  auto model = parseModelText(kConv, "conv.onnxtxt");
  const interp::Array x = convInput();
  const std::vector<double> exact = layerOutput(false, 2, -2);
  const std::vector<double> rounded = layerOutput(true, 2, -2);
  ASSERT_GT(std::fabs(rounded[1] - exact[1]), 1e-3);  // the weights' error is visible

  auto quantized = model->clone();
  runPipeline(*quantized, "insert-qdq{calibrator=max min-channels=0}", x, dir);
  expectChannels(runModel(*quantized, x), 9, rounded, 1e-6);

  PassResult result =
      runPipeline(*model, "insert-qdq{calibrator=max min-channels=0},bias-correct", x, dir);
  EXPECT_EQ(result.statistics["biases-corrected"], 1);
  expectChannels(runModel(*model, x), 9, exact, 1e-6);
}

// An input that int8 cannot hold exactly (0.7 on a grid of 2/127): analytic removes only the
// weights' error, empirical the activation's too.
TEST(BiasCorrect, EmpiricalAlsoRemovesTheActivationsError) {
  ScratchDir dir;
  std::vector<float> values(18, 0.7f);
  for (size_t i = 0; i < 9; ++i) values[i] = 2.0f;
  values[9] = -2.0f;  // channel 1: one -2 sets amax, the rest 0.7 (off the grid)
  const interp::Array x = floats({1, 2, 3, 3}, values);
  auto model = parseModelText(kConv, "conv.onnxtxt");
  double meanB = (-2.0 + 8 * 0.7) / 9;
  const std::vector<double> exact = layerOutput(false, 2, meanB);

  auto analytic = parseModelText(kConv, "conv.onnxtxt");
  runPipeline(*analytic, "insert-qdq{calibrator=max min-channels=0},bias-correct", x, dir);
  auto empirical = parseModelText(kConv, "conv.onnxtxt");
  runPipeline(*empirical, "insert-qdq{calibrator=max min-channels=0},bias-correct{mode=empirical}",
              x, dir);
  expectChannels(runModel(*empirical, x), 9, exact, 1e-6);
  // Analytic is off by the activation's error, w[c][1] * (q(0.7) - 0.7) * 8 / 9.
  const double q07 = std::nearbyint(0.7 / (2.0f / 127.0f)) * (2.0f / 127.0f);
  std::vector<float> y = runModel(*analytic, x);
  for (size_t c = 0; c < 2; ++c) {
    double mean = 0;
    for (size_t i = 0; i < 9; ++i) mean += y[c * 9 + i];
    mean /= 9;
    const double activationError = int8Row(kWeights[c])[1] * (q07 - 0.7) * 8 / 9;
    EXPECT_NEAR(mean - exact[c], activationError, 1e-6) << "channel " << c;
    EXPECT_GT(std::fabs(activationError), 1e-4);
  }
}

// Gemm as PyTorch exports Linear (transB=1, C), and a Conv without a bias, which gets one.
TEST(BiasCorrect, GemmAndConvWithoutBias) {
  ScratchDir dir;
  auto gemm = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2] x) => (float[1, 2] y)
    <float[2, 2] w = {1.0, 0.3, -0.45, 0.7}, float[2] b = {0.25, -0.5}> {
  y = Gemm <transB = 1, beta = 2.0> (x, w, b)
}
)",
                             "gemm.onnxtxt");
  const interp::Array x = floats({1, 2}, {2.0f, -2.0f});
  runPipeline(*gemm, "insert-qdq{calibrator=max min-channels=0},bias-correct", x, dir);
  std::vector<double> exact = layerOutput(false, 2, -2);
  for (size_t c = 0; c < 2; ++c) exact[c] += kBias[c];  // beta = 2 counts the bias twice
  expectChannels(runModel(*gemm, x), 1, exact, 1e-6);

  auto conv = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 2, 3, 3] y) <float[2, 2, 1, 1] w = {1.0, 0.3, -0.45, 0.7}> {
  y = Conv <kernel_shape = [1, 1]> (x, w)
}
)",
                             "nobias.onnxtxt");
  PassResult result = runPipeline(*conv, "insert-qdq{calibrator=max min-channels=0},bias-correct",
                                  convInput(), dir);
  EXPECT_EQ(result.statistics["biases-added"], 1);
  std::vector<double> noBias = layerOutput(false, 2, -2);
  for (size_t c = 0; c < 2; ++c) noBias[c] -= kBias[c];
  expectChannels(runModel(*conv, convInput()), 9, noBias, 1e-6);
}

// A MatMul's bias lives in the Add after it; without one, an Add is inserted and the graph
// output keeps its name.
TEST(BiasCorrect, MatMulBiasAddIsCorrectedOrAdded) {
  ScratchDir dir;
  const interp::Array x = floats({1, 2}, {2.0f, -2.0f});
  // MatMul weights are [K, N]: column c is output channel c's row of kWeights.
  const char* withAdd = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2] x) => (float[1, 2] y)
    <float[2, 2] w = {1.0, -0.45, 0.3, 0.7}, float[2] b = {0.25, -0.5}> {
  m = MatMul(x, w)
  y = Add(m, b)
}
)";
  auto model = parseModelText(withAdd, "matmul.onnxtxt");
  PassResult result =
      runPipeline(*model, "insert-qdq{calibrator=max min-channels=0},bias-correct", x, dir);
  EXPECT_EQ(result.statistics["biases-corrected"], 1);
  expectChannels(runModel(*model, x), 1, layerOutput(false, 2, -2), 1e-6);

  auto bare = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2] x) => (float[1, 2] y) <float[2, 2] w = {1.0, -0.45, 0.3, 0.7}> {
  y = MatMul(x, w)
}
)",
                             "bare.onnxtxt");
  result = runPipeline(*bare, "insert-qdq{calibrator=max min-channels=0},bias-correct", x, dir);
  EXPECT_EQ(result.statistics["biases-added"], 1);
  ASSERT_EQ(bare->graph().outputs().size(), 1u);
  EXPECT_EQ(bare->graph().outputs()[0]->name(), "y");
  EXPECT_TRUE(bare->graph().outputs()[0]->producer()->is("Add"));
  std::vector<double> noBias = layerOutput(false, 2, -2);
  for (size_t c = 0; c < 2; ++c) noBias[c] -= kBias[c];
  expectChannels(runModel(*bare, x), 1, noBias, 1e-6);
}

// ONNX Runtime's QDQ format keeps the bias as int32 behind a DequantizeLinear (scale
// input scale * weight scale): it is requantized, so the output is right to half a step. (Its
// uint8 activation holds 2 as 1.992: the empirical form removes that error too.)
TEST(BiasCorrect, Int32BiasIsRequantized) {
  ScratchDir dir;
  auto model = parseModelText(kConv, "conv.onnxtxt");
  const interp::Array x = convInput();
  PassResult result = runPipeline(
      *model, "insert-qdq{calibrator=max target=ort min-channels=0},bias-correct{mode=empirical}",
      x, dir);
  EXPECT_EQ(result.statistics["biases-corrected"], 1);
  bool int32Bias = false;
  for (const Node* node : model->graph().nodes()) {
    if (node->is("Conv")) {
      const Node* dq = node->input(2)->producer();
      int32Bias = dq != nullptr && dq->is("DequantizeLinear");
    }
  }
  EXPECT_TRUE(int32Bias);
  // The bias step: input scale (4/255, uint8 over [-2, 2]) times the weight scale (max 1/127).
  const double step = (4.0 / 255.0) * (1.0 / 127.0);
  expectChannels(runModel(*model, x), 9, layerOutput(false, 2, -2), step);
}

// equalize rescales Conv1's output channels by a_c (weights and bias) and Conv2's input
// channels by 1 / a_c, and records it; bias-correct compares each layer with its float version
// mapped through those records, so it corrects both layers, and Conv1's output after it is
// a_c times the float Conv1's exactly (the input, 2 and -2, is exact in int8; analytic mode
// removes the weights' error).
TEST(BiasCorrect, LayersThatEqualizeRescaledAreCorrected) {
  ScratchDir dir;
  constexpr const char* kPair = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 2, 3, 3] y)
    <float[2, 2, 1, 1] w1 = {1.0, 0.3, -0.45, 0.7}, float[2] b1 = {0.25, 3.5},
     float[2, 2, 1, 1] w2 = {4.0, 0.1, -3.0, 0.2}, float[2] b2 = {0.5, -0.5}> {
  y1 = Conv <kernel_shape = [1, 1]> (x, w1, b1)
  r = Relu(y1)
  y = Conv <kernel_shape = [1, 1]> (r, w2, b2)
}
)";
  const char* quantize = "equalize{absorb-bias=false},insert-qdq{calibrator=max min-channels=0}";
  const interp::Array x = convInput();
  auto firstBias = [](const Model& model) {
    for (const Node* node : model.graph().nodes()) {
      if (node->is("Conv")) return node->input(2)->initializer()->toDoubles();
    }
    return std::vector<double>{};
  };
  // a_c from the equalized bias (b1' = a_c b1).
  auto equalized = parseModelText(kPair, "pair.onnxtxt");
  runPipeline(*equalized, quantize, x, dir);
  const std::vector<double> scaledBias = firstBias(*equalized);
  ASSERT_EQ(scaledBias.size(), 2u);
  const std::vector<double> a = {scaledBias[0] / 0.25, scaledBias[1] / 3.5};
  EXPECT_GT(std::fabs(a[0] - 1.0), 0.1);  // equalize did rescale the channels
  EXPECT_GT(std::fabs(a[1] - 1.0), 0.1);

  auto model = parseModelText(kPair, "pair.onnxtxt");
  PassResult result = runPipeline(*model, std::string(quantize) + ",bias-correct", x, dir);
  EXPECT_EQ(result.statistics["biases-corrected"], 2);
  EXPECT_EQ(result.statistics["layers-skipped"], 0);
  for (const Remark& remark : result.remarks) {
    EXPECT_NE(remark.kind, Remark::Kind::Missed) << remark.subject << ": " << remark.message;
  }
  model->graph().addOutput(model->graph().findValue("y1"));
  interp::Interpreter interpreter(model->graph());
  const std::vector<float> y1 = interpreter.run({{"x", x}}).at(1).toFloatVector();
  std::vector<double> expected = layerOutput(false, 2, -2);  // W1 x + b1 with b1 = kBias...
  expected[1] += 3.5 - kBias[1];                             // ...but b1[1] = 3.5
  for (size_t c = 0; c < 2; ++c) expected[c] *= a[c];
  expectChannels(y1, 9, expected, 1e-5);
}

// After a HardSwish, equalize balances a depthwise input with a Mul it inserts (x * 1/s, the
// weights times s): the float layer reads the Mul's input, and with the balanced activation
// exact in int8 (channels 5/3 and -1/3 * 5), the corrected output is the float one exactly.
TEST(BiasCorrect, DepthwiseLayerBehindEqualizesMulIsCorrected) {
  ScratchDir dir;
  auto model = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 2, 2, 2] y)
    <float[2, 1, 2, 2] w = {1.0, 0.3, -0.45, 0.7, 0.21, -0.66, 0.9, -0.37}, float[2] b = {0.25, -0.5}> {
  h = HardSwish(x)
  y = Conv <kernel_shape = [2, 2], group = 2> (h, w, b)
}
)",
                              "dw.onnxtxt");
  const interp::Array x = convInput();  // channel 0: 2, channel 1: -2
  PassResult result = runPipeline(
      *model, "equalize,insert-qdq{calibrator=max min-channels=0},bias-correct", x, dir);
  bool inserted = false;
  for (const Node* node : model->graph().nodes()) inserted = inserted || node->is("Mul");
  ASSERT_TRUE(inserted);  // equalize balanced the input with a Mul
  EXPECT_EQ(result.statistics["biases-corrected"], 1);
  EXPECT_EQ(result.statistics["layers-skipped"], 0);
  const double h0 = 2.0 * 5.0 / 6.0, h1 = -2.0 * 1.0 / 6.0;  // HardSwish(2), HardSwish(-2)
  const std::vector<double> exact = {(1.0 + 0.3 - 0.45 + 0.7) * h0 + 0.25,
                                     (0.21 - 0.66 + 0.9 - 0.37) * h1 - 0.5};
  expectChannels(runModel(*model, x), 4, exact, 1e-5);
}

// The built-in passes and `P`.
template <class P>
PassRegistry builtinsAnd() {
  PassRegistry registry;
  PluginLoader loader;
  loader.loadDirectory(builtinPassDirectory(), registry);
  registry.add<P>();
  return registry;
}

// Multiplies output channel 1 of `conv` (weights and bias, new initializers) by `factor`.
void scaleChannel1(Graph& graph, Node& conv, double factor) {
  for (uint32_t input : {1u, 2u}) {
    const Tensor& tensor = *conv.input(input)->initializer();
    std::vector<double> values = tensor.toDoubles();
    const size_t perChannel = values.size() / static_cast<size_t>(tensor.dims()[0]);
    for (size_t i = perChannel; i < 2 * perChannel; ++i) values[i] *= factor;
    conv.setInput(input, graph.addInitializer(std::make_shared<Tensor>(
                             Tensor::fromDoubles(DataType::Float, tensor.dims(), values))));
  }
}

// The test passes below: each rewrites every Conv of the model (found before the first rewrite)
// and records no channel affine, as a third party's pass might.
class ConvRewritePass : public Pass {
 public:
  using Pass::Pass;
  PassResult run(Model& model, PassContext&) override {
    Graph& graph = model.graph();
    std::vector<Node*> convs;
    for (Node* node : graph.nodes()) {
      if (node->is("Conv")) convs.push_back(node);
    }
    for (Node* conv : convs) rewrite(graph, *conv);
    PassResult result;
    result.changed = true;
    return result;
  }

 private:
  virtual void rewrite(Graph& graph, Node& conv) = 0;
};

// What bias-correct must not trust: a pass that multiplies output channel 1 of every Conv
// (weights and bias) by 3 and records no channel affine, as a third party's rescaling pass might.
class UnrecordedRescalePass : public ConvRewritePass {
 public:
  UnrecordedRescalePass()
      : ConvRewritePass("rescale-unrecorded", "Triples channel 1 of every Conv") {}

 private:
  void rewrite(Graph& graph, Node& conv) override { scaleChannel1(graph, conv, 3); }
};

// The float version bias-correct compares with comes from the pipeline's input model, mapped
// through the channel records passes leave. A layer rescaled without a record computes 3x the
// float version on channel 1 (74% of the float output's energy here): correcting it by the
// difference of means would move channel 1 by 2/3 of its mean. It is skipped and the remark says
// why.
TEST(BiasCorrect, LayerRescaledWithoutARecordIsSkipped) {
  ScratchDir dir;
  const PassRegistry registry = builtinsAnd<UnrecordedRescalePass>();
  auto model = parseModelText(kConv, "conv.onnxtxt");
  const interp::Array x = convInput();
  runPipeline(*model, "rescale-unrecorded,insert-qdq{calibrator=max min-channels=0}", x, dir,
              registry);
  const std::vector<float> before = runModel(*model, x);
  auto rescaled = parseModelText(kConv, "conv.onnxtxt");
  PassResult result = runPipeline(
      *rescaled, "rescale-unrecorded,insert-qdq{calibrator=max min-channels=0},bias-correct", x,
      dir, registry);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.statistics["layers-skipped"], 1);
  EXPECT_EQ(result.statistics["biases-corrected"], 0);
  EXPECT_TRUE(explainsMissed(result, {"computes something else", "one 3 times the float one"}));
  EXPECT_EQ(runModel(*rescaled, x), before);
}

// A pass that multiplies output channel 1 of every Conv (weights and bias) by 1.05 and divides
// it again with a Mul it inserts after the Conv: exact, but unrecorded, and by less than
// bias-correct's gain check tells from quantization noise (10%).
class CompensatedRescalePass : public ConvRewritePass {
 public:
  CompensatedRescalePass()
      : ConvRewritePass("rescale-compensated", "Scales Conv channel 1 and back") {}

 private:
  void rewrite(Graph& graph, Node& conv) override {
    scaleChannel1(graph, conv, 1.05);
    const std::vector<double> back = {1.0, 1.0 / 1.05};
    Value* factor = graph.addInitializer(
        std::make_shared<Tensor>(Tensor::fromDoubles(DataType::Float, {1, 2, 1, 1}, back)));
    Node* mul = graph.createNode("Mul", {conv.output(0), factor}, 1);
    for (size_t o = 0; o < graph.outputs().size(); ++o) {
      if (graph.outputs()[o] == conv.output(0)) graph.setOutput(o, mul->output(0));
    }
  }
};

// Each layer's correction lowers that layer's error against its float version; whether the
// model's output gets closer to the input model's is checked on the whole model. Here the float
// version misses an unrecorded 5% rescale that a later Mul undoes, so the "mean error" it gives
// is that rescale's, and subtracting it moves the output away from the input model's: the
// corrections are dropped, with the reason, unless check=false.
TEST(BiasCorrect, CorrectionsThatLowerTheOutputSqnrAreDropped) {
  ScratchDir dir;
  const PassRegistry registry = builtinsAnd<CompensatedRescalePass>();
  const interp::Array x = convInput();
  const char* quantize = "rescale-compensated,insert-qdq{calibrator=max min-channels=0}";
  auto model = parseModelText(kConv, "conv.onnxtxt");
  runPipeline(*model, quantize, x, dir, registry);
  const std::vector<float> before = runModel(*model, x);

  auto checked = parseModelText(kConv, "conv.onnxtxt");
  PassResult result =
      runPipeline(*checked, std::string(quantize) + ",bias-correct", x, dir, registry);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.statistics["biases-corrected"], 0);
  EXPECT_EQ(result.statistics["corrections-rejected"], 1);
  EXPECT_TRUE(explainsMissed(
      result, {"no bias corrected: together the 1 corrections lower the output SQNR"}));
  EXPECT_EQ(runModel(*checked, x), before);

  // Unchecked, the correction goes in: channel 1 loses the 5% the Mul then divides by again.
  auto unchecked = parseModelText(kConv, "conv.onnxtxt");
  PassResult applied = runPipeline(*unchecked, std::string(quantize) + ",bias-correct{check=false}",
                                   x, dir, registry);
  EXPECT_EQ(applied.statistics["biases-corrected"], 1);
  std::vector<double> off = layerOutput(false, 2, -2);
  off[1] /= 1.05;
  expectChannels(runModel(*unchecked, x), 9, off, 2e-3);
  // Checked, the output keeps only its quantization error (0.004 here, against the 0.13 above).
  expectChannels(runModel(*checked, x), 9, layerOutput(false, 2, -2), 1e-2);
}

// A model quantized elsewhere has no float weights to compare with: nothing changes, and the
// remarks say why.
TEST(BiasCorrect, QuantizedInputModelIsLeftAlone) {
  ScratchDir dir;
  auto model = parseModelText(kConv, "conv.onnxtxt");
  const interp::Array x = convInput();
  runPipeline(*model, "insert-qdq{calibrator=max min-channels=0}", x, dir);
  const std::vector<float> before = runModel(*model, x);
  PassResult result = runPipeline(*model, "bias-correct", x, dir);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.statistics["layers-skipped"], 1);
  bool explained = false;
  for (const Remark& remark : result.remarks) {
    explained = explained || remark.message.find("already quantized") != std::string::npos;
  }
  EXPECT_TRUE(explained);
  EXPECT_EQ(runModel(*model, x), before);
}

}  // namespace
}  // namespace qopt
