// Conv + BatchNormalization (or a bias Add) + Add + Relu/Clip/HardSwish chains run as one step:
// bitwise the same outputs as the unfused nodes (RunOptions::fuse = false), less peak memory when
// fused, and no fusion where a value inside the chain is seen by someone else or its parameters are
// not constants.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <unordered_set>

#include "InterpTestUtil.h"
#include "ops/Epilogue.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

// Inputs with the values where Relu and Clip differ in detail: NaN, -0, infinities, huge.
Array activationInputs(Shape shape, uint32_t seed) {
  Array a = randomFloats(std::move(shape), seed);
  float* p = a.data<float>();
  const float specials[] = {
      std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.0f,  std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(), 1e30f, -1e30f};
  for (size_t i = 0; i < std::size(specials) && static_cast<int64_t>(i * 7) < a.numel(); ++i) {
    p[i * 7] = specials[i];
  }
  return a;
}

enum class Act { None, Relu, Clip6Attr, ClipInputs, ClipMinOnly };

struct ChainCase {
  std::string name;
  Shape x;
  int64_t filters;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  int64_t group;
  bool bias;
  bool batchNorm;
  Act act;
  int threads = 1;
};

struct Built {
  std::unique_ptr<GraphBuilder> builder;
  Value* convOut = nullptr;
  Value* result = nullptr;
};

Built buildChain(const ChainCase& c, uint32_t seed) {
  Built built;
  built.builder = std::make_unique<GraphBuilder>(c.act == Act::Clip6Attr ? 10 : 15);
  GraphBuilder& b = *built.builder;
  Value* x = b.input("x", DataType::Float);
  Shape wShape = {c.filters, c.x[1] / c.group};
  for (int64_t k : c.kernel) wShape.push_back(k);
  std::vector<Value*> convInputs = {x, b.constant("w", randomFloats(wShape, seed + 1))};
  if (c.bias) convInputs.push_back(b.constant("bias", randomFloats({c.filters}, seed + 2)));
  Node* conv = b.node("Conv", convInputs);
  conv->setName("conv");
  conv->setAttr(Attribute::makeInt("group", c.group));
  conv->setAttr(Attribute::makeInts("strides", c.strides));
  std::vector<int64_t> pads;
  for (int64_t k : c.kernel) pads.push_back(k / 2);
  for (int64_t k : c.kernel) pads.push_back(k / 2);
  conv->setAttr(Attribute::makeInts("pads", pads));
  Value* y = conv->output(0);
  built.convOut = y;
  if (c.batchNorm) {
    Node* bn = b.node("BatchNormalization",
                      {y, b.constant("gamma", randomFloats({c.filters}, seed + 3, 0.2f, 2.0f)),
                       b.constant("beta", randomFloats({c.filters}, seed + 4)),
                       b.constant("mean", randomFloats({c.filters}, seed + 5)),
                       b.constant("var", randomFloats({c.filters}, seed + 6, 0.01f, 4.0f))});
    bn->setName("bn");
    bn->setAttr(Attribute::makeFloat("epsilon", 1e-3f));
    y = bn->output(0);
  }
  switch (c.act) {
    case Act::None:
      break;
    case Act::Relu:
      y = b.node("Relu", {y})->output(0);
      break;
    case Act::Clip6Attr: {
      Node* clip = b.node("Clip", {y});
      clip->setAttr(Attribute::makeFloat("min", 0.0f));
      clip->setAttr(Attribute::makeFloat("max", 6.0f));
      y = clip->output(0);
      break;
    }
    case Act::ClipInputs:
      y = b.node("Clip", {y, b.constant("lo", Array::scalar<float>(DataType::Float, -1.5f)),
                          b.constant("hi", Array::scalar<float>(DataType::Float, 2.5f))})
              ->output(0);
      break;
    case Act::ClipMinOnly:
      y = b.node("Clip", {y, b.constant("lo", Array::scalar<float>(DataType::Float, 0.25f))})
              ->output(0);
      break;
  }
  b.output(y);
  built.result = y;
  return built;
}

class ConvChainFusion : public ::testing::TestWithParam<ChainCase> {};

