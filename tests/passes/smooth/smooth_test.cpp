// smooth: SmoothQuant. The factors against values worked out by hand; alpha=auto choosing a
// high alpha when one activation channel holds outliers; exactness (max relative output error
// 1e-5 before quantization) with the division folded into a LayerNormalization shared by three
// readers, into a Mul/Add chain, into a preceding MatMul and Conv, and with a Mul inserted where
// nothing can take it; option and data errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "RescaleTestSupport.h"
#include "SmoothingScales.h"
#include "qopt/ir/Error.h"

namespace qopt::testing {
namespace {

constexpr double kExact = 1e-5;

bool hasRemark(const PassResult& result, const std::string& text) {
  return std::any_of(result.remarks.begin(), result.remarks.end(),
                     [&](const Remark& r) { return r.message.find(text) != std::string::npos; });
}

// Random samples of input `name` (shape `dims`) whose channel `outlier` on the last axis is
// 100 times larger: the activation outliers SmoothQuant is for.
Samples outlierSamples(const std::string& name, std::vector<int64_t> dims, int64_t outlier,
                       size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  Samples samples;
  for (size_t s = 0; s < count; ++s) {
    uint64_t n = 1;
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    std::vector<double> v = randomValues(n, rng);
    for (uint64_t i = 0; i < n; ++i) {
      if (static_cast<int64_t>(i % static_cast<uint64_t>(dims.back())) == outlier) v[i] *= 100;
    }
    samples.push_back(
        {{name, interp::Array::fromTensor(Tensor::fromDoubles(DataType::Float, dims, v))}});
  }
  return samples;
}

// Most tests build their model in `model` (opset 17), through `g`.
class Smooth : public ::testing::Test {
 protected:
  std::unique_ptr<Model> model = newModel(17);
  Graph& g = model->graph();
};

TEST_F(Smooth, ScalesWorkedOutByHand) {
  // s_j = actMax_j^alpha / weightMax_j^(1 - alpha).
  std::vector<double> act{4.0, 1.0, 0.0}, weight{1.0, 4.0, 2.0};
  EXPECT_EQ(smooth::smoothingScales(act, weight, 0.5), (std::vector<double>{2.0, 0.5, 1.0}));
  EXPECT_EQ(smooth::smoothingScales(act, weight, 1.0), (std::vector<double>{4.0, 1.0, 1.0}));
  EXPECT_EQ(smooth::smoothingScales(act, weight, 0.0), (std::vector<double>{1.0, 0.25, 1.0}));
  smooth::WeightMatrix a{2, 2, {1.0, -3.0, 0.5, 0.25}}, b{2, 1, {-2.0, 0.125}};
  std::vector<smooth::WeightMatrix> both{a, b};
  EXPECT_EQ(smooth::rowAbsMax(both), (std::vector<double>{3.0, 0.5}));
}

TEST_F(Smooth, AutoAlphaIsHighForAnOutlierChannel) {
  std::mt19937 rng(11);
  const size_t rows = 256, k = 16, n = 12;
  std::vector<float> x(rows * k);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (i % k == 5 ? 100.0f : 1.0f);
  std::vector<double> actMax(k, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    actMax[i % k] = std::max(actMax[i % k], std::fabs(double(x[i])));
  std::vector<smooth::WeightMatrix> w{{k, n, randomValues(k * n, rng)}};
  smooth::AlphaChoice choice = smooth::searchAlpha(x, actMax, w);
  EXPECT_GE(choice.alpha, 0.5);
  EXPECT_LT(choice.error, choice.unsmoothedError / 4);
  // Without outliers there is little to gain, and alpha=auto must not make it worse.
  std::vector<float> plain(rows * k);
  for (float& v : plain) v = normal(rng);
  std::vector<double> plainMax(k, 0.0);
  for (size_t i = 0; i < plain.size(); ++i)
    plainMax[i % k] = std::max(plainMax[i % k], std::fabs(double(plain[i])));
  smooth::AlphaChoice calm = smooth::searchAlpha(plain, plainMax, w);
  EXPECT_LE(calm.error, calm.unsmoothedError);
}

TEST_F(Smooth, LayerNormFoldSharedByThreeReadersIsExact) {
  std::mt19937 rng(12);
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {2, 6, 8}));
  std::vector<double> gamma = randomValues(8, rng);
  gamma[3] = 40.0;  // an outlier channel after normalization
  Value* scale = addInitializer(g, "gamma", DataType::Float, {8}, gamma);
  Value* beta = addInitializer(g, "beta", DataType::Float, {8}, randomValues(8, rng));
  Value* n = addNode(g, "LayerNormalization", {x, scale, beta}, "n",
                     ValueType::tensor(DataType::Float, {2, 6, 8}));
  for (const char* name : {"q", "k", "v"}) {
    Value* w =
        addInitializer(g, std::string(name) + "_w", DataType::Float, {8, 5}, randomValues(40, rng));
    g.addOutput(addNode(g, "MatMul", {n, w}, name, ValueType::tensor(DataType::Float, {2, 6, 5})));
  }
  PassResult result;
  EXPECT_LE(errorAfterCalibrating(*model, "smooth", randomSampleSet(*model, 4, 90),
                                  "smooth_layernorm", &result),
            kExact);
  EXPECT_EQ(result.statistics.get("layers-smoothed"), 3);
  EXPECT_EQ(result.statistics.get("folded"), 1);
  EXPECT_EQ(countOps(*model, "Mul"), 0);
  EXPECT_TRUE(hasRemark(result, "the scale and bias of node producing 'n' (LayerNormalization)"));
  EXPECT_NE(initializerValues(*model, "gamma"), std::vector<double>(gamma.begin(), gamma.end()));
}

TEST_F(Smooth, MulInsertedWhereNothingTakesTheFactors) {
  // x is a graph input, and also read by a Relu that is not smoothed.
  std::mt19937 rng(13);
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {4, 8}));
  Value* w = addInitializer(g, "w", DataType::Float, {8, 3}, randomValues(24, rng));
  g.addOutput(addNode(g, "MatMul", {x, w}, "y", ValueType::tensor(DataType::Float, {4, 3})));
  g.addOutput(addNode(g, "Relu", {x}, "r", ValueType::tensor(DataType::Float, {4, 8})));
  Samples samples = outlierSamples("x", {4, 8}, 2, 4, 100);
  std::string calib = writeSamples("smooth_mul", samples);
  PassResult result;
  EXPECT_LE(errorAfter(*model, "smooth", samples, calib, &result), kExact);
  EXPECT_EQ(result.statistics.get("mul-inserted"), 1);
  EXPECT_EQ(countOps(*model, "Mul"), 1);
  EXPECT_TRUE(hasRemark(result, "costs an elementwise kernel"));
}

