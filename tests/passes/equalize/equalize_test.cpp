// equalize: cross-layer equalization and high-bias absorption. The factors against values
// worked out by hand; exactness (max relative output error 1e-5 before quantization) on random
// inputs for Conv-Relu-Conv, depthwise-pointwise chains, grouped convolutions, Gemm and MatMul;
// equal ranges after convergence; absorption exact on the calibration data it was computed on;
// and the pairs it must leave alone, with their remarks. Depthwise input balancing: its factors
// by hand, exactness with the division folded into each producer it can go into (a Conv through
// Relu, a Div, an affine Mul/Add) or a Mul inserted (HardSwish), every channel at the widest
// one's range afterwards, and the int8 output error it removes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "BiasAbsorption.h"
#include "DepthwiseInputs.h"
#include "LayerPairs.h"
#include "RescaleTestSupport.h"
#include "qopt/analysis/ChannelAffine.h"
#include "qopt/rescale/LinearLayer.h"

namespace qopt::testing {
namespace {

constexpr double kExact = 1e-5;

bool hasRemark(const PassResult& result, Remark::Kind kind, const std::string& text) {
  return std::any_of(result.remarks.begin(), result.remarks.end(), [&](const Remark& r) {
    return r.kind == kind && r.message.find(text) != std::string::npos;
  });
}

// The ranges a pair balances: r1 (first layer's output channels), r2 (second's inputs).
void expectBalanced(Model& model, const std::string& first, const std::string& second) {
  std::string why;
  Node* a = model.graph().findValue(first)->producer();
  Node* b = model.graph().findValue(second)->producer();
  std::optional<equalize::LinearLayer> la = equalize::LinearLayer::read(*a, why);
  std::optional<equalize::LinearLayer> lb = equalize::LinearLayer::read(*b, why);
  ASSERT_TRUE(la && lb) << why;
  std::vector<double> r1 = la->outputChannelAbsMax(), r2 = lb->inputChannelAbsMax();
  ASSERT_EQ(r1.size(), r2.size());
  for (size_t i = 0; i < r1.size(); ++i) EXPECT_NEAR(r1[i] / r2[i], 1.0, 1e-5) << "channel " << i;
}

// Most tests build their model in `model` (opset 17), through `g`.
class Equalize : public ::testing::Test {
 protected:
  // The graph input "x", float of shape `dims`.
  Value* input(std::vector<int64_t> dims) {
    return g.addInput("x", ValueType::tensor(DataType::Float, std::move(dims)));
  }
  // errorAfter `equalize` (uncalibrated) on 3 random samples drawn with `seed`.
  double equalizeError(uint32_t seed, PassResult* result = nullptr) {
    return errorAfter(*model, "equalize", randomSampleSet(*model, 3, seed), {}, result);
  }