TEST_P(ConvChainFusion, FusedIsBitwiseTheUnfusedAndHoldsOneActivation) {
  const ChainCase& c = GetParam();
  Built built = buildChain(c, 11);
  BothWays r = runBothWays(built.builder->graph(), {{"x", activationInputs(c.x, 7)}}, c.threads);
  EXPECT_TRUE(r.same());
  // Unfused, the convolution's output and the next node's are alive together.
  EXPECT_EQ(r.fusedPeak, r.fused.at(0).byteSize());
  EXPECT_EQ(r.unfusedPeak, 2 * r.fused.at(0).byteSize());
}

INSTANTIATE_TEST_SUITE_P(
    Chains, ConvChainFusion,
    ::testing::Values(
        ChainCase{
            "conv_bn_clip6", {1, 8, 13, 11}, 12, {3, 3}, {1, 1}, 1, true, true, Act::Clip6Attr},
        ChainCase{
            "conv_bn_relu_no_bias", {2, 6, 9, 9}, 5, {3, 3}, {2, 2}, 1, false, true, Act::Relu},
        ChainCase{"conv_bn", {1, 4, 10, 10}, 6, {3, 3}, {1, 1}, 1, true, true, Act::None},
        ChainCase{"conv_relu", {1, 4, 10, 10}, 6, {3, 3}, {1, 1}, 1, true, false, Act::Relu},
        ChainCase{
            "conv_clip_inputs", {1, 4, 10, 10}, 6, {1, 1}, {1, 1}, 1, true, false, Act::ClipInputs},
        ChainCase{"pointwise_bn_clip_min_only",
                  {1, 16, 7, 9},
                  24,
                  {1, 1},
                  {1, 1},
                  1,
                  false,
                  true,
                  Act::ClipMinOnly},
        ChainCase{"depthwise_bn_clip6",
                  {1, 8, 20, 20},
                  8,
                  {3, 3},
                  {1, 1},
                  8,
                  false,
                  true,
                  Act::Clip6Attr},
        ChainCase{"depthwise_stride2_bn_relu",
                  {1, 8, 21, 20},
                  8,
                  {3, 3},
                  {2, 2},
                  8,
                  true,
                  true,
                  Act::Relu},
        ChainCase{
            "grouped_bn_clip", {1, 8, 9, 9}, 8, {3, 3}, {1, 1}, 2, true, true, Act::ClipInputs},
        ChainCase{"conv1d_bn_relu", {1, 4, 30}, 6, {3}, {1}, 1, true, true, Act::Relu},
        ChainCase{"two_threads_bn_clip6",
                  {1, 16, 40, 40},
                  32,
                  {3, 3},
                  {1, 1},
                  1,
                  true,
                  true,
                  Act::Clip6Attr,
                  2},
        // The direct kernel (few products per output), with a partial group of filters.
        ChainCase{
            "direct_bn_clip6", {1, 3, 17, 19}, 20, {3, 3}, {2, 2}, 1, false, true, Act::Clip6Attr},
        ChainCase{"direct_two_threads_bn_relu",
                  {1, 3, 80, 80},
                  16,
                  {3, 3},
                  {1, 1},
                  1,
                  true,
                  true,
                  Act::Relu,
                  2},
        // 16 channels at a time, with a partial group; and a plane large enough for the
        // plane-at-a-time kernel.
        ChainCase{"depthwise_blocked_partial_group",
                  {2, 20, 9, 11},
                  20,
                  {3, 3},
                  {1, 1},
                  20,
                  true,
                  true,
                  Act::Clip6Attr},
        ChainCase{"depthwise_plane_kernel_bn_clip6",
                  {1, 3, 66, 66},
                  3,
                  {3, 3},
                  {1, 1},
                  3,
                  false,
                  true,
                  Act::Clip6Attr},
        ChainCase{"two_threads_depthwise",
                  {1, 16, 40, 40},
                  16,
                  {3, 3},
                  {1, 1},
                  16,
                  true,
                  true,
                  Act::Relu,
                  2}),
    [](const ::testing::TestParamInfo<ChainCase>& info) { return info.param.name; });

