// fold-bn through the library: exactness in every floating point type (each new weight equals
// the double-precision fold rounded once), integer weights kept by the quantized folds, the
// name map, cloning of shared weights and determinism. Relative error of an output:
// max|folded - original| / max(max|original|, smallest normal float), per output.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "FoldTestSupport.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt::testing {
namespace {

struct BnParams {
  std::vector<double> gamma, beta, mean, var;
  double epsilon = 1e-3;
};

// Statistics far from identity, gammas of both signs.
BnParams randomBn(size_t channels, std::mt19937& rng) {
  std::uniform_real_distribution<double> magnitude(0.3, 2.0), centred(-1.0, 1.0), var(0.2, 3.0);
  BnParams p;
  for (size_t c = 0; c < channels; ++c) {
    p.gamma.push_back((c % 3 == 1 ? -1 : 1) * magnitude(rng));
    p.beta.push_back(centred(rng));
    p.mean.push_back(centred(rng));
    p.var.push_back(var(rng));
  }
  return p;
}

// Appends y = BatchNormalization(x) with `p` stored in `type`, returning y.
Value* addBatchNorm(Graph& g, Value* x, const BnParams& p, DataType type, const std::string& name) {
  auto c = static_cast<int64_t>(p.gamma.size());
  Value* params[4];
  const std::vector<double>* values[4] = {&p.gamma, &p.beta, &p.mean, &p.var};
  const char* suffix[4] = {"_gamma", "_beta", "_mean", "_var"};
  for (int i = 0; i < 4; ++i)
    params[i] = addInitializer(g, name + suffix[i], type, {c}, *values[i]);
  Node* bn = g.createNode("BatchNormalization", {x, params[0], params[1], params[2], params[3]}, 1);
  bn->setAttr(Attribute::makeFloat("epsilon", static_cast<float>(p.epsilon)));
  bn->output(0)->setName(name);
  bn->output(0)->setType(x->type());
  return bn->output(0);
}

// The parameters of BatchNormalization `name` as the model stores them (rounded to its type).
BnParams storedBn(const Model& model, const std::string& name, const BnParams& p) {
  BnParams stored = p;
  auto read = [&](const char* suffix) {
    return model.graph().findValue(name + suffix)->initializer()->toDoubles();
  };
  stored.gamma = read("_gamma");
  stored.beta = read("_beta");
  stored.mean = read("_mean");
  stored.var = read("_var");
  return stored;
}

std::vector<double> scaleOf(const BnParams& p) {
  std::vector<double> s;
  double eps = static_cast<double>(static_cast<float>(p.epsilon));
  for (size_t c = 0; c < p.gamma.size(); ++c) s.push_back(p.gamma[c] / std::sqrt(p.var[c] + eps));
  return s;
}

// Conv (2 groups) -> BatchNormalization in `type`, the BN output a graph output.
std::unique_ptr<Model> convBnModel(DataType type, const BnParams& p, std::mt19937& rng) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(type, {1, 4, 5, 5}));
  Value* w = addInitializer(g, "w", type, {6, 2, 3, 3}, randomValues(6 * 2 * 9, rng));
  Value* b = addInitializer(g, "b", type, {6}, randomValues(6, rng));
  Node* conv = g.createNode("Conv", {x, w, b}, 1);
  conv->setAttr(Attribute::makeInt("group", 2));
  conv->setAttr(Attribute::makeInts("kernel_shape", {3, 3}));
  conv->setAttr(Attribute::makeInts("pads", {1, 1, 1, 1}));
  conv->output(0)->setName("conv_out");
  conv->output(0)->setType(ValueType::tensor(type, {1, 6, 5, 5}));
  g.addOutput(addBatchNorm(g, conv->output(0), p, type, "bn_out"));
  return model;
}

class FoldBnTypes : public ::testing::TestWithParam<DataType> {};