  std::unique_ptr<Model> model = newModel(17);
  Graph& g = model->graph();
};

TEST_F(Equalize, ScalesWorkedOutByHand) {
  // r1 = {4, 1}, r2 = {1, 4}: s = sqrt(r1 r2) / r2 = {2, 0.5}; both channels end at range 2.
  Value* x = input({1, 1, 2, 2});
  std::vector<double> b1{2.0, 1.0};
  Value* t = addConv(g, x, "t", {2, 1, 1, 1}, {4.0, 1.0}, &b1);
  Value* r = addNode(g, "Relu", {t}, "r");
  Value* y = addConv(g, r, "y", {1, 2, 1, 1}, {1.0, 4.0}, nullptr);
  y->setType(ValueType::tensor(DataType::Float, {1, 1, 2, 2}));
  g.addOutput(y);

  std::string why;
  auto first = equalize::LinearLayer::read(*t->producer(), why);
  auto second = equalize::LinearLayer::read(*y->producer(), why);
  ASSERT_TRUE(first && second) << why;
  EXPECT_EQ(equalize::equalizingScales(*first, *second), (std::vector<double>{2.0, 0.5}));

  PassOutcome outcome = runPipeline(*model, "equalize");
  EXPECT_EQ(initializerValues(*model, "t_w"), (std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(initializerValues(*model, "t_b"), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(initializerValues(*model, "y_w"), (std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(outcome.result.statistics.get("pairs-equalized"), 1);
  EXPECT_TRUE(hasRemark(outcome.result, Remark::Kind::Note, "needs --calib-data"));
}

TEST_F(Equalize, ConvReluConvIsExact) {
  std::mt19937 rng(1);
  Value* x = input({2, 8, 7, 7});
  std::vector<double> b1 = randomValues(6, rng);
  Value* t = addConv(g, x, "t", {6, 8, 3, 3}, skewedValues(6 * 8 * 9, 8 * 9, rng), &b1, 1, 1);
  Value* r = addNode(g, "Relu", {t}, "r");
  std::vector<double> b2 = randomValues(5, rng);
  Value* y = addConv(g, r, "y", {5, 6, 3, 3}, randomValues(5 * 6 * 9, rng), &b2, 1, 1);
  y->setType(ValueType::tensor(DataType::Float, {2, 5, 7, 7}));
  g.addOutput(y);
  EXPECT_LE(equalizeError(10), kExact);
  expectBalanced(*model, "t", "y");
}

TEST_F(Equalize, DepthwisePointwiseChainConverges) {
  // conv -> Relu -> depthwise -> Relu -> pointwise: the depthwise's channel is both the input
  // and the output channel, rescaled by both pairs; the sweeps balance both at once.
  std::mt19937 rng(2);
  Value* x = input({1, 3, 9, 9});
  std::vector<double> b1 = randomValues(8, rng), b2 = randomValues(8, rng),
                      b3 = randomValues(4, rng);
  Value* t = addConv(g, x, "t", {8, 3, 3, 3}, skewedValues(8 * 27, 27, rng), &b1, 1, 1);
  Value* r = addNode(g, "Relu", {t}, "r");
  Value* d = addConv(g, r, "d", {8, 1, 3, 3}, skewedValues(8 * 9, 18, rng), &b2, 8, 1);
  Value* rd = addNode(g, "Relu", {d}, "rd");
  Value* y = addConv(g, rd, "y", {4, 8, 1, 1}, randomValues(32, rng), &b3);
  y->setType(ValueType::tensor(DataType::Float, {1, 4, 9, 9}));
  g.addOutput(y);
  PassResult result;
  EXPECT_LE(equalizeError(20, &result), kExact);
  EXPECT_EQ(result.statistics.get("pairs-equalized"), 2);
  EXPECT_GT(result.statistics.get("sweeps"), 2);
  EXPECT_EQ(result.statistics.get("sweeps-capped"), 0);
  expectBalanced(*model, "t", "d");
  expectBalanced(*model, "d", "y");
}

TEST_F(Equalize, GroupedAndMultiplierConvolutionsAreExact) {
  // Conv 4 -> 6, then a grouped Conv (2 groups of 3 inputs) and, on another branch, a
  // depthwise Conv with channel multiplier 2 (6 -> 12).
  std::mt19937 rng(3);
  Value* x = input({1, 4, 6, 6});
  std::vector<double> b = randomValues(6, rng);
  Value* t = addConv(g, x, "t", {6, 4, 1, 1}, skewedValues(24, 4, rng), &b);
  Value* y = addConv(g, t, "y", {4, 3, 3, 3}, skewedValues(4 * 27, 9, rng), nullptr, 2, 1);
  y->setType(ValueType::tensor(DataType::Float, {1, 4, 6, 6}));
  g.addOutput(y);
  std::vector<double> b2 = randomValues(6, rng);
  Value* t2 = addConv(g, x, "t2", {6, 4, 1, 1}, skewedValues(24, 4, rng), &b2);
  Value* r2 = addNode(g, "Relu", {t2}, "r2");
  Value* y2 = addConv(g, r2, "y2", {12, 1, 3, 3}, skewedValues(12 * 9, 9, rng), nullptr, 6, 1);
  y2->setType(ValueType::tensor(DataType::Float, {1, 12, 6, 6}));
  g.addOutput(y2);
  PassResult result;
  EXPECT_LE(equalizeError(30, &result), kExact);
  EXPECT_EQ(result.statistics.get("pairs-equalized"), 2);
  expectBalanced(*model, "t", "y");
  expectBalanced(*model, "t2", "y2");
}

TEST_F(Equalize, GemmReluGemmIsExact) {
  // transB=1 with a C vector and beta 0.5, then transB=0 with a [1, N] C and alpha 2.
  std::mt19937 rng(4);
  Value* x = input({3, 5});
  Value* w1 = addInitializer(g, "w1", DataType::Float, {7, 5}, skewedValues(35, 5, rng));
  Value* c1 = addInitializer(g, "c1", DataType::Float, {7}, randomValues(7, rng));
  Value* t = addNode(g, "Gemm", {x, w1, c1}, "t");
  t->producer()->setAttr(Attribute::makeInt("transB", 1));
  t->producer()->setAttr(Attribute::makeFloat("beta", 0.5f));
  Value* r = addNode(g, "Relu", {t}, "r");
  Value* w2 = addInitializer(g, "w2", DataType::Float, {7, 4}, randomValues(28, rng));
  Value* c2 = addInitializer(g, "c2", DataType::Float, {1, 4}, randomValues(4, rng));
  Value* y = addNode(g, "Gemm", {r, w2, c2}, "y", ValueType::tensor(DataType::Float, {3, 4}));
  y->producer()->setAttr(Attribute::makeFloat("alpha", 2.0f));
  g.addOutput(y);
  EXPECT_LE(equalizeError(40), kExact);
  expectBalanced(*model, "t", "y");
}

TEST_F(Equalize, MatMulChainIsExact) {
  std::mt19937 rng(5);
  Value* x = input({2, 3, 5});
  Value* w1 = addInitializer(g, "w1", DataType::Float, {5, 6}, skewedValues(30, 1, rng));
  Value* t = addNode(g, "MatMul", {x, w1}, "t");
  Value* w2 = addInitializer(g, "w2", DataType::Float, {6, 4}, randomValues(24, rng));
  Value* y = addNode(g, "MatMul", {t, w2}, "y", ValueType::tensor(DataType::Float, {2, 3, 4}));
  g.addOutput(y);
  EXPECT_LE(equalizeError(50), kExact);
  expectBalanced(*model, "t", "y");
}

TEST_F(Equalize, LeavesAloneWhatRescalingWouldChange) {
  std::mt19937 rng(6);
  Value* x = input({1, 2, 3, 3});
  auto branch = [&](const std::string& name, const std::string& op) {
    Value* t = addConv(g, x, name + "_t", {3, 2, 1, 1}, skewedValues(6, 2, rng), nullptr);
    Value* a = addNode(g, op, {t}, name + "_a");
    if (op == "Clip") {
      a->producer()->addInput(addInitializer(g, name + "_lo", DataType::Float, {}, {0.0}));
      a->producer()->addInput(addInitializer(g, name + "_hi", DataType::Float, {}, {6.0}));
    }
    Value* y = addConv(g, a, name, {2, 3, 1, 1}, randomValues(6, rng), nullptr);
    y->setType(ValueType::tensor(DataType::Float, {1, 2, 3, 3}));
    g.addOutput(y);
    return a;
  };
  branch("relu6", "Clip");
  branch("leaky", "LeakyRelu");
  Value* shared = branch("shared", "Relu");
  shared->setType(ValueType::tensor(DataType::Float, {1, 3, 3, 3}));
  g.addOutput(shared);  // the activation is also a graph output
  std::vector<double> before = initializerValues(*model, "relu6_t_w");
  PassOutcome outcome = runPipeline(*model, "equalize");
  const PassResult& result = outcome.result;
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.statistics.get("pairs-skipped"), 3);
  EXPECT_TRUE(hasRemark(result, Remark::Kind::Missed, "ReLU6-like"));
  EXPECT_TRUE(hasRemark(result, Remark::Kind::Missed, "LeakyRelu between them is not handled"));
  EXPECT_TRUE(hasRemark(result, Remark::Kind::Missed, "'shared_a' between them is read by other"));
  EXPECT_EQ(initializerValues(*model, "relu6_t_w"), before);
}

// Conv 1x1 (4 -> 6) with biases that keep every pre-activation positive on the data -> Relu ->
// Conv 1x1 (6 -> 3): absorption takes each channel's observed minimum.
std::unique_ptr<Model> absorptionModel(int64_t secondPad, std::mt19937& rng) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 4, 5, 5}));
  std::vector<double> w1 = randomValues(24, rng);
  for (double& v : w1) v *= 0.2;
  std::vector<double> b1{3.0, 4.0, 5.0, 6.0, 7.0, -9.0};  // the last channel stays below 0
  Value* t = addConv(g, x, "t", {6, 4, 1, 1}, w1, &b1);
  Value* r = addNode(g, "Relu", {t}, "r");
  Value* y = addConv(g, r, "y", {3, 6, 1, 1}, randomValues(18, rng), nullptr, 1, secondPad);
  int64_t side = 5 + 2 * secondPad;
  y->setType(ValueType::tensor(DataType::Float, {1, 3, side, side}));
  g.addOutput(y);
  return model;
}

TEST_F(Equalize, HighBiasAbsorptionIsExactOnTheCalibrationData) {
  std::mt19937 rng(7);
  auto model = absorptionModel(0, rng);
  Samples samples = randomSampleSet(*model, 4, 60);
  std::string calib = writeSamples("equalize_absorb", samples);

  std::mt19937 sameRng(7);
  auto equalizedOnly = absorptionModel(0, sameRng);
  runPipeline(*equalizedOnly, "equalize");
  std::vector<double> w1 = initializerValues(*equalizedOnly, "t_w");
  std::vector<double> b1 = initializerValues(*equalizedOnly, "t_b");

  PassResult result;
  // 4 samples of 25 positions: 100 values per channel.
  EXPECT_LE(errorAfter(*model, "equalize{min-observations=100}", samples, calib, &result), kExact);
  EXPECT_EQ(result.statistics.get("pairs-absorbed"), 1);
  EXPECT_EQ(result.statistics.get("channels-absorbed"), 5);

  // The bias dropped by min(minimum, mean - 3 std) of the equalized pre-activation on the data.
  std::vector<double> expectedMin(6, INFINITY), sum(6, 0.0), squares(6, 0.0);
  double count = 0;
  for (const auto& sample : samples) {
    const interp::Array& in = sample.at("x");
    for (int64_t p = 0; p < 25; ++p) {
      count += 1;
      for (size_t c = 0; c < 6; ++c) {
        double v = b1[c];
        for (int64_t i = 0; i < 4; ++i) {
          v += w1[c * 4 + static_cast<size_t>(i)] * in.getDouble(i * 25 + p);
        }
        expectedMin[c] = std::min(expectedMin[c], v);
        sum[c] += v;
        squares[c] += v * v;
      }
    }
  }
  std::vector<double> absorbed = initializerValues(*model, "t_b");
  for (size_t c = 0; c < 6; ++c) {
    double mean = sum[c] / count;
    double deviation = std::sqrt(squares[c] / count - mean * mean);
    double shift = std::max(0.0, std::min(expectedMin[c], mean - 3 * deviation));
    EXPECT_NEAR(b1[c] - absorbed[c], shift, 1e-5 * std::max(1.0, shift)) << "channel " << c;
  }
  EXPECT_EQ(absorbed[5], b1[5]);                                // below zero: nothing to absorb
  EXPECT_EQ(initializerValues(*model, "y_w_bias").size(), 3u);  // the second Conv gained a bias
}

TEST_F(Equalize, NoAbsorptionFromTooFewValues) {
  std::mt19937 rng(7);
  auto model = absorptionModel(0, rng);
  PassResult result;
  EXPECT_LE(errorAfterCalibrating(*model, "equalize{min-observations=101}",
                                  randomSampleSet(*model, 4, 60), "equalize_few", &result),
            kExact);
  EXPECT_EQ(result.statistics.get("pairs-absorbed"), 0);
  EXPECT_EQ(result.statistics.get("absorption-skipped-few-values"), 1);
  EXPECT_TRUE(hasRemark(result, Remark::Kind::Missed, "gave 100 values per channel"));
}

TEST_F(Equalize, AbsorbedShiftStaysWithinTheObservedMinimumAndThreeSigma) {
  std::vector<double> minimum{2.0, 5.0, -1.0, 3.0}, mean{4.0, 6.0, 1.0, 3.0},
      deviation{1.0, 0.1, 0.0, 0.0};
  EXPECT_EQ(equalize::absorbableShift(minimum, mean, deviation),
            (std::vector<double>{1.0, 5.0, 0.0, 3.0}));
}

TEST_F(Equalize, NoAbsorptionIntoAPaddedConv) {
  std::mt19937 rng(8);
  auto model = absorptionModel(1, rng);
  PassResult result;
  EXPECT_LE(errorAfterCalibrating(*model, "equalize", randomSampleSet(*model, 2, 70),
                                  "equalize_padded", &result),
            kExact);
  EXPECT_EQ(result.statistics.get("pairs-absorbed"), 0);
  EXPECT_TRUE(hasRemark(result, Remark::Kind::Missed, "pads its input"));
}

TEST_F(Equalize, SweepCapIsReportedAndStaysExact) {
  std::mt19937 rng(9);
  Value* x = input({1, 4, 4, 4});
  Value* v = x;
  for (int i = 0; i < 4; ++i) {
    v = addConv(g, v, "c" + std::to_string(i), {4, 4, 1, 1}, skewedValues(16, 3, rng), nullptr);
  }
  v->setType(ValueType::tensor(DataType::Float, {1, 4, 4, 4}));
  g.addOutput(v);
  PassResult result;
  EXPECT_LE(errorAfter(*model, "equalize{max-sweeps=1 absorb-bias=false}",
                       randomSampleSet(*model, 2, 80), {}, &result),
            kExact);
  EXPECT_EQ(result.statistics.get("sweeps-capped"), 1);
  EXPECT_TRUE(hasRemark(result, Remark::Kind::Note, "stopped after max-sweeps=1"));
}

TEST_F(Equalize, DepthwiseBalancingScalesWorkedOutByHand) {
  // Widest 2: s = r / 2, a silent channel keeps 1, a nearly silent one stops at 1 / max-factor.
  EXPECT_EQ(equalize::balancingScales(std::vector<double>{2.0, 0.5, 0.0, 1e-6}, 1024),
            (std::vector<double>{1.0, 0.25, 1.0, 1.0 / 1024}));
  EXPECT_EQ(equalize::balancingScales(std::vector<double>{0.0, 0.0}, 1024),
            (std::vector<double>{1.0, 1.0}));
}

// Largest |value| of each channel (axis 1) of `name` over `samples`.
std::vector<double> channelAbsMax(const Model& model, const std::string& name,
                                  const Samples& samples) {
  struct Observer : interp::CaptureObserver {
    std::unordered_set<const Value*> values;
    std::vector<double> absMax;
    const std::unordered_set<const Value*>& wanted() const override { return values; }
    void captured(const Value&, const interp::Array& a) override {
      int64_t channels = a.shape()[1], inner = a.numel() / a.shape()[0] / channels;
      absMax.resize(static_cast<size_t>(channels), 0.0);
      for (int64_t i = 0; i < a.numel(); ++i) {
        double& m = absMax[static_cast<size_t>(i / inner % channels)];
        m = std::max(m, std::fabs(a.getDouble(i)));
      }
    }
  } observer;
  observer.values.insert(model.graph().findValue(name));
  interp::Interpreter interpreter(model.graph());
  for (const auto& sample : samples) interpreter.run(sample, &observer);
  return observer.absMax;
}

// x -> Conv t (8 channels over four orders of magnitude) -> `activation` -> "a" -> depthwise
// 3x3 d (padded) -> pointwise y.
enum class Producer { HardSwish, Relu, Div, Affine };
std::unique_ptr<Model> depthwiseModel(Producer producer, std::mt19937& rng) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 3, 8, 8}));
  std::vector<double> b1 = randomValues(8, rng), b2 = randomValues(8, rng);
  Value* t = addConv(g, x, "t", {8, 3, 1, 1}, skewedValues(24, 3, rng), &b1);
  Value* a = nullptr;
  switch (producer) {
    case Producer::HardSwish:
      a = addNode(g, "HardSwish", {t}, "a");
      break;
    case Producer::Relu:
      a = addNode(g, "Relu", {t}, "a");
      break;
    case Producer::Div:
      a = addNode(g, "Div", {t, addInitializer(g, "six", DataType::Float, {}, {6.0})}, "a");
      break;
    case Producer::Affine: {
      Value* m = addNode(g, "Mul", {t, addInitializer(g, "k", DataType::Float, {1}, {0.7})}, "m");
      a = addNode(g, "Add", {m, addInitializer(g, "c", DataType::Float, {1}, {0.1})}, "a");
      break;
    }
  }
  // Large weights on the narrow channels, as BatchNormalization folded into them gives.
  std::vector<double> wd = randomValues(72, rng);
  for (size_t i = 0; i < wd.size(); ++i)
    wd[i] *= std::pow(10.0, 2.0 - static_cast<double>((i / 27) % 5));
  Value* d = addConv(g, a, "d", {8, 1, 3, 3}, wd, &b2, 8, 1);
  Value* y = addConv(g, d, "y", {4, 8, 1, 1}, randomValues(32, rng), nullptr);
  y->setType(ValueType::tensor(DataType::Float, {1, 4, 8, 8}));
  g.addOutput(y);
  return model;
}