// The epilogue against the kernels it stands for, on the values where they could differ.
TEST(ConvEpilogue, MatchesTheBatchNormalizationReluAndClipKernels) {
  const int64_t channels = 3, inner = 37;
  Array x = activationInputs({1, channels, inner}, 21);
  x.data<float>()[inner + 1] = -0.0f;  // in every channel
  x.data<float>()[2 * inner + 2] = std::numeric_limits<float>::quiet_NaN();
  auto run = [&](const ConvEpilogue& epilogue) {
    Array y(DataType::Float, x.shape());
    std::memcpy(y.bytes(), x.bytes(), x.byteSize());
    for (int64_t c = 0; c < channels; ++c)
      epilogue.apply(y.data<float>() + c * inner, nullptr, inner, c);
    return y;
  };

  ConvEpilogue relu;
  relu.activation.kind = Activation::Kind::Relu;
  EXPECT_TRUE(bitwiseEqual(run(relu), runOne("Relu", {x})));

  for (auto [lo, hi] : {std::pair{0.0f, 6.0f}, std::pair{-0.0f, 1.0f}, std::pair{2.0f, -1.0f}}) {
    ConvEpilogue clip;
    clip.activation = {Activation::Kind::Clip, lo, hi};
    Array expected =
        runOne("Clip", {x, Array::scalar(DataType::Float, lo), Array::scalar(DataType::Float, hi)});
    EXPECT_TRUE(bitwiseEqual(run(clip), expected)) << lo << " " << hi;
  }

  const Array gamma = randomFloats({channels}, 1), beta = randomFloats({channels}, 2);
  const Array mean = randomFloats({channels}, 3), var = randomFloats({channels}, 4, 0.1f, 2.0f);
  ConvEpilogue bn;
  batchNormCoefficients(gamma.toFloatVector(), beta.toFloatVector(), mean.toFloatVector(),
                        var.toFloatVector(), 1e-5f, bn.scale, bn.shift);
  EXPECT_TRUE(bitwiseEqual(run(bn), runOne("BatchNormalization", {x, gamma, beta, mean, var})));

  // HardSwish as exporters write it out: Add, Clip, Mul, Div.
  ConvEpilogue hardSwish;
  hardSwish.activation = {Activation::Kind::HardSwish, 0.0f, 6.0f, 3.0f, 6.0f};
  const Array gate =
      runOne("Clip", {runOne("Add", {x, Array::scalar(DataType::Float, 3.0f)}),
                      Array::scalar(DataType::Float, 0.0f), Array::scalar(DataType::Float, 6.0f)});
  EXPECT_TRUE(bitwiseEqual(run(hardSwish), runOne("Div", {runOne("Mul", {x, gate}),
                                                          Array::scalar(DataType::Float, 6.0f)})));
}

// A 3x3 Conv with pads 1 over x: `filters` random filters (seed 1) in `group` groups over
// `channels` input channels, and a random bias (seed 2) when `bias`.
Node* paddedConv(GraphBuilder& b, Value* x, int64_t filters, int64_t channels, int64_t group,
                 bool bias) {
  std::vector<Value*> inputs = {
      x, b.constant("w", randomFloats({filters, channels / group, 3, 3}, 1))};
  if (bias) inputs.push_back(b.constant("bias", randomFloats({filters}, 2)));
  Node* conv = b.node("Conv", inputs);
  conv->setAttr(Attribute::makeInts("pads", {1, 1, 1, 1}));
  conv->setAttr(Attribute::makeInt("group", group));
  return conv;
}

// Conv without a bias -> Add of a per-channel constant (the bias, as paddle2onnx writes it) ->
// HardSwish written out as Add, Clip, Mul, Div: one step, bitwise the seven nodes, whichever
// operand order the Adds and the Mul have and whichever kernel runs the convolution.
struct BiasHardSwishCase {
  std::string name;
  Shape biasShape;  // [C, 1, 1] or [1, C, 1, 1]
  bool biasFirst;   // Add(bias, conv)
  bool gateFirst;   // Mul(gate, x), Add(3, x)
  int64_t channels;
  int64_t group;
  int threads;
  bool fuses = true;
  int64_t width = 9;
};

class BiasHardSwishFusion : public ::testing::TestWithParam<BiasHardSwishCase> {};