TEST_F(Smooth, MulInsertedWithoutIntermediateShapes) {
  // Exporters often leave intermediate tensors without types: the factor's shape for a 1x1
  // Conv's input ([K, 1, 1]) and its type come from the Conv's weight.
  std::mt19937 rng(16);
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 4, 5, 5}));
  Value* c = addConv(g, x, "c", {6, 4, 3, 3}, randomValues(216, rng), nullptr, 1, 1);
  Value* a = addNode(g, "Sigmoid", {c}, "a");
  Value* y = addConv(g, a, "y", {3, 6, 1, 1}, randomValues(18, rng), nullptr);
  y->setType(ValueType::tensor(DataType::Float, {1, 3, 5, 5}));
  g.addOutput(y);
  PassResult result;
  EXPECT_LE(errorAfterCalibrating(*model, "smooth", randomSampleSet(*model, 3, 130),
                                  "smooth_untyped", &result),
            kExact);
  EXPECT_EQ(result.statistics.get("mul-inserted"), 1);
  const Value* factor = model->graph().findValue("a_smooth_scale");
  ASSERT_NE(factor, nullptr);
  EXPECT_EQ(factor->initializer()->dims(), (std::vector<int64_t>{6, 1, 1}));
}

TEST_F(Smooth, FoldsIntoMulAddChainsAndPrecedingLayers) {
  // x -> Mul(const) -> Add(const) -> Gemm(transB=1); x2 -> MatMul -> MatMul;
  // x3 -> Conv 3x3 -> Conv 1x1: each division folds, no Mul is added.
  std::mt19937 rng(14);
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {4, 8}));
  Value* a = addInitializer(g, "a", DataType::Float, {}, {1.5});
  Value* b = addInitializer(g, "b", DataType::Float, {8}, randomValues(8, rng));
  Value* m = addNode(g, "Mul", {x, a}, "m", ValueType::tensor(DataType::Float, {4, 8}));
  Value* s = addNode(g, "Add", {b, m}, "s", ValueType::tensor(DataType::Float, {4, 8}));
  Value* gw = addInitializer(g, "gw", DataType::Float, {5, 8}, randomValues(40, rng));
  Value* gc = addInitializer(g, "gc", DataType::Float, {5}, randomValues(5, rng));
  Value* y = addNode(g, "Gemm", {s, gw, gc}, "y", ValueType::tensor(DataType::Float, {4, 5}));
  y->producer()->setAttr(Attribute::makeInt("transB", 1));
  g.addOutput(y);

  Value* x2 = g.addInput("x2", ValueType::tensor(DataType::Float, {3, 6}));
  Value* w1 = addInitializer(g, "w1", DataType::Float, {6, 8}, randomValues(48, rng));
  Value* h = addNode(g, "MatMul", {x2, w1}, "h", ValueType::tensor(DataType::Float, {3, 8}));
  Value* w2 = addInitializer(g, "w2", DataType::Float, {8, 4}, randomValues(32, rng));
  g.addOutput(addNode(g, "MatMul", {h, w2}, "y2", ValueType::tensor(DataType::Float, {3, 4})));

  Value* x3 = g.addInput("x3", ValueType::tensor(DataType::Float, {1, 3, 5, 5}));
  std::vector<double> cb = randomValues(6, rng);
  Value* c = addConv(g, x3, "c", {6, 3, 3, 3}, randomValues(162, rng), &cb, 1, 1);
  c->setType(ValueType::tensor(DataType::Float, {1, 6, 5, 5}));
  Value* y3 = addConv(g, c, "y3", {2, 6, 1, 1}, randomValues(12, rng), nullptr);
  y3->setType(ValueType::tensor(DataType::Float, {1, 2, 5, 5}));
  g.addOutput(y3);

  Samples samples = randomSampleSet(*model, 3, 110);
  for (auto& sample : samples) {  // an outlier channel in x
    interp::Array& in = sample.at("x");
    for (int64_t i = 3; i < in.numel(); i += 8) in.data<float>()[i] *= 50;
  }
  std::string calib = writeSamples("smooth_chains", samples);
  PassResult result;
  EXPECT_LE(errorAfter(*model, "smooth", samples, calib, &result), kExact);
  // Gemm, both MatMuls (the first on a graph input: a Mul) and the 1x1 Conv.
  EXPECT_EQ(result.statistics.get("layers-smoothed"), 4);
  EXPECT_EQ(result.statistics.get("folded"), 3);
  EXPECT_EQ(result.statistics.get("mul-inserted"), 1);
  EXPECT_EQ(initializerValues(*model, "a").size(), 8u);  // the scalar became per channel
  EXPECT_TRUE(hasRemark(result,
                        "the constant of node producing 's' (Add), the constant of node "
                        "producing 'm' (Mul)"));
  EXPECT_TRUE(hasRemark(result, "the output channels of node producing 'h' (MatMul)"));
  EXPECT_TRUE(hasRemark(result, "the output channels of node producing 'c' (Conv)"));
  EXPECT_TRUE(hasRemark(result, "not smoothed: its kernel is not 1x1"));
}

TEST_F(Smooth, FixedAlphaAndErrors) {
  std::mt19937 rng(15);
  auto build = [&] {
    auto model = newModel(17);
    Graph& g = model->graph();
    Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {4, 8}));
    Value* w = addInitializer(g, "w", DataType::Float, {8, 3}, randomValues(24, rng));
    g.addOutput(addNode(g, "MatMul", {x, w}, "y", ValueType::tensor(DataType::Float, {4, 3})));
    return model;
  };
  auto model = build();
  Samples samples = outlierSamples("x", {4, 8}, 1, 2, 120);
  std::string calib = writeSamples("smooth_fixed", samples);
  PassResult result;
  EXPECT_LE(errorAfter(*model, "smooth{alpha=0.8}", samples, calib, &result), kExact);
  EXPECT_TRUE(hasRemark(result, "alpha=0.8;"));
  auto other = build();
  EXPECT_THROW(runWithData(*other, "smooth{alpha=1.5}", calib), Error);
  EXPECT_THROW(runWithData(*other, "smooth{alpha=high}", calib), Error);
  EXPECT_THROW(runWithData(*other, "smooth", ""), Error);
}

}  // namespace
}  // namespace qopt::testing
