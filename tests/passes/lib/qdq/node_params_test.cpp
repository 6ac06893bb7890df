// Quantization parameters for a range, read from and written to Q/DQ nodes (qopt/qdq/NodeParams.h).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "ScalarInitializer.h"
#include "qopt/ir/Graph.h"
#include "qopt/qdq/NodeParams.h"

namespace qopt {
namespace {

using test::scalar;

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

}  // namespace
}  // namespace qopt