TEST_P(FoldBnTypes, WeightsAreTheDoubleFoldRoundedOnce) {
  DataType type = GetParam();
  std::mt19937 rng(11);
  BnParams p = randomBn(6, rng);
  auto model = convBnModel(type, p, rng);
  std::vector<double> w = model->graph().findValue("w")->initializer()->toDoubles();
  std::vector<double> b = model->graph().findValue("b")->initializer()->toDoubles();
  auto original = model->clone();

  PassOutcome run = runPipeline(*model, "fold-bn");
  EXPECT_EQ(run.result.statistics.get("bn-folded"), 1);
  EXPECT_EQ(countOps(*model, "BatchNormalization"), 0);

  // The pass reads the parameters as stored, rounded to the type.
  BnParams stored = storedBn(*original, "bn_out", p);
  std::vector<double> scale = scaleOf(stored);
  std::vector<double> expectedW(w.size()), expectedB(b.size());
  for (size_t i = 0; i < w.size(); ++i) expectedW[i] = w[i] * scale[i / 18];
  for (size_t c = 0; c < b.size(); ++c) {
    expectedB[c] = b[c] * scale[c] + (stored.beta[c] - stored.mean[c] * scale[c]);
  }
  Node* conv = model->graph().firstNode();
  ASSERT_TRUE(conv->is("Conv"));
  EXPECT_TRUE(conv->input(1)->initializer()->sameContent(
      Tensor::fromDoubles(type, {6, 2, 3, 3}, expectedW)));
  EXPECT_TRUE(
      conv->input(2)->initializer()->sameContent(Tensor::fromDoubles(type, {6}, expectedB)));

  // The folded model computes what the original did, to the precision of the type (the
  // interpreter computes BatchNormalization's factors in float, which bounds the double case).
  double tolerance = type == DataType::Double    ? 1e-6
                     : type == DataType::Float   ? 1e-5
                     : type == DataType::Float16 ? 4e-3
                                                 : 3e-2;
  std::map<std::string, interp::Array> inputs = randomInputs(*original, 5);
  EXPECT_LE(maxRelativeError(runInterpreter(*model, inputs), runInterpreter(*original, inputs)),
            tolerance);
}

INSTANTIATE_TEST_SUITE_P(AllFloatTypes, FoldBnTypes,
                         ::testing::Values(DataType::Float, DataType::Double, DataType::Float16,
                                           DataType::BFloat16),
                         [](const auto& info) { return std::string(dataTypeName(info.param)); });

TEST(FoldBn, NameMapSendsTheBatchNormOutputToTheConv) {
  std::mt19937 rng(3);
  auto model = convBnModel(DataType::Float, randomBn(6, rng), rng);
  PassOutcome run = runPipeline(*model, "fold-bn");
  // The graph output keeps its name, now on the Conv.
  ASSERT_EQ(model->graph().outputs().size(), 1u);
  EXPECT_EQ(model->graph().outputs()[0]->name(), "bn_out");
  EXPECT_TRUE(model->graph().outputs()[0]->producer()->is("Conv"));
  EXPECT_EQ(run.context->nameMap().currentName("bn_out"), std::optional<std::string>("bn_out"));
  EXPECT_EQ(run.context->nameMap().currentName("conv_out"), std::optional<std::string>("bn_out"));
}

TEST(FoldBn, SameInputGivesIdenticalBytes) {
  std::string first;
  for (int i = 0; i < 2; ++i) {
    std::mt19937 rng(7);
    auto model = convBnModel(DataType::Float, randomBn(6, rng), rng);
    runPipeline(*model, "fold-bn");
    std::string bytes = serializeModel(*model);
    if (i == 0)
      first = bytes;
    else
      EXPECT_EQ(bytes, first);
  }
}

