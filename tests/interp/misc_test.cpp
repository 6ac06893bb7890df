// Cast (float16/bfloat16/float8 rounding, integer truncation, strings), the constant ops, Range,
// Dropout and Einsum.
#include <cmath>

#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

std::function<void(Node&)> castTo(DataType type) {
  return [=](Node& n) { n.setAttr(Attribute::makeInt("to", static_cast<int64_t>(type))); };
}

TEST(Cast, FloatToHalfAndBFloat16RoundToNearestEven) {
  Array x = floats({3}, {1.0f + 1.0f / 4096, 65520.0f, 1.00390625f});
  Array h = runOne("Cast", {x}, castTo(DataType::Float16));
  EXPECT_EQ(h.dataType(), DataType::Float16);
  EXPECT_EQ(h.getDouble(0), 1.0);
  EXPECT_TRUE(std::isinf(h.getDouble(1)));
  Array b = runOne("Cast", {x}, castTo(DataType::BFloat16));
  EXPECT_EQ(b.getDouble(2), 1.0);  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even wins
}

TEST(Cast, DoubleToHalfRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the half-precision tie: must round up, although rounding
  // to float first would land exactly on the tie and then round down to 1.
  Array x =
      makeArray<double>(DataType::Double, {1}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  Array h = runOne("Cast", {x}, castTo(DataType::Float16));
  EXPECT_EQ(h.getDouble(0), 1.0 + std::ldexp(1.0, -10));
}

TEST(Cast, FloatToIntegerTruncatesAndSaturates) {
  Array x = floats({5}, {2.7f, -2.7f, 300.0f, -300.0f, NAN});
  EXPECT_EQ(ints(runOne("Cast", {x}, castTo(DataType::Int32))),
            (std::vector<int64_t>{2, -2, 300, -300, 0}));
  EXPECT_EQ(ints(runOne("Cast", {x}, castTo(DataType::Int8))),
            (std::vector<int64_t>{2, -2, 127, -128, 0}));
  EXPECT_EQ(ints(runOne("Cast", {floats({3}, {0, -0.5f, 2})}, castTo(DataType::Bool))),
            (std::vector<int64_t>{0, 1, 1}));
}

TEST(Cast, StringsBothWays) {
  Array s(DataType::String, {3});
  s.strings() = {"1.5", "-INF", "NaN"};
  Array f = runOne("Cast", {s}, castTo(DataType::Float));
  EXPECT_EQ(f.getDouble(0), 1.5);
  EXPECT_TRUE(std::isinf(f.getDouble(1)) && f.getDouble(1) < 0);
  EXPECT_TRUE(std::isnan(f.getDouble(2)));
  Array back = runOne("Cast", {floats({2}, {0.1f, 3})}, castTo(DataType::String));
  EXPECT_EQ(back.strings(), (std::vector<std::string>{"0.1", "3"}));
}

TEST(Cast, Float8E4M3FNSaturatesUnlessAskedNotTo) {
  Array x = floats({4}, {1000.0f, 0.3f, -448.0f, 500.0f});
  Array sat = runOne("Cast", {x}, castTo(DataType::Float8E4M3FN), 19);
  EXPECT_EQ(sat.getDouble(0), 448.0);
  EXPECT_EQ(sat.getDouble(1), 0.3125);  // nearest E4M3 value to 0.3
  EXPECT_EQ(sat.getDouble(2), -448.0);
  Array wrap = runOne(
      "Cast", {x},
      [](Node& n) {
        n.setAttr(Attribute::makeInt("to", static_cast<int64_t>(DataType::Float8E4M3FN)));
        n.setAttr(Attribute::makeInt("saturate", 0));
      },
      19);
  EXPECT_TRUE(std::isnan(wrap.getDouble(0)));
  EXPECT_TRUE(std::isnan(wrap.getDouble(3)));
  Array back = runOne("Cast", {sat}, castTo(DataType::Float), 19);
  EXPECT_EQ(back.getDouble(1), 0.3125);
}

TEST(Constants, AllValueForms) {
  auto constant = [](std::function<void(Node&)> set) { return runOne("Constant", {}, set, 13); };
  EXPECT_EQ(
      constant([](Node& n) { n.setAttr(Attribute::makeFloat("value_float", 2.5f)); }).getDouble(0),
      2.5);
  Array fs = constant([](Node& n) { n.setAttr(Attribute::makeFloats("value_floats", {1, 2})); });
  EXPECT_EQ(fs.shape(), (Shape{2}));
  EXPECT_EQ(constant([](Node& n) { n.setAttr(Attribute::makeInt("value_int", 7)); }).dataType(),
            DataType::Int64);
  EXPECT_EQ(ints(constant([](Node& n) {
              n.setAttr(Attribute::makeInts("value_ints", {3, 4}));
            })),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(constant([](Node& n) {
              n.setAttr(Attribute::makeString("value_string", "hi"));
            }).strings()[0],
            "hi");
  Array t = constant([](Node& n) {
    auto tensor = std::make_shared<Tensor>(Tensor::fromFloats({2, 1}, std::vector<float>{5, 6}));
    n.setAttr(Attribute::makeTensor("value", tensor));
  });
  EXPECT_EQ(t.shape(), (Shape{2, 1}));
  EXPECT_EQ(doubles(t), (std::vector<double>{5, 6}));
}

TEST(Constants, ConstantOfShapeAndRange) {
  Array zeros = runOne("ConstantOfShape", {int64s({2}, {2, 3})});
  EXPECT_EQ(zeros.dataType(), DataType::Float);
  EXPECT_EQ(doubles(zeros), std::vector<double>(6, 0.0));
  Array sevens = runOne("ConstantOfShape", {int64s({1}, {2})}, [](Node& n) {
    auto value =
        std::make_shared<Tensor>(Tensor::fromInt64s(DataType::Int32, {1}, std::vector<int64_t>{7}));
    n.setAttr(Attribute::makeTensor("value", value));
  });
  EXPECT_EQ(sevens.dataType(), DataType::Int32);
  EXPECT_EQ(ints(sevens), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(ints(runOne("Range", {int64s({}, {10}), int64s({}, {4}), int64s({}, {-3})})),
            (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(doubles(runOne("Range", {floats({}, {0}), floats({}, {1}), floats({}, {0.25f})})),
            (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(runOne("Range", {int64s({}, {0}), int64s({}, {-5}), int64s({}, {1})}).numel(), 0);
}

TEST(Dropout, InferenceIsIdentityWithAnAllTrueMask) {
  Array x = floats({3}, {1, 2, 3});
  auto out = runOp("Dropout", {x, floats({}, {0.5f})}, {}, 13, 2);
  EXPECT_EQ(doubles(out[0]), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(out[1].dataType(), DataType::Bool);
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_THROW(runOp("Dropout", {x, floats({}, {0.5f}), bools({}, {true})}, {}, 13, 2), Error);
}

std::function<void(Node&)> equation(const char* eq) {
  return [=](Node& n) { n.setAttr(Attribute::makeString("equation", eq)); };
}

TEST(Einsum, MatmulBatchTransposeTraceAndReductions) {
  Array a = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Array b = floats({3, 2}, {1, 0, 0, 1, 1, 1});
  EXPECT_EQ(doubles(runOne("Einsum", {a, b}, equation("ij,jk->ik"))),
            (std::vector<double>{4, 5, 10, 11}));
  EXPECT_EQ(doubles(runOne("Einsum", {a, b}, equation("ij,jk"))),
            (std::vector<double>{4, 5, 10, 11}));
  Array t = runOne("Einsum", {a}, equation("ij->ji"));
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(doubles(t), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(doubles(runOne("Einsum", {a}, equation("ij->i"))), (std::vector<double>{6, 15}));
  EXPECT_EQ(runOne("Einsum", {floats({2, 2}, {1, 2, 3, 4})}, equation("ii")).getDouble(0), 5);
  Array diag = runOne("Einsum", {floats({2, 2}, {1, 2, 3, 4})}, equation("ii->i"));
  EXPECT_EQ(doubles(diag), (std::vector<double>{1, 4}));
  Array batch = runOne("Einsum", {floats({2, 1, 2}, {1, 2, 3, 4}), floats({2, 2, 1}, {1, 1, 2, 0})},
                       equation("bij,bjk->bik"));
  EXPECT_EQ(batch.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(doubles(batch), (std::vector<double>{3, 6}));
  Array ell =
      runOne("Einsum", {floats({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, equation("...ij->...ji"));
  EXPECT_EQ(doubles(ell), (std::vector<double>{1, 3, 2, 4, 5, 7, 6, 8}));
  Array dot = runOne("Einsum", {floats({3}, {1, 2, 3}), floats({3}, {4, 5, 6})}, equation("i,i"));
  EXPECT_EQ(dot.getDouble(0), 32);
}

TEST(NonMaxSuppression, KeepsTheBestBoxPerOverlapGroup) {
  // Boxes 0 and 1 overlap heavily (IoU 0.81); box 2 is apart.
  Array boxes = floats({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1, 0, 2, 1, 3});
  Array scores = floats({1, 1, 3}, {0.8f, 0.9f, 0.3f});
  Array out = runOne("NonMaxSuppression",
                     {boxes, scores, int64s({1}, {3}), floats({1}, {0.5f}), floats({1}, {0.0f})});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(ints(out), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  Array limited =
      runOne("NonMaxSuppression", {boxes, scores, int64s({1}, {1}), floats({1}, {0.5f})});
  EXPECT_EQ(ints(limited), (std::vector<int64_t>{0, 0, 1}));
  Array thresholded = runOne("NonMaxSuppression", {boxes, scores, int64s({1}, {3}),
                                                   floats({1}, {0.5f}), floats({1}, {0.5f})});
  EXPECT_EQ(thresholded.shape(), (Shape{1, 3}));
}

}  // namespace
}  // namespace qopt::interp
