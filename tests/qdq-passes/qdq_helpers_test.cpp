// The helpers relu6-asym and propagate-scales share: quantization parameters for a range, the
// widest of several, reading and writing them on nodes, and matching bounded activations.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "../../passes/propagate-scales/QuantParams.h"
#include "../../passes/propagate-scales/ScaleUnification.h"
#include "../../passes/relu6-asym/BoundedActivation.h"
#include "qopt/ir/Graph.h"

namespace qopt {
namespace {

Value* scalar(Graph& g, const std::string& name, DataType type, double value) {
  auto t = std::make_shared<Tensor>(Tensor::fromDoubles(type, {}, {&value, 1}));
  t->setName(name);
  return g.addInitializer(std::move(t));
}

TEST(QuantParams, RangeToParameters) {
  qdq::QuantParams u8 = qdq::paramsForRange(0, 6, DataType::UInt8, true);
  EXPECT_FLOAT_EQ(static_cast<float>(u8.scale()), 6.0f / 255.0f);
  EXPECT_EQ(u8.zeroPoint(), 0);
  EXPECT_FLOAT_EQ(static_cast<float>(u8.highest()), 6.0f);
  qdq::QuantParams s8 = qdq::paramsForRange(0, 6, DataType::Int8, true);
  EXPECT_FLOAT_EQ(static_cast<float>(s8.scale()), 6.0f / 127.0f);
  EXPECT_EQ(s8.qmin(), -128);
  // Asymmetric: [-1, 3] over 255 steps, zero at code round(1 / (4/255)) = 64.
  qdq::QuantParams affine = qdq::paramsForRange(-1, 3, DataType::UInt8, false);
  EXPECT_FLOAT_EQ(static_cast<float>(affine.scale()), 4.0f / 255.0f);
  EXPECT_EQ(affine.zeroPoint(), 64);
}

TEST(QuantParams, WidestRange) {
  qdq::QuantParams a = qdq::paramsForRange(-1, 1, DataType::Int8, true);
  qdq::QuantParams b = qdq::paramsForRange(-2, 2, DataType::Int8, true);
  std::string why;
  std::optional<qdq::QuantParams> wide = qdq::widestParams({a, b}, &why);
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->scale(), b.scale());
  EXPECT_EQ(wide->zeroPoint(), 0);
  // One asymmetric range: the union [-1.008, 4] is mapped affinely.
  qdq::QuantParams c = qdq::paramsForRange(0, 4, DataType::Int8, false);
  c.zeroPoints = {-128};
  wide = qdq::widestParams({a, c}, &why);
  ASSERT_TRUE(wide);
  // The zero point is an integer, so the ends may move inwards by less than one step.
  EXPECT_LE(wide->lowest(), a.lowest() + wide->scale());
  EXPECT_GE(wide->highest(), c.highest() - wide->scale());
  EXPECT_GT(wide->scale(), c.scale());
  // Different integer types cannot share one quantization.
  EXPECT_FALSE(qdq::widestParams({a, qdq::paramsForRange(0, 1, DataType::UInt8, true)}, &why));
  EXPECT_NE(why.find("types differ"), std::string::npos);
}

TEST(QuantParams, ReadAndWrite) {
  Model model;
  model.setOpsetVersion("", 21);
  Graph& g = model.graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {4}));
  Value* s = scalar(g, "s", DataType::Float, 0.5);
  Node* q = g.createNode("QuantizeLinear", {x, s}, 1);
  Node* dq = g.createNode("DequantizeLinear", {q->output(0), s}, 1);
  g.addOutput(dq->output(0));
  std::optional<qdq::QuantParams> p = qdq::readQuantParams(*q);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->type, DataType::UInt8);  // no zero point: ONNX's default
  q->setAttr(Attribute::makeInt("output_dtype", static_cast<int64_t>(DataType::Int8)));
  EXPECT_EQ(qdq::readQuantParams(*q)->type, DataType::Int8);

  std::optional<std::vector<Node*>> dqs = qdq::dequantizersOf(*q);
  ASSERT_TRUE(dqs);
  ASSERT_EQ(dqs->size(), 1u);
  std::vector<Node*> group{q, dq};
  qdq::writeQuantParams(group, qdq::paramsForRange(0, 6, DataType::UInt8, true), "y");
  std::optional<qdq::QuantParams> after = qdq::readQuantParams(*dq);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->type, DataType::UInt8);
  EXPECT_EQ(q->attrInt("output_dtype", 0), static_cast<int64_t>(DataType::UInt8));
  EXPECT_EQ(q->input(2), dq->input(2));
  EXPECT_EQ(g.findValue("s"), nullptr);  // the old scale had no reader left
}

TEST(BoundedActivation, Forms) {
  Model model;
  model.setOpsetVersion("", 17);
  Graph& g = model.graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {4}));
  Value* zero = scalar(g, "zero", DataType::Float, 0);
  Value* six64 = scalar(g, "six64", DataType::Int64, 6);
  Node* cast = g.createNode("Cast", {six64}, 1);
  cast->setAttr(Attribute::makeInt("to", static_cast<int64_t>(DataType::Float)));
  Node* clip = g.createNode("Clip", {x, zero, cast->output(0)}, 1);
  std::optional<relu6::BoundedActivation> act = relu6::matchBoundedActivation(clip, {"relu6"});
  ASSERT_TRUE(act);
  EXPECT_EQ(act->form, "clip-inputs");
  EXPECT_EQ(act->hi, 6.0);
  EXPECT_TRUE(act->removable);
  // Not asked for: no match.
  EXPECT_FALSE(relu6::matchBoundedActivation(clip, {"sigmoid"}));

  Value* four = scalar(g, "four", DataType::Float, 4);
  Node* clip4 = g.createNode("Clip", {x, zero, four}, 1);
  EXPECT_FALSE(relu6::matchBoundedActivation(clip4, {"relu6"}));

  // Min(Relu(x), 6) whose Relu output is read elsewhere: matched, but the Relu must stay.
  Value* six = scalar(g, "six", DataType::Float, 6);
  Node* relu = g.createNode("Relu", {x}, 1);
  Node* min = g.createNode("Min", {relu->output(0), six}, 1);
  g.addOutput(relu->output(0));
  act = relu6::matchBoundedActivation(min, {"relu6"});
  ASSERT_TRUE(act);
  EXPECT_EQ(act->form, "relu-min");
  EXPECT_FALSE(act->removable);
}

}  // namespace
}  // namespace qopt