TEST(FoldBn, ClonesASharedWeightOnlyWhenAsked) {
  for (bool clone : {false, true}) {
    std::mt19937 rng(5);
    auto model = newModel(17);
    Graph& g = model->graph();
    Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 3, 4, 4}));
    Value* w = addInitializer(g, "w", DataType::Float, {4, 3, 1, 1}, randomValues(12, rng));
    Node* a = g.createNode("Conv", {x, w}, 1);
    Node* b = g.createNode("Conv", {x, w}, 1);
    a->output(0)->setType(ValueType::tensor(DataType::Float, {1, 4, 4, 4}));
    b->output(0)->setType(ValueType::tensor(DataType::Float, {1, 4, 4, 4}));
    g.addOutput(addBatchNorm(g, a->output(0), randomBn(4, rng), DataType::Float, "ya"));
    g.addOutput(b->output(0));
    auto original = model->clone();
    PassOutcome run = runPipeline(*model, clone ? "fold-bn{clone-shared-weights=true}" : "fold-bn");
    EXPECT_EQ(run.result.statistics.get("bn-folded"), clone ? 1 : 0);
    EXPECT_EQ(run.result.statistics.get("missed-shared-weight"), clone ? 0 : 1);
    EXPECT_EQ(run.result.statistics.get("weights-cloned"), clone ? 1 : 0);
    std::map<std::string, interp::Array> inputs = randomInputs(*original, 9);
    EXPECT_LE(maxRelativeError(runInterpreter(*model, inputs), runInterpreter(*original, inputs)),
              1e-5);
  }
}

// QuantizeLinear as ONNX Runtime computes it for float: x / scale in float, round half to even.
int64_t quantize(double x, double scale, int64_t zero) {
  float v = static_cast<float>(x) / static_cast<float>(scale);
  return std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(v)) + zero, -128, 127);
}

// The integer weights of a Conv whose weight is float -> QuantizeLinear -> DequantizeLinear.
std::vector<int64_t> integerWeights(const Node& conv) {
  const Node* dq = conv.input(1)->producer();
  const Node* q = dq->input(0)->producer();
  std::vector<double> w = q->input(0)->initializer()->toDoubles();
  std::vector<double> s = q->input(1)->initializer()->toDoubles();
  size_t perChannel = w.size() / static_cast<size_t>(q->input(0)->initializer()->dims()[0]);
  std::vector<int64_t> ints;
  for (size_t i = 0; i < w.size(); ++i)
    ints.push_back(quantize(w[i], s.size() == 1 ? s[0] : s[i / perChannel], 0));
  return ints;
}

class FoldBnQuantized : public ::testing::TestWithParam<bool> {};

