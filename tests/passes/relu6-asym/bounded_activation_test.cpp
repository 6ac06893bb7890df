// The forms of a bounded activation relu6-asym recognizes.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "BoundedActivation.h"
#include "ScalarInitializer.h"
#include "qopt/ir/Graph.h"

namespace qopt {
namespace {

using test::scalar;

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
