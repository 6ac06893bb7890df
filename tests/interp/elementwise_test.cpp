// Elementwise kernels: activations, arithmetic with broadcasting, integer semantics, float16
// rounding, comparisons, logic, Where, Clip and the variadic ops.
#include <cmath>
#include <cstring>

#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

TEST(Elementwise, AddBroadcastsBothWays) {
  Array out = runOne("Add", {floats({2, 1}, {10, 20}), floats({3}, {1, 2, 3})});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(doubles(out), (std::vector<double>{11, 12, 13, 21, 22, 23}));
}

TEST(Elementwise, SubBroadcastsAMiddleAxis) {
  Array a = floats({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Array b = floats({2, 1, 2}, {1, 1, 2, 2});
  EXPECT_EQ(doubles(runOne("Sub", {a, b})), (std::vector<double>{0, 1, 2, 3, 3, 4, 5, 6}));
}

TEST(Elementwise, IncompatibleShapesNameTheShapes) {
  try {
    runOne("Mul", {floats({2}, {1, 2}), floats({3}, {1, 2, 3})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2] and [3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Mul"), std::string::npos) << e.what();
  }
}

TEST(Elementwise, IntegerDivisionTruncatesTowardZero) {
  Array out = runOne("Div", {int32s({4}, {7, -7, 7, -7}), int32s({4}, {2, 2, -2, -2})});
  EXPECT_EQ(ints(out), (std::vector<int64_t>{3, -3, -3, 3}));
}

TEST(Elementwise, IntegerDivisionByZeroIsAnError) {
  EXPECT_THROW(runOne("Div", {int32s({1}, {1}), int32s({1}, {0})}), Error);
}

TEST(Elementwise, ModFollowsTheDivisorSignUnlessFmod) {
  Array a = int32s({4}, {5, -5, 5, -5});
  Array b = int32s({4}, {3, 3, -3, -3});
  EXPECT_EQ(ints(runOne("Mod", {a, b})), (std::vector<int64_t>{2, 1, -1, -2}));
  auto fmod = [](Node& n) { n.setAttr(Attribute::makeInt("fmod", 1)); };
  EXPECT_EQ(ints(runOne("Mod", {a, b}, fmod)), (std::vector<int64_t>{2, -2, 2, -2}));
}

TEST(Elementwise, PowWithMixedTypes) {
  Array out = runOne("Pow", {int64s({3}, {2, 3, -2}), int64s({3}, {10, 2, 3})});
  EXPECT_EQ(ints(out), (std::vector<int64_t>{1024, 9, -8}));
  Array f = runOne("Pow", {floats({2}, {4, 2}), int32s({2}, {2, -1})});
  EXPECT_EQ(f.dataType(), DataType::Float);
  EXPECT_EQ(doubles(f), (std::vector<double>{16, 0.5}));
}

TEST(Elementwise, Activations) {
  Array x = floats({4}, {-2, -0.5f, 0, 3});
  EXPECT_EQ(doubles(runOne("Relu", {x})), (std::vector<double>{0, 0, 0, 3}));
  Array leaky =
      runOne("LeakyRelu", {x}, [](Node& n) { n.setAttr(Attribute::makeFloat("alpha", 0.5f)); });
  EXPECT_EQ(doubles(leaky), (std::vector<double>{-1, -0.25, 0, 3}));
  Array hs = runOne("HardSigmoid", {x});  // alpha 0.2, beta 0.5
  EXPECT_NEAR(hs.getDouble(0), 0.1, 1e-6);
  EXPECT_NEAR(hs.getDouble(3), 1.0, 1e-6);
  Array hsw = runOne("HardSwish", {x});
  EXPECT_NEAR(hsw.getDouble(1), -0.5 * (-0.5 / 6 + 0.5), 1e-6);
  EXPECT_NEAR(hsw.getDouble(3), 3.0, 1e-6);
  Array sig = runOne("Sigmoid", {floats({3}, {-100, 0, 100})});
  EXPECT_NEAR(sig.getDouble(0), 0.0, 1e-30);
  EXPECT_EQ(sig.getDouble(1), 0.5);
  EXPECT_EQ(sig.getDouble(2), 1.0);
  EXPECT_NEAR(runOne("Tanh", {x}).getDouble(0), std::tanh(-2.0), 1e-6);
  EXPECT_NEAR(runOne("Erf", {x}).getDouble(3), std::erf(3.0), 1e-6);
}

TEST(Elementwise, GeluExactAndTanh) {
  Array x = floats({2}, {-1, 1.5f});
  Array exact = runOne("Gelu", {x}, {}, 20);
  EXPECT_NEAR(exact.getDouble(0), -0.15865525393145707, 1e-6);
  EXPECT_NEAR(exact.getDouble(1), 1.399789198096713, 1e-6);
  Array tanh = runOne(
      "Gelu", {x}, [](Node& n) { n.setAttr(Attribute::makeString("approximate", "tanh")); }, 20);
  EXPECT_NEAR(tanh.getDouble(0), -0.15880800939172324, 1e-6);
  // Gelu is an opset-20 op: a model importing opset 17 has no Gelu.
  EXPECT_THROW(runOne("Gelu", {x}, {}, 17), Error);
}

TEST(Elementwise, Float16IsComputedInFloatAndRoundedToHalf) {
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10 in half precision: rounds to even (1).
  Array out = runOne("Add", {halves({2}, {1.0f, 2048.0f}), halves({2}, {0.00048828125f, 1.0f})});
  EXPECT_EQ(out.dataType(), DataType::Float16);
  EXPECT_EQ(out.getDouble(0), 1.0);
  EXPECT_EQ(out.getDouble(1), 2048.0);  // 2049 is not a half: ties to even
}

TEST(Elementwise, ComparisonsAndLogic) {
  Array a = int64s({3}, {1, 2, 3});
  Array b = int64s({1}, {2});
  EXPECT_EQ(ints(runOne("Equal", {a, b})), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(ints(runOne("Less", {a, b})), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(ints(runOne("Greater", {a, b})), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(runOne("Greater", {a, b}).dataType(), DataType::Bool);
  Array p = bools({4}, {true, true, false, false});
  Array q = bools({4}, {true, false, true, false});
  EXPECT_EQ(ints(runOne("And", {p, q})), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(ints(runOne("Not", {p})), (std::vector<int64_t>{0, 0, 1, 1}));
}

TEST(Elementwise, WhereBroadcastsAllThreeInputs) {
  Array cond = bools({2, 1}, {true, false});
  Array x = floats({1, 3}, {1, 2, 3});
  Array y = floats({1}, {-1});
  Array out = runOne("Where", {cond, x, y});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(doubles(out), (std::vector<double>{1, 2, 3, -1, -1, -1}));
}

TEST(Elementwise, ClipBoundsFromAttributesOrInputs) {
  Array x = floats({4}, {-5, 0, 5, NAN});
  auto attrs6 = [](Node& n) {
    n.setAttr(Attribute::makeFloat("min", -1));
    n.setAttr(Attribute::makeFloat("max", 1));
  };
  Array old = runOne("Clip", {x}, attrs6, 6);
  EXPECT_EQ(old.getDouble(0), -1);
  EXPECT_EQ(old.getDouble(2), 1);
  EXPECT_TRUE(std::isnan(old.getDouble(3)));
  Array onlyMax = runOne("Clip", {x, Array(), floats({}, {2})}, {}, 13);
  EXPECT_EQ(onlyMax.getDouble(0), -5);
  EXPECT_EQ(onlyMax.getDouble(2), 2);
  Array ints8 = runOne(
      "Clip",
      {makeArray<int8_t>(DataType::Int8, {3}, {-100, 0, 100}),
       makeArray<int8_t>(DataType::Int8, {}, {-10}), makeArray<int8_t>(DataType::Int8, {}, {10})},
      {}, 13);
  EXPECT_EQ(ints(ints8), (std::vector<int64_t>{-10, 0, 10}));
}

TEST(Elementwise, VariadicMaxMinSumMean) {
  Array a = floats({2}, {1, 5});
  Array b = floats({1}, {3});
  Array c = floats({2}, {2, 2});
  EXPECT_EQ(doubles(runOne("Max", {a, b, c})), (std::vector<double>{3, 5}));
  EXPECT_EQ(doubles(runOne("Min", {a, b, c})), (std::vector<double>{1, 2}));
  EXPECT_EQ(doubles(runOne("Sum", {a, b, c})), (std::vector<double>{6, 10}));
  Array mean = runOne("Mean", {a, b, c});
  EXPECT_EQ(mean.getDouble(0), 2.0);
  EXPECT_EQ(mean.getDouble(1), static_cast<double>(10.0f / 3.0f));
  EXPECT_TRUE(std::isnan(runOne("Max", {floats({1}, {1}), floats({1}, {NAN})}).getDouble(0)));
}

TEST(Elementwise, NegAndAbsOnIntegers) {
  Array x = makeArray<int8_t>(DataType::Int8, {3}, {-128, -3, 4});
  EXPECT_EQ(ints(runOne("Neg", {x})), (std::vector<int64_t>{-128, 3, -4}));
  EXPECT_EQ(ints(runOne("Abs", {x})), (std::vector<int64_t>{-128, 3, 4}));
}

TEST(Elementwise, LargeInputsUseThreadsAndGiveTheSameResult) {
  const int64_t n = 1 << 18;
  Array a(DataType::Float, {n / 64, 64});
  Array b(DataType::Float, {64});
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = static_cast<float>(i % 1000);
  for (int64_t i = 0; i < 64; ++i) b.data<float>()[i] = static_cast<float>(i);
  Array serial = runOp("Add", {a, b}, {}, 17, 1, 1).at(0);
  Array parallel = runOp("Add", {a, b}, {}, 17, 1, 4).at(0);
  ASSERT_EQ(serial.numel(), parallel.numel());
  EXPECT_EQ(0, std::memcmp(serial.bytes(), parallel.bytes(), serial.byteSize()));
  EXPECT_EQ(parallel.getDouble(n - 1), static_cast<double>((n - 1) % 1000 + 63));
}

}  // namespace
}  // namespace qopt::interp