void expectDepthwiseBalanced(Producer producer, const char* counter, const std::string& where) {
  std::mt19937 rng(11);
  auto model = depthwiseModel(producer, rng);
  Samples samples = randomSampleSet(*model, 4, 90);
  // One folder per test: ctest runs them in parallel.
  std::string calib =
      writeSamples("equalize_depthwise_" + std::to_string(static_cast<int>(producer)), samples);
  std::vector<double> before = channelAbsMax(*model, "d", samples);
  PassResult result;
  EXPECT_LE(
      errorAfter(*model, "equalize{cross-layer=false max-factor=1e6}", samples, calib, &result),
      kExact);
  EXPECT_EQ(result.statistics.get("depthwise-balanced"), 1);
  EXPECT_EQ(result.statistics.get(counter), 1);
  EXPECT_TRUE(hasRemark(result, Remark::Kind::Applied, where)) << where;
  // The depthwise output is unchanged; its input now spans the widest channel's range in every
  // channel that was not silent (a Relu can silence one).
  std::vector<double> after = channelAbsMax(*model, "d", samples);
  for (size_t c = 0; c < before.size(); ++c) EXPECT_NEAR(after[c], before[c], 1e-5 * before[c]);
  std::string input = model->graph().findValue("d")->producer()->input(0)->name();
  std::vector<double> ranges = channelAbsMax(*model, input, samples);
  double widest = *std::max_element(ranges.begin(), ranges.end());
  for (size_t c = 0; c < ranges.size(); ++c) {
    if (ranges[c] == 0) continue;
    EXPECT_NEAR(ranges[c], widest, 1e-5 * widest) << "channel " << c << " of " << input;
  }
}

