// QuantizeLinear -> DequantizeLinear pairs on 8-bit integers run as one pass (the activations of
// Q/DQ models): bitwise the outputs of the two kernels (RunOptions::fuse = false), without the
// integers in memory, and unfused wherever the integers are seen by someone else or the
// parameters are not one constant each; and as the last stage of a convolution's epilogue. The
// vectorized loops against QuantMath's value-by-value definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <unordered_set>

#include "InterpTestUtil.h"
#include "ops/QuantLoops.h"
#include "ops/QuantMath.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

constexpr float kScale = 0.05f;

// Values around every rounding tie of x / kScale, the specials, and values far outside the range.
Array pairInputs(Shape shape, uint32_t seed) {
  Array a(DataType::Float, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-9.0f, 9.0f);
  float* p = a.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    p[i] = i % 3 == 0 ? (static_cast<float>(i % 600) - 300.0f + 0.5f) * kScale : dist(rng);
  }
  const float specials[] = {
      std::numeric_limits<float>::quiet_NaN(), -0.0f, std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(), 1e30f, -1e30f,
      std::numeric_limits<float>::denorm_min()};
  for (size_t i = 0; i < std::size(specials) && static_cast<int64_t>(i * 5 + 1) < a.numel(); ++i) {
    p[i * 5 + 1] = specials[i];
  }
  return a;
}

struct PairCase {
  std::string name;
  int64_t opset;
  DataType type;
  int64_t quantizeZero;
  int64_t dequantizeZero;  // may differ from the quantizer's: still exact
  Shape x;
  int threads;
};

Array zeroPoint(DataType type, int64_t z) {
  Array a(type, {});
  if (type == DataType::Int8) {
    a.data<int8_t>()[0] = static_cast<int8_t>(z);
  } else {
    a.data<uint8_t>()[0] = static_cast<uint8_t>(z);
  }
  return a;
}

struct Built {
  std::unique_ptr<GraphBuilder> builder;
  Value* integers = nullptr;
  Value* result = nullptr;
};

// x -> QuantizeLinear -> DequantizeLinear.
Built buildPair(const PairCase& c, float dequantizeScale = kScale) {
  Built built;
  built.builder = std::make_unique<GraphBuilder>(c.opset);
  GraphBuilder& b = *built.builder;
  Value* x = b.input("x", DataType::Float);
  Node* q =
      b.node("QuantizeLinear", {x, b.constant("s", Array::scalar<float>(DataType::Float, kScale)),
                                b.constant("z", zeroPoint(c.type, c.quantizeZero))});
  built.integers = q->output(0);
  Node* dq = b.node(
      "DequantizeLinear",
      {q->output(0), b.constant("s2", Array::scalar<float>(DataType::Float, dequantizeScale)),
       b.constant("z2", zeroPoint(c.type, c.dequantizeZero))});
  b.output(dq->output(0));
  built.result = dq->output(0);
  return built;
}

// Both ways on input x; the pair's output is the graph's only output.
BothWays runBothWays(const Graph& graph, const Array& x, int threads) {
  return testing::runBothWays(graph, {{"x", x}}, threads);
}

class FakeQuantFusion : public ::testing::TestWithParam<PairCase> {};

TEST_P(FakeQuantFusion, FusedIsBitwiseTheTwoKernelsWithoutTheIntegers) {
  const PairCase& c = GetParam();
  Built built = buildPair(c);
  const Array x = pairInputs(c.x, 3);
  BothWays r = runBothWays(built.builder->graph(), x, c.threads);
  EXPECT_TRUE(bitwiseEqual(r.fused.at(0), r.unfused.at(0)));
  // Unfused, the integers and the dequantized values are alive together; fused, the integers
  // never exist.
  const uint64_t floats = static_cast<uint64_t>(x.numel()) * sizeof(float);
  EXPECT_EQ(r.unfusedPeak, floats + static_cast<uint64_t>(x.numel()));
  EXPECT_EQ(r.fusedPeak, floats);
}

INSTANTIATE_TEST_SUITE_P(
    Pairs, FakeQuantFusion,
    ::testing::Values(PairCase{"int8_opset13", 13, DataType::Int8, 0, 0, {2, 3, 5, 7}, 1},
                      PairCase{"int8_zero_points", 13, DataType::Int8, -7, 3, {1, 1, 257}, 1},
                      PairCase{"uint8_opset10", 10, DataType::UInt8, 128, 128, {4, 33}, 1},
                      PairCase{"uint8_opset21", 21, DataType::UInt8, 3, 250, {2, 4, 9, 9}, 1},
                      PairCase{"int8_two_threads", 19, DataType::Int8, 1, 1, {3, 40000}, 2}),
    [](const auto& info) { return info.param.name; });

const PairCase kPlain{"plain", 13, DataType::Int8, 2, 2, {2, 3, 17}, 1};

// Fused, only the dequantized values were ever alive; the integers too means two kernels ran.
bool ranFused(Interpreter& interpreter, const Array& x) {
  return interpreter.lastPeakBytes() == static_cast<uint64_t>(x.numel()) * sizeof(float);
}