TEST_P(BiasHardSwishFusion, FusedIsBitwiseTheUnfusedAndHoldsOneActivation) {
  const BiasHardSwishCase& c = GetParam();
  GraphBuilder b(13);
  Value* x = b.input("x", DataType::Float);
  Node* conv = paddedConv(b, x, 8, c.channels, c.group, /*bias=*/false);
  Value* bias = b.constant("bias", randomFloats(c.biasShape, 2));
  Value* y = (c.biasFirst ? b.node("Add", {bias, conv->output(0)})
                          : b.node("Add", {conv->output(0), bias}))
                 ->output(0);
  Value* three = b.constant("three", Array::scalar(DataType::Float, 3.0f));
  Value* plus = (c.gateFirst ? b.node("Add", {three, y}) : b.node("Add", {y, three}))->output(0);
  Value* gate = b.node("Clip", {plus, b.constant("lo", Array::scalar(DataType::Float, 0.0f)),
                                b.constant("hi", Array::scalar(DataType::Float, 6.0f))})
                    ->output(0);
  Value* product = (c.gateFirst ? b.node("Mul", {gate, y}) : b.node("Mul", {y, gate}))->output(0);
  Value* out =
      b.node("Div", {product, b.constant("six", Array::scalar(DataType::Float, 6.0f))})->output(0);
  b.output(out);
  BothWays r =
      runBothWays(b.graph(), {{"x", activationInputs({2, c.channels, 11, c.width}, 7)}}, c.threads);
  EXPECT_TRUE(r.same());
  // Unfused, the Mul reads the activation and the gate while it writes the product.
  const uint64_t bytes = r.fused.at(0).byteSize();
  EXPECT_EQ(r.fusedPeak, (c.fuses ? 1 : 3) * bytes);
  EXPECT_EQ(r.unfusedPeak, 3 * bytes);
}

INSTANTIATE_TEST_SUITE_P(
    BiasHardSwish, BiasHardSwishFusion,
    ::testing::Values(BiasHardSwishCase{"gemm", {1, 8, 1, 1}, false, false, 4, 1, 1},
                      BiasHardSwishCase{"operands_swapped", {8, 1, 1}, true, true, 4, 1, 1},
                      BiasHardSwishCase{"direct_kernel", {1, 8, 1, 1}, false, true, 3, 1, 1},
                      BiasHardSwishCase{"depthwise", {8, 1, 1}, true, false, 8, 8, 1},
                      BiasHardSwishCase{"two_threads", {1, 8, 1, 1}, false, false, 4, 1, 2},
                      // A [C] constant broadcasts along the width: not a bias, nothing fused.
                      BiasHardSwishCase{"not_per_channel", {8}, false, false, 4, 1, 1, false, 8}),
    [](const auto& info) { return info.param.name; });

// PP-LCNetV3's blocks as paddle2onnx writes them: Conv (with its bias) -> Mul by a scalar -> Add
// of a scalar -> HardSwish written out -> Mul by a scalar -> Add of a scalar. Each Mul and Add
// rounds on its own, where a fused multiply-add would round once: the values are chosen so that
// the two differ often.
struct ScaleCase {
  std::string name;
  bool constantsFirst;  // Mul(s, x), Add(b, x)
  bool activation;      // HardSwish and the scale after it
  bool onlyMul;         // no Add after the Mul
  int64_t channels;
  int64_t group;
  int threads;
};

class ScalarScaleFusion : public ::testing::TestWithParam<ScaleCase> {};

TEST_P(ScalarScaleFusion, FusedIsBitwiseTheUnfusedAndHoldsOneActivation) {
  const ScaleCase& c = GetParam();
  GraphBuilder b(13);
  Value* x = b.input("x", DataType::Float);
  Node* conv = paddedConv(b, x, 8, c.channels, c.group, /*bias=*/true);
  int constants = 0;
  auto scalar = [&](float v) {
    return b.constant("c" + std::to_string(constants++), Array::scalar(DataType::Float, v));
  };
  auto binary = [&](const char* op, Value* v, Value* k) {
    return (c.constantsFirst ? b.node(op, {k, v}) : b.node(op, {v, k}))->output(0);
  };
  auto scale = [&](Value* v, float m, float a) {
    v = binary("Mul", v, scalar(m));
    return c.onlyMul ? v : binary("Add", v, scalar(a));
  };
  Value* y = scale(conv->output(0), 0.9431691f, 0.5042972f);
  if (c.activation) {
    Value* gate =
        b.node("Clip", {binary("Add", y, scalar(3.0f)), scalar(0.0f), scalar(6.0f)})->output(0);
    y = b.node("Div", {binary("Mul", y, gate), scalar(6.0f)})->output(0);
    y = scale(y, 0.4763231f, -0.1331f);
  }
  b.output(y);
  BothWays r =
      runBothWays(b.graph(), {{"x", activationInputs({2, c.channels, 11, 9}, 7)}}, c.threads);
  EXPECT_TRUE(r.same());
  const uint64_t bytes = r.fused.at(0).byteSize();
  EXPECT_EQ(r.fusedPeak, bytes);
  EXPECT_GT(r.unfusedPeak, bytes);
}