// Many random elements: some land where rounding the rescaled weight would move them across a
// .5 boundary; fold-bn must keep every integer (negated for negative BatchNorm scales).
TEST_P(FoldBnQuantized, IntegersAreKeptExactly) {
  bool perChannel = GetParam();
  std::mt19937 rng(perChannel ? 21 : 22);
  const int64_t cout = 32, cin = 16;
  auto model = newModel(13);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, cin, 6, 6}));
  std::vector<double> w = randomValues(static_cast<size_t>(cout * cin * 9), rng);
  Value* weight = addInitializer(g, "w", DataType::Float, {cout, cin, 3, 3}, w);
  // Symmetric scales, amax / 127 as QAT exports them: the integers stay within [-127, 127].
  std::vector<double> scales(perChannel ? static_cast<size_t>(cout) : 1, 0.0);
  size_t perOutput = static_cast<size_t>(cin * 9);
  for (size_t i = 0; i < w.size(); ++i) {
    double& amax = scales[perChannel ? i / perOutput : 0];
    amax = std::max(amax, std::fabs(w[i]));
  }
  for (double& scale : scales) scale /= 127;
  std::vector<int64_t> scaleDims = perChannel ? std::vector<int64_t>{cout} : std::vector<int64_t>{};
  Value* s = addInitializer(g, "s", DataType::Float, scaleDims, scales);
  std::vector<double> zeros(scales.size(), 0.0);
  Value* z = addInitializer(g, "z", DataType::Int8, scaleDims, zeros);
  Node* q = g.createNode("QuantizeLinear", {weight, s, z}, 1);
  Node* dq = g.createNode("DequantizeLinear", {q->output(0), s, z}, 1);
  q->setAttr(Attribute::makeInt("axis", 0));
  dq->setAttr(Attribute::makeInt("axis", 0));
  Node* conv = g.createNode("Conv", {x, dq->output(0)}, 1);
  conv->setAttr(Attribute::makeInts("pads", {1, 1, 1, 1}));
  conv->output(0)->setType(ValueType::tensor(DataType::Float, {1, cout, 6, 6}));
  BnParams p = randomBn(static_cast<size_t>(cout), rng);
  g.addOutput(addBatchNorm(g, conv->output(0), p, DataType::Float, "y"));
  std::vector<int64_t> before = integerWeights(*conv);
  auto original = model->clone();
  std::vector<double> storedScales = s->initializer()->toDoubles();

  PassOutcome run = runPipeline(*model, "fold-bn");
  ASSERT_EQ(run.result.statistics.get("bn-folded"), 1)
      << (run.result.remarks.empty() ? "" : run.result.remarks[0].message);
  EXPECT_EQ(run.result.statistics.get("quantized-weights-rescaled"), 1);
  std::vector<int64_t> after = integerWeights(*conv);
  std::vector<double> scale = scaleOf(storedBn(*original, "y", p));
  for (size_t i = 0; i < before.size(); ++i) {
    int64_t expected = scale[i / perOutput] < 0 ? -before[i] : before[i];
    ASSERT_EQ(after[i], expected) << "element " << i;
  }
  // The new scales are s * |scale| per channel, rounded once.
  std::vector<double> newScales = dq->input(1)->initializer()->toDoubles();
  ASSERT_EQ(newScales.size(), static_cast<size_t>(cout));
  for (size_t c = 0; c < newScales.size(); ++c) {
    double expected = storedScales[perChannel ? c : 0] * std::fabs(scale[c]);
    EXPECT_EQ(newScales[c], static_cast<double>(static_cast<float>(expected)));
  }
  EXPECT_EQ(dq->attrInt("axis", 1), 0);
  std::map<std::string, interp::Array> inputs = randomInputs(*original, 13);
  EXPECT_LE(maxRelativeError(runInterpreter(*model, inputs), runInterpreter(*original, inputs)),
            1e-5);
}

// w / s sits just below a .5 boundary: w * 1.7 / (s * 1.7), each rounded to float, lands on the
// other side. The element must be moved to the dequantized value of its integer.
TEST(FoldBn, SnapsAWeightWhoseIntegerRoundingWouldMove) {
  auto model = newModel(13);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 1, 2, 2}));
  Value* w = addInitializer(g, "w", DataType::Float, {2, 1, 1, 1},
                            {0.8949999809265137, 0.7949999570846558});
  Value* s = addInitializer(g, "s", DataType::Float, {}, {0.01});
  Value* z = addInitializer(g, "z", DataType::Int8, {}, {0});
  Node* q = g.createNode("QuantizeLinear", {w, s, z}, 1);
  Node* dq = g.createNode("DequantizeLinear", {q->output(0), s, z}, 1);
  Node* conv = g.createNode("Conv", {x, dq->output(0)}, 1);
  conv->output(0)->setType(ValueType::tensor(DataType::Float, {1, 2, 2, 2}));
  BnParams p{{1.7, 1.7}, {0.0, 0.0}, {0.0, 0.0}, {1.0, 1.0}, 0.0};
  g.addOutput(addBatchNorm(g, conv->output(0), p, DataType::Float, "y"));
  std::vector<int64_t> before = integerWeights(*conv);
  EXPECT_EQ(before, (std::vector<int64_t>{90, 80}));

  PassOutcome run = runPipeline(*model, "fold-bn");
  ASSERT_EQ(run.result.statistics.get("bn-folded"), 1);
  EXPECT_EQ(run.result.statistics.get("weight-elements-snapped"), 2);
  EXPECT_EQ(integerWeights(*conv), before);
  // |scale| is the same in both channels: the scale stays per tensor.
  EXPECT_EQ(dq->input(1)->initializer()->dims(), std::vector<int64_t>{});
}

INSTANTIATE_TEST_SUITE_P(PerChannelAndPerTensor, FoldBnQuantized, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "PerChannel" : "PerTensor"; });

}  // namespace
}  // namespace qopt::testing