TEST(FakeQuantFusion, ObservedIntegersAreComputedByTheQuantizeLinear) {
  Built built = buildPair(kPlain);
  const Array x = pairInputs(kPlain.x, 5);
  BothWays r = runBothWays(built.builder->graph(), x, 1);
  Interpreter interpreter(built.builder->graph());
  Recorder recorder;
  recorder.values = {built.integers};
  Array y = interpreter.run({{"x", x}}, &recorder).at(0);
  EXPECT_TRUE(bitwiseEqual(y, r.unfused.at(0)));
  ASSERT_EQ(recorder.seen.count(built.integers->name()), 1u);
  EXPECT_EQ(recorder.seen[built.integers->name()].dataType(), DataType::Int8);
  EXPECT_FALSE(ranFused(interpreter, x));
  // Observing the dequantized values keeps the pair fused and reports them.
  Recorder outer;
  const Value* dequantized = built.integers->uses()[0].user->output(0);
  outer.values = {dequantized};
  Array z = interpreter.run({{"x", x}}, &outer).at(0);
  EXPECT_TRUE(bitwiseEqual(z, r.unfused.at(0)));
  EXPECT_TRUE(ranFused(interpreter, x));
  ASSERT_EQ(outer.seen.count(dequantized->name()), 1u);
}

TEST(FakeQuantFusion, IntegersReadElsewhereOrReturnedStay) {
  for (int variant = 0; variant < 2; ++variant) {
    Built built = buildPair(kPlain);
    GraphBuilder& b = *built.builder;
    if (variant == 0) {
      b.output(built.integers);
    } else {
      b.output(b.node("Cast", {built.integers})->output(0));
      built.integers->uses().back().user->setAttr(
          Attribute::makeInt("to", static_cast<int64_t>(DataType::Float)));
    }
    const Array x = pairInputs(kPlain.x, 6);
    BothWays r = runBothWays(b.graph(), x, 1);
    EXPECT_TRUE(bitwiseEqual(r.fused.at(0), r.unfused.at(0))) << variant;
    EXPECT_EQ(r.fusedPeak, r.unfusedPeak) << variant;
  }
}

TEST(FakeQuantFusion, PerChannelParametersRunAsTwoKernels) {
  GraphBuilder b(13);
  Value* x = b.input("x", DataType::Float);
  Array scales(DataType::Float, {3});
  for (int i = 0; i < 3; ++i) scales.data<float>()[i] = 0.1f * static_cast<float>(i + 1);
  Array zeros(DataType::Int8, {3});
  std::memset(zeros.bytes(), 0, 3);
  Node* q = b.node("QuantizeLinear", {x, b.constant("s", scales), b.constant("z", zeros)});
  q->setAttr(Attribute::makeInt("axis", 1));
  Node* dq =
      b.node("DequantizeLinear", {q->output(0), b.constant("s2", scales), b.constant("z2", zeros)});
  dq->setAttr(Attribute::makeInt("axis", 1));
  b.output(dq->output(0));
  const Array in = pairInputs({2, 3, 11}, 8);
  BothWays r = runBothWays(b.graph(), in, 1);
  EXPECT_TRUE(bitwiseEqual(r.fused.at(0), r.unfused.at(0)));
  EXPECT_EQ(r.fusedPeak, r.unfusedPeak);
}

// A Conv (or a Conv chain) whose output only a QuantizeLinear -> DequantizeLinear pair reads:
// the pair runs as the last stage of the convolution's epilogue, for every convolution kernel
// (16-channel depthwise, plane depthwise, direct, GEMM), bitwise the nodes one by one, and the
// float output and the integers never exist.
struct ConvPairCase {
  std::string name;
  Shape x;
  int64_t filters, kernel, group;
  bool relu;
  int threads = 1;
};

class ConvEpilogueFakeQuant : public ::testing::TestWithParam<ConvPairCase> {};

struct BuiltConv {
  std::unique_ptr<GraphBuilder> builder;
  Value* convOut = nullptr;
  Value* layerOut = nullptr;  // what the QuantizeLinear reads
  Value* integers = nullptr;
};

BuiltConv buildConvPair(const ConvPairCase& c) {
  BuiltConv built;
  built.builder = std::make_unique<GraphBuilder>(13);
  GraphBuilder& b = *built.builder;
  Value* x = b.input("x", DataType::Float);
  const int64_t channels = c.x[1];
  Array w = randomFloats({c.filters, channels / c.group, c.kernel, c.kernel}, 11, -0.5f, 0.5f);
  Node* conv = b.node("Conv", {x, b.constant("w", w),
                               b.constant("bias", randomFloats({c.filters}, 12, -1.0f, 1.0f))});
  const int64_t pad = c.kernel / 2;
  conv->setAttr(Attribute::makeInt("group", c.group));
  conv->setAttr(Attribute::makeInts("pads", {pad, pad, pad, pad}));
  built.convOut = conv->output(0);
  Value* y = conv->output(0);
  if (c.relu) y = b.node("Relu", {y})->output(0);
  built.layerOut = y;
  Node* q =
      b.node("QuantizeLinear", {y, b.constant("s", Array::scalar<float>(DataType::Float, kScale)),
                                b.constant("z", zeroPoint(DataType::UInt8, 7))});
  built.integers = q->output(0);
  Node* dq = b.node("DequantizeLinear",
                    {q->output(0), b.constant("s2", Array::scalar<float>(DataType::Float, kScale)),
                     b.constant("z2", zeroPoint(DataType::UInt8, 7))});
  b.output(dq->output(0));
  return built;
}