TEST_F(Equalize, DepthwiseInputDividedInAPrecedingConvThroughRelu) {
  expectDepthwiseBalanced(
      Producer::Relu, "depthwise-folded",
      "folded into the output channels of node producing 't' (Conv) (through node "
      "producing 'a' (Relu))");
}

TEST_F(Equalize, DepthwiseInputDividedInADivisor) {
  expectDepthwiseBalanced(Producer::Div, "depthwise-folded",
                          "folded into the divisor of node producing 'a' (Div)");
}

TEST_F(Equalize, DepthwiseInputDividedInAnAffineMap) {
  expectDepthwiseBalanced(Producer::Affine, "depthwise-folded",
                          "folded into the constant of node producing 'a' (Add), the constant "
                          "of node producing 'm' (Mul)");
}

TEST_F(Equalize, DepthwiseInputAfterHardSwishGetsAMul) {
  expectDepthwiseBalanced(Producer::HardSwish, "depthwise-mul-inserted",
                          "inserted node producing 'a_smoothed' (Mul)");
}

TEST_F(Equalize, SixteenBitDepthwiseWeightsAreLeftAlone) {
  // Balancing shrinks a narrow channel's weights by up to max-factor: in float16 they would
  // round again, so such layers get a remark instead.
  std::mt19937 rng(13);
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float16, {1, 4, 6, 6}));
  Value* w = addInitializer(g, "t_w", DataType::Float16, {4, 4, 1, 1}, skewedValues(16, 4, rng));
  Value* t = addNode(g, "Conv", {x, w}, "t");
  t->producer()->setAttr(Attribute::makeInts("kernel_shape", {1, 1}));
  Value* a = addNode(g, "Relu", {t}, "a");
  Value* dw = addInitializer(g, "d_w", DataType::Float16, {4, 1, 3, 3}, randomValues(36, rng));
  Value* d = addNode(g, "Conv", {a, dw}, "d", ValueType::tensor(DataType::Float16, {1, 4, 4, 4}));
  d->producer()->setAttr(Attribute::makeInts("kernel_shape", {3, 3}));
  d->producer()->setAttr(Attribute::makeInt("group", 4));
  g.addOutput(d);
  std::vector<double> before = initializerValues(*model, "d_w");
  std::string calib = writeSamples("equalize_depthwise_fp16", randomSampleSet(*model, 2, 110));
  PassOutcome outcome = runWithData(*model, "equalize{cross-layer=false}", calib);
  EXPECT_EQ(outcome.result.statistics.get("depthwise-balanced"), 0);
  EXPECT_TRUE(hasRemark(outcome.result, Remark::Kind::Missed,
                        "depthwise input not balanced: its weights are FLOAT16"));
  EXPECT_EQ(initializerValues(*model, "d_w"), before);
}