INSTANTIATE_TEST_SUITE_P(Scales, ScalarScaleFusion,
                         ::testing::Values(ScaleCase{"gemm_hardswish", false, true, false, 4, 1, 1},
                                           ScaleCase{"constants_first", true, true, false, 4, 1, 1},
                                           ScaleCase{"no_activation", false, false, false, 4, 1, 1},
                                           ScaleCase{"only_mul", false, true, true, 4, 1, 1},
                                           ScaleCase{"direct_kernel", false, true, false, 3, 1, 1},
                                           ScaleCase{"depthwise", true, true, false, 8, 8, 1},
                                           ScaleCase{"two_threads", false, true, false, 8, 8, 2}),
                         [](const auto& info) { return info.param.name; });

// The Mul-then-Add stage against the two kernels, and unlike a fused multiply-add.
TEST(ConvEpilogue, AScalarScaleRoundsTheProductAndTheSumApart) {
  const Array x = activationInputs({1, 1, 4096}, 31);
  ConvEpilogue scaled;
  scaled.before = {0.9431691f, 0.5042972f};
  Array y(DataType::Float, x.shape());
  std::memcpy(y.bytes(), x.bytes(), x.byteSize());
  scaled.apply(y.data<float>(), nullptr, x.numel(), 0);
  const Array expected =
      runOne("Add", {runOne("Mul", {x, Array::scalar(DataType::Float, 0.9431691f)}),
                     Array::scalar(DataType::Float, 0.5042972f)});
  EXPECT_TRUE(bitwiseEqual(y, expected));
  int fusedDiffers = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    if (std::isfinite(v) && std::fma(v, 0.9431691f, 0.5042972f) != expected.data<float>()[i]) {
      ++fusedDiffers;
    }
  }
  EXPECT_GT(fusedDiffers, 100);  // so the test would see a contracted stage
}

TEST(BiasHardSwishFusion, AValueReadOutsideTheHardSwishStopsIt) {
  GraphBuilder b(13);
  Value* x = b.input("x", DataType::Float);
  Node* conv = b.node("Conv", {x, b.constant("w", randomFloats({4, 4, 1, 1}, 1))});
  Value* y = conv->output(0);
  Value* gate =
      b.node("Clip", {b.node("Add", {y, b.constant("three", Array::scalar(DataType::Float, 3.0f))})
                          ->output(0),
                      b.constant("lo", Array::scalar(DataType::Float, 0.0f)),
                      b.constant("hi", Array::scalar(DataType::Float, 6.0f))})
          ->output(0);
  Value* product = b.node("Mul", {y, gate})->output(0);
  b.output(
      b.node("Div", {product, b.constant("six", Array::scalar(DataType::Float, 6.0f))})->output(0));
  b.output(b.node("Neg", {gate})->output(0));  // the gate is read elsewhere
  BothWays r = runBothWays(b.graph(), {{"x", activationInputs({1, 4, 6, 6}, 3)}});
  EXPECT_TRUE(r.same());
  EXPECT_EQ(r.fusedPeak, r.unfusedPeak);
}

// Conv -> BatchNormalization -> Add(residual) -> Relu, the residual a graph input of the output's
// shape (or, when `residualShape` says so, one that broadcasts), on either side of the Add.
struct ResidualCase {
  std::string name;
  bool residualFirst;
  bool batchNorm;
  bool relu;
  Shape residualShape;
  bool fuses;
  // The convolution's input channels and groups: 4 and 1 take the GEMM, 3 and 1 the direct
  // kernel, 6 and 6 the depthwise one.
  int64_t channels = 4;
  int64_t group = 1;
};

class ResidualFusion : public ::testing::TestWithParam<ResidualCase> {};