TEST_P(ConvEpilogueFakeQuant, FusedIsBitwiseTheNodesWithoutTheirTensors) {
  const ConvPairCase& c = GetParam();
  BuiltConv built = buildConvPair(c);
  const Array x = randomFloats(c.x, 13, -4.0f, 4.0f);
  BothWays r = runBothWays(built.builder->graph(), x, c.threads);
  EXPECT_TRUE(bitwiseEqual(r.fused.at(0), r.unfused.at(0)));
  // Fused, the output is the only tensor the run allocates.
  const uint64_t outputBytes = static_cast<uint64_t>(r.fused.at(0).numel()) * sizeof(float);
  EXPECT_EQ(r.fusedPeak, outputBytes);
  EXPECT_GT(r.unfusedPeak, outputBytes);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, ConvEpilogueFakeQuant,
    ::testing::Values(ConvPairCase{"depthwise_blocked_relu", {1, 20, 9, 23}, 20, 3, 20, true},
                      ConvPairCase{"depthwise_blocked_5x5", {2, 16, 8, 30}, 16, 5, 16, false},
                      ConvPairCase{"depthwise_plane", {1, 3, 70, 70}, 3, 3, 3, true},
                      ConvPairCase{"direct", {1, 3, 20, 21}, 18, 3, 1, true},
                      ConvPairCase{"gemm", {1, 24, 10, 11}, 40, 3, 1, false},
                      ConvPairCase{"pointwise_two_threads", {1, 32, 40, 40}, 48, 1, 1, true, 2}),
    [](const auto& info) { return info.param.name; });

TEST(ConvEpilogueFakeQuant, ObservedInnerValuesRunTheNodesOneByOne) {
  const ConvPairCase c{"observed", {1, 16, 6, 17}, 16, 3, 16, true};
  BuiltConv built = buildConvPair(c);
  const Array x = randomFloats(c.x, 14, -4.0f, 4.0f);
  BothWays r = runBothWays(built.builder->graph(), x, 1);
  // The Conv's output inside the chain: every node on its own. The QuantizeLinear's input or
  // its integers: the chain without the pair, and the pair as its own step.
  for (const Value* wanted : {built.convOut, built.layerOut, built.integers}) {
    Interpreter interpreter(built.builder->graph());
    Recorder recorder;
    recorder.values = {wanted};
    Array y = interpreter.run({{"x", x}}, &recorder).at(0);
    EXPECT_TRUE(bitwiseEqual(y, r.unfused.at(0))) << wanted->name();
    ASSERT_EQ(recorder.seen.count(wanted->name()), 1u) << wanted->name();
    EXPECT_GT(interpreter.lastPeakBytes(), r.fusedPeak) << wanted->name();
  }
}

// The vectorized loops give, value by value, what QuantMath's scalar definitions give.
TEST(QuantLoops, MatchTheScalarDefinitions) {
  const Array x = pairInputs({1, 4099}, 9);
  const float* xp = x.data<float>();
  const int64_t n = x.numel();
  for (DataType type : {DataType::Int8, DataType::UInt8}) {
    const QuantRange range = quantRange(type);
    for (int32_t z : {range.min, 0, 5, range.max}) {
      if (z < range.min || z > range.max) continue;
      const QuantizeParams q{kScale, z, static_cast<float>(range.min - z),
                             static_cast<float>(range.max - z)};
      std::vector<int8_t> s8(static_cast<size_t>(n));
      std::vector<uint8_t> u8(static_cast<size_t>(n));
      std::vector<float> fake(static_cast<size_t>(n)), back(static_cast<size_t>(n));
      if (type == DataType::Int8) {
        quantizeRow(xp, s8.data(), n, q);
        dequantizeRow(s8.data(), back.data(), n, 0.5f, z);
      } else {
        quantizeRow(xp, u8.data(), n, q);
        dequantizeRow(u8.data(), back.data(), n, 0.5f, z);
      }
      fakeQuantizeRow(xp, fake.data(), n, q, 0.5f, z);
      for (int64_t i = 0; i < n; ++i) {
        const int32_t expected = quantizeValue(xp[i] / kScale, z, range);
        const int32_t got =
            type == DataType::Int8 ? s8[static_cast<size_t>(i)] : u8[static_cast<size_t>(i)];
        ASSERT_EQ(got, expected) << "x=" << xp[i] << " z=" << z;
        const float dequantized = static_cast<float>(expected - z) * 0.5f;
        ASSERT_EQ(back[static_cast<size_t>(i)], dequantized);
        ASSERT_EQ(fake[static_cast<size_t>(i)], dequantized);
      }
    }
  }
}

}  // namespace
}  // namespace qopt::interp