TEST_F(Equalize, DepthwiseBalancingRemovesInt8Error) {
  // Per-tensor int8 on the depthwise input gives the narrow channels, which the large weights
  // amplify, a few levels; balanced, each channel has all 255.
  std::mt19937 rng(12);
  auto reference = depthwiseModel(Producer::HardSwish, rng);
  Samples samples = randomSampleSet(*reference, 8, 100);
  std::string calib = writeSamples("equalize_depthwise_int8", samples);
  std::mt19937 same(12);
  auto plain = depthwiseModel(Producer::HardSwish, same);
  same.seed(12);
  auto balanced = depthwiseModel(Producer::HardSwish, same);
  runWithData(*plain, "insert-qdq{calibrator=max}", calib);
  runWithData(*balanced, "equalize{cross-layer=false},insert-qdq{calibrator=max}", calib);
  double plainSqnr = outputSqnr(*reference, *plain, samples);
  double balancedSqnr = outputSqnr(*reference, *balanced, samples);
  EXPECT_GT(balancedSqnr, plainSqnr + 10) << plainSqnr << " dB -> " << balancedSqnr << " dB";
}

}  // namespace
}  // namespace qopt::testing

namespace qopt::testing {
namespace {

// verify compares a tensor equalize divided (or shifted) after undoing that: every layer of the
// equalized model stays exact against the input model.
TEST_F(Equalize, VerifyComparesRescaledTensorsExactly) {
  const std::string exact =
      "verify{layers=all sqnr=80 cosine=0.999999 layer-sqnr=80 layer-cosine=0.999999 weakest=0}";
  for (Producer producer : {Producer::Relu, Producer::Div, Producer::Affine}) {
    std::mt19937 rng(11);
    auto model = depthwiseModel(producer, rng);
    std::string calib =
        writeSamples("equalize_verify_" + std::to_string(static_cast<int>(producer)),
                     randomSampleSet(*model, 4, 90));
    PassOutcome outcome = runWithData(*model, "equalize{max-factor=1e6}," + exact, calib);
    EXPECT_FALSE(analysis::channelAffines(*outcome.context).empty());
    EXPECT_GE(outcome.result.statistics.get("layers-compared"), 2);
    EXPECT_EQ(outcome.result.statistics.get("layers-flagged"), 0);
  }
  std::mt19937 rng(7);
  auto model = absorptionModel(0, rng);
  std::string calib = writeSamples("equalize_verify_absorb", randomSampleSet(*model, 4, 60));
  PassOutcome outcome = runWithData(*model, "equalize{min-observations=100}," + exact, calib);
  const auto affines = analysis::channelAffines(*outcome.context);
  EXPECT_TRUE(std::any_of(affines.begin(), affines.end(),
                          [](const auto& entry) { return !entry.second.offset.empty(); }));
  EXPECT_EQ(outcome.result.statistics.get("layers-flagged"), 0);
}

TEST_F(Equalize, ChannelAffineRecordsCompose) {
  PassContext context;
  analysis::recordChannelAffine(context, "t", 1, std::vector<double>{2.0, 0.5});
  analysis::recordChannelAffine(context, "t", 1, std::vector<double>{3.0, 1.0},
                                std::vector<double>{-1.0, 4.0});
  const analysis::ChannelAffine a = analysis::channelAffines(context).at("t");
  EXPECT_EQ(a.scale, (std::vector<double>{6.0, 0.5}));  // 3 * (2 x) - 1, 1 * (0.5 x) + 4
  EXPECT_EQ(a.offset, (std::vector<double>{-1.0, 4.0}));
  interp::Array changed = interp::Array::fromTensor(
      Tensor::fromDoubles(DataType::Float, {1, 2, 2}, std::vector<double>{5.0, 11.0, 4.5, 5.0}));
  interp::Array x = a.undo(changed);
  EXPECT_DOUBLE_EQ(x.getDouble(0), 1.0);
  EXPECT_DOUBLE_EQ(x.getDouble(1), 2.0);
  EXPECT_DOUBLE_EQ(x.getDouble(2), 1.0);
  EXPECT_DOUBLE_EQ(x.getDouble(3), 2.0);
}

}  // namespace
}  // namespace qopt::testing