TEST_P(ResidualFusion, FusedIsBitwiseTheUnfused) {
  const ResidualCase& c = GetParam();
  GraphBuilder b(15);
  Value* x = b.input("x", DataType::Float);
  Value* skip = b.input("skip", DataType::Float);
  Node* conv = paddedConv(b, x, 6, c.channels, c.group, /*bias=*/true);
  Value* y = conv->output(0);
  if (c.batchNorm) {
    y = b.node("BatchNormalization",
               {y, b.constant("gamma", randomFloats({6}, 3)),
                b.constant("beta", randomFloats({6}, 4)), b.constant("mean", randomFloats({6}, 5)),
                b.constant("var", randomFloats({6}, 6, 0.1f, 2.0f))})
            ->output(0);
  }
  y = (c.residualFirst ? b.node("Add", {skip, y}) : b.node("Add", {y, skip}))->output(0);
  if (c.relu) y = b.node("Relu", {y})->output(0);
  b.output(y);
  std::map<std::string, Array> feeds = {{"x", activationInputs({2, c.channels, 9, 7}, 7)},
                                        {"skip", activationInputs(c.residualShape, 8)}};
  BothWays r = runBothWays(b.graph(), feeds);
  EXPECT_TRUE(r.same());
  const uint64_t bytes = r.fused.at(0).byteSize();
  EXPECT_EQ(r.unfusedPeak, 2 * bytes);
  EXPECT_EQ(r.fusedPeak, (c.fuses ? 1 : 2) * bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Residuals, ResidualFusion,
    ::testing::Values(
        ResidualCase{"bn_add_relu", false, true, true, {2, 6, 9, 7}, true},
        ResidualCase{"bn_add_relu_residual_first", true, true, true, {2, 6, 9, 7}, true},
        ResidualCase{"add_only", false, false, false, {2, 6, 9, 7}, true},
        ResidualCase{"bn_add", true, true, false, {2, 6, 9, 7}, true},
        ResidualCase{"direct_bn_add_relu", false, true, true, {2, 6, 9, 7}, true, 3},
        ResidualCase{
            "depthwise_residual_first_bn_add_relu", true, true, true, {2, 6, 9, 7}, true, 6, 6},
        // A residual that broadcasts is left to the Add kernel.
        ResidualCase{"broadcast_residual", false, true, true, {1, 6, 1, 1}, false}),
    [](const ::testing::TestParamInfo<ResidualCase>& info) { return info.param.name; });

TEST(ResidualFusion, AResidualComputedAfterTheConvolutionIsNotWaitedFor) {
  GraphBuilder b(15);
  Value* x = b.input("x", DataType::Float);
  Node* conv = b.node("Conv", {x, b.constant("w", randomFloats({4, 4, 1, 1}, 1))});
  Node* shortcut = b.node("Neg", {x});  // after the Conv in node order
  Node* add = b.node("Add", {conv->output(0), shortcut->output(0)});
  Node* relu = b.node("Relu", {add->output(0)});
  b.output(relu->output(0));
  BothWays r = runBothWays(b.graph(), {{"x", randomFloats({1, 4, 5, 5}, 2)}});
  EXPECT_TRUE(r.same());
  // Conv + Relu is not a chain here (the Add sits between them): nothing fused.
  EXPECT_EQ(r.fusedPeak, r.unfusedPeak);
}

const ChainCase kPlain{"plain", {1, 4, 8, 8}, 6, {3, 3}, {1, 1}, 1, true, true, Act::Clip6Attr};

TEST(ConvChainFusion, NotFusedWhenTheConvolutionOutputIsAlsoAGraphOutput) {
  Built built = buildChain(kPlain, 3);
  built.builder->output(built.convOut);
  BothWays r = runBothWays(built.builder->graph(), {{"x", randomFloats(kPlain.x, 5)}});
  ASSERT_EQ(r.fused.size(), 2u);
  EXPECT_TRUE(r.same());
  EXPECT_EQ(r.fusedPeak, r.unfusedPeak);
}

TEST(ConvChainFusion, NotFusedWhenBatchNormParametersAreComputed) {
  GraphBuilder b(15);
  Value* x = b.input("x", DataType::Float);
  Value* gamma = b.input("gamma", DataType::Float);
  Node* conv = b.node("Conv", {x, b.constant("w", randomFloats({3, 2, 1, 1}, 1))});
  Node* bn = b.node("BatchNormalization",
                    {conv->output(0), gamma, b.constant("beta", randomFloats({3}, 2)),
                     b.constant("mean", randomFloats({3}, 3)),
                     b.constant("var", randomFloats({3}, 4, 0.5f, 1.0f))});
  b.output(bn->output(0));
  std::map<std::string, Array> feeds = {{"x", randomFloats({1, 2, 4, 4}, 5)},
                                        {"gamma", randomFloats({3}, 6)}};
  BothWays r = runBothWays(b.graph(), feeds);
  EXPECT_TRUE(r.same());
  EXPECT_EQ(r.fusedPeak, r.unfusedPeak);
}

TEST(ConvChainFusion, ClipWithComputedBoundsStaysOutOfTheChain) {
  GraphBuilder b(15);
  Value* x = b.input("x", DataType::Float);
  Value* hi = b.input("hi", DataType::Float);
  Node* conv = b.node("Conv", {x, b.constant("w", randomFloats({3, 2, 1, 1}, 1))});
  Node* relu = b.node("Relu", {conv->output(0)});
  Node* clip =
      b.node("Clip", {relu->output(0), b.constant("lo", Array::scalar(DataType::Float, 0.5f)), hi});
  b.output(clip->output(0));
  std::map<std::string, Array> feeds = {{"x", randomFloats({1, 2, 4, 4}, 5)},
                                        {"hi", Array::scalar(DataType::Float, 1.25f)}};
  BothWays r = runBothWays(b.graph(), feeds);
  EXPECT_TRUE(r.same());
  // Conv + Relu fused, Clip on its own: two activations alive at the Clip, as unfused.
  EXPECT_EQ(r.fusedPeak, 2 * r.fused.at(0).byteSize());
  EXPECT_EQ(r.unfusedPeak, 2 * r.fused.at(0).byteSize());
}

TEST(ConvChainFusion, AnObservedInnerValueIsComputedUnfused) {
  Built built = buildChain(kPlain, 9);
  const Array x = randomFloats(kPlain.x, 4);
  RunOptions options;
  options.fuse = false;
  Interpreter reference(built.builder->graph(), options);
  Recorder all;
  all.values = {built.convOut, built.result};
  Array expected = reference.run({{"x", x}}, &all).at(0);

  Interpreter fused(built.builder->graph());
  Recorder inner;
  inner.values = {built.convOut};
  Array a = fused.run({{"x", x}}, &inner).at(0);
  EXPECT_TRUE(bitwiseEqual(a, expected));
  ASSERT_EQ(inner.seen.count(built.convOut->name()), 1u);
  EXPECT_TRUE(bitwiseEqual(inner.seen[built.convOut->name()], all.seen[built.convOut->name()]));

  // Observing only the chain's result keeps it fused, and reports the result.
  Recorder outer;
  outer.values = {built.result};
  Array b = fused.run({{"x", x}}, &outer).at(0);
  EXPECT_TRUE(bitwiseEqual(b, expected));
  EXPECT_EQ(fused.lastPeakBytes(), b.byteSize());
  ASSERT_EQ(outer.seen.count(built.result->name()), 1u);
  EXPECT_TRUE(bitwiseEqual(outer.seen[built.result->name()], expected));
}

TEST(ConvChainFusion, Float16RunsUnfused) {
  GraphBuilder b(15);
  Value* x = b.input("x", DataType::Float16);
  Node* conv = b.node("Conv", {x, b.constant("w", halves({2, 2, 1, 1}, {0.5f, -1, 2, 0.25f}))});
  Node* relu = b.node("Relu", {conv->output(0)});
  b.output(relu->output(0));
  Array in = halves({1, 2, 1, 2}, {1, -2, 3, 0.5f});
  Interpreter fused(b.graph());
  Array a = fused.run({{"x", in}}).at(0);
  EXPECT_EQ(doubles(a), (std::vector<double>{0, 0, 2.75, 0}));
  EXPECT_EQ(fused.lastPeakBytes(), 2 * a.byteSize());
}

TEST(ConvChainFusion, MismatchedBatchNormChannelsAreReportedByTheBatchNormalization) {
  GraphBuilder b(15);
  Value* x = b.input("x", DataType::Float);
  Node* conv = b.node("Conv", {x, b.constant("w", randomFloats({3, 2, 1, 1}, 1))});
  Node* bn =
      b.node("BatchNormalization",
             {conv->output(0), b.constant("gamma", randomFloats({4}, 2)),
              b.constant("beta", randomFloats({4}, 3)), b.constant("mean", randomFloats({4}, 4)),
              b.constant("var", randomFloats({4}, 5, 0.5f, 1.0f))});
  bn->setName("bn_mismatch");
  b.output(bn->output(0));
  Interpreter fused(b.graph());
  try {
    fused.run({{"x", randomFloats({1, 2, 4, 4}, 6)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bn_mismatch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shape [3]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qopt::interp
