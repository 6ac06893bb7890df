// The textual dump: golden strings for every piece of the format.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "qopt/ir/Graph.h"
#include "qopt/ir/Printer.h"

namespace qopt {
namespace {

TensorPtr floats(std::vector<int64_t> dims, std::vector<float> values, std::string name = {}) {
  auto t = std::make_shared<Tensor>(Tensor::fromFloats(std::move(dims), values));
  t->setName(std::move(name));
  return t;
}

Attribute graphAttr(std::string name, Node* owner) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Graph;
  a.g = std::make_unique<Graph>(&owner->graph()->model(), owner);
  return a;
}

// A model touching every part of the format.
std::unique_ptr<Model> buildModel() {
  auto m = std::make_unique<Model>();
  m->irVersion = 8;
  m->producerName = "unit";
  m->setOpsetVersion("com.microsoft", 1);
  m->setOpsetVersion("", 17);
  m->metadataProps.emplace_back("owner", "qopt");
  Graph& g = m->graph();
  g.name = "main";

  ValueType xType = ValueType::tensor(DataType::Float);
  xType.shape = std::vector<Dim>{Dim::symbolic("N"), Dim::known(3), Dim{}};
  Value* x = g.addInput("x", xType);
  Value* cond = g.addInput("cond", ValueType::tensor(DataType::Bool, {}));
  Value* w = g.addInitializer(floats({2}, {0.5f, -1.0f}, "w"));
  g.addInitializerAsInput(w);
  std::vector<float> big(20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i);
  Value* bigValue = g.addInitializer(floats({4, 5}, big, "big"));

  Node* conv = g.createNode("Conv", {x, w, nullptr}, 1);
  conv->setName("conv1");
  conv->output(0)->setName("conv out");
  conv->output(0)->setType(ValueType::tensor(DataType::Float));  // unknown rank
  conv->setAttr(Attribute::makeInts("kernel_shape", {3, 3}));
  conv->setAttr(Attribute::makeInt("group", 1));
  conv->setAttr(Attribute::makeFloat("alpha", 1.0f));
  conv->setAttr(Attribute::makeString("auto_pad", "NOTSET"));
  conv->setAttr(Attribute::makeFloats("scales", {0.1f, 1e-5f, 2.5f}));
  conv->setAttr(Attribute::makeStrings("tags", {"a\"b", "line\nbreak"}));
  conv->setAttr(Attribute::makeTensor("value", floats({}, {3.0f})));

  Node* custom = g.createNode("Fused", {conv->output(0), bigValue}, 0, nullptr, "com.microsoft");
  custom->addOutput("fused");
  custom->addOutput({}, /*absent=*/true);

  Node* ifNode = g.createNode("If", {cond}, 1);
  ifNode->setName("if1");
  ifNode->output(0)->setName("z");
  Attribute thenBranch = graphAttr("then_branch", ifNode);
  thenBranch.g->name = "then_body";
  Node* inner = thenBranch.g->createNode("Neg", {custom->output(0)}, 1);
  inner->output(0)->setName("t");
  thenBranch.g->addOutput(inner->output(0));
  Attribute elseBranch = graphAttr("else_branch", ifNode);
  elseBranch.g->name = "else_body";
  elseBranch.g->addOutput(custom->output(0));
  ifNode->setAttr(std::move(thenBranch));
  ifNode->setAttr(std::move(elseBranch));
  ifNode->output(0)->setType(ValueType::tensor(DataType::Float, {2}));
  g.addOutput(ifNode->output(0));
  return m;
}

TEST(Printer, WholeModelGolden) {
  std::unique_ptr<Model> m = buildModel();
  uint64_t bigHash = m->graph().findValue("big")->initializer()->contentHash();
  std::string expected = fmt::format(
      R"(model {{ir_version=8, producer_name="unit"}}
opset_import {{"": 17, "com.microsoft": 1}}
metadata {{"owner": "qopt"}}
graph main {{
  input %x:FLOAT[N,3,?]
  input %cond:BOOL[]
  input %w:FLOAT[2]
  initializer %w = FLOAT[2] {{0.5, -1.0}}
  initializer %big = FLOAT[4,5] #{:016x}
  %"conv out":FLOAT = Conv(%x, %w, _) {{alpha=1.0, auto_pad="NOTSET", group=1, kernel_shape=[3,3], scales=[0.1,1e-05,2.5], tags=["a\"b","line\nbreak"], value=FLOAT[] {{3.0}}}}  # name: conv1
  %fused, _ = com.microsoft::Fused(%"conv out", %big)
  %z:FLOAT[2] = If(%cond)  # name: if1
    else_branch: graph else_body {{
      output %fused
    }}
    then_branch: graph then_body {{
      %t = Neg(%fused)
      output %t
    }}
  output %z:FLOAT[2]
}}
)",
      bigHash);
  EXPECT_EQ(printModel(*m), expected);
}

TEST(Printer, OutputIsDeterministicAndSurvivesClone) {
  std::unique_ptr<Model> m = buildModel();
  std::string first = printModel(*m);
  EXPECT_EQ(printModel(*m), first);
  EXPECT_EQ(printModel(*m->clone()), first);
  std::ostringstream stream;
  printModel(*m, stream);
  EXPECT_EQ(stream.str(), first);
}

TEST(Printer, InlineLimitIsConfigurable) {
  std::unique_ptr<Model> m = buildModel();
  PrintOptions options;
  options.maxInlineElements = 1;
  std::string text = printModel(*m, options);
  uint64_t hash = m->graph().findValue("w")->initializer()->contentHash();
  EXPECT_NE(text.find(fmt::format("initializer %w = FLOAT[2] #{:016x}\n", hash)), std::string::npos)
      << text;
  options.maxInlineElements = 20;
  text = printModel(*m, options);
  EXPECT_NE(text.find("initializer %big = FLOAT[4,5] {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, "
                      "8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0}\n"),
            std::string::npos)
      << text;
}

TEST(Printer, FloatsRoundTripAndAlwaysLookLikeFloats) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor t = Tensor::fromFloats(
      {8}, std::vector<float>{1.0f, 0.1f, 1e-5f, 3.4028235e38f, -0.0f, inf, -inf, 16777216.0f});
  EXPECT_EQ(printTensor(t),
            "FLOAT[8] {1.0, 0.1, 1e-05, 3.4028235e+38, -0.0, inf, -inf, 16777216.0}");
  Tensor nan = Tensor::fromFloats({1}, std::vector<float>{std::nanf("")});
  EXPECT_EQ(printTensor(nan), "FLOAT[1] {nan}");
  std::vector<double> d = {0.1, 1.0 / 3.0};
  EXPECT_EQ(printTensor(Tensor::fromDoubles(DataType::Double, {2}, d)),
            "DOUBLE[2] {0.1, 0.3333333333333333}");
}

TEST(Printer, TensorsOfEveryNumericKind) {
  std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(), 7};
  EXPECT_EQ(printTensor(Tensor::fromInt64s(DataType::Int64, {2}, i64)),
            "INT64[2] {-9223372036854775808, 7}");
  std::vector<double> values = {-3.0, 2.0};
  EXPECT_EQ(printTensor(Tensor::fromDoubles(DataType::Int8, {2}, values)), "INT8[2] {-3, 2}");
  EXPECT_EQ(printTensor(Tensor::fromDoubles(DataType::Int4, {1, 2}, values)), "INT4[1,2] {-3, 2}");
  std::vector<double> halves = {0.1, 65504.0};
  EXPECT_EQ(printTensor(Tensor::fromDoubles(DataType::Float16, {2}, halves)),
            "FLOAT16[2] {0.099975586, 65504.0}");
  std::vector<double> bits = {0.0, 1.0};
  EXPECT_EQ(printTensor(Tensor::fromDoubles(DataType::Bool, {2}, bits)), "BOOL[2] {false, true}");
  std::vector<double> f8 = {448.0, -0.5};
  EXPECT_EQ(printTensor(Tensor::fromDoubles(DataType::Float8E4M3FN, {2}, f8)),
            "FLOAT8E4M3FN[2] {448.0, -0.5}");
  Tensor strings(DataType::String, {2});
  strings.setStrings({"x", "y z"});
  EXPECT_EQ(printTensor(strings), "STRING[2] {\"x\", \"y z\"}");
}

TEST(Printer, MalformedTensorsPrintInsteadOfThrowing) {
  Tensor shortBytes(DataType::Float, {4});
  shortBytes.setRawBytes(std::vector<std::byte>(8));
  EXPECT_EQ(printTensor(shortBytes), "FLOAT[4] <unreadable: holds 8 bytes, its shape needs 16>");
  Tensor negative(DataType::Float, {-1});
  EXPECT_EQ(printTensor(negative).rfind("FLOAT[-1] <unreadable: negative dimension -1>", 0), 0u)
      << printTensor(negative);
  Tensor external(DataType::Float, {2});
  ExternalData data;
  data.location = "missing.bin";
  data.offset = 0;
  data.length = 8;
  data.baseDir = "/nonexistent-qopt-dir";
  external.setExternalData(data);
  std::string text = printTensor(external);
  EXPECT_EQ(text.rfind("FLOAT[2] <unreadable: cannot open external data file", 0), 0u) << text;
  EXPECT_NE(text.find(" external(\"missing.bin\", offset=0, length=8)"), std::string::npos) << text;
}

TEST(Printer, TypesOfEveryKind) {
  EXPECT_EQ(printType(ValueType{}), "?");
  EXPECT_EQ(printType(ValueType::tensor(DataType::Int8, {})), "INT8[]");
  EXPECT_EQ(printType(ValueType::tensor(DataType::Float, {1, -1})), "FLOAT[1,?]");
  ValueType sparse = ValueType::tensor(DataType::Float, {4});
  sparse.kind = ValueType::Kind::SparseTensor;
  EXPECT_EQ(printType(sparse), "sparse_tensor(FLOAT[4])");
  // TypeProto { sequence_type { elem_type { tensor_type { elem_type: FLOAT } } } }
  ValueType seq;
  seq.kind = ValueType::Kind::Other;
  seq.opaque = std::string("\x22\x06\x0A\x04\x0A\x02\x08\x01", 8);
  EXPECT_EQ(printType(seq), "seq(FLOAT)");
}

TEST(Printer, NodeLineWithoutOutputsOrAttributes) {
  Model m;
  Value* x = m.graph().addInput("x", ValueType{});
  Node* sink = m.graph().createNode("Print", {x}, 0, nullptr, "ai.onnx");
  EXPECT_EQ(printNode(*sink), "Print(%x)");
  Node* named = m.graph().createNode("Identity", {x}, 1);
  named->setName("odd name");
  named->output(0)->setName("a,b");
  EXPECT_EQ(printNode(*named), "%\"a,b\" = Identity(%x)  # name: \"odd name\"");
}

TEST(Printer, AttributeReferencesAndListsOfGraphs) {
  Model m;
  Value* x = m.graph().addInput("x", ValueType{});
  Node* n = m.graph().createNode("Scan", {x}, 1);
  n->output(0)->setName("s");
  Attribute ref;
  ref.name = "alpha";
  ref.kind = AttrKind::Float;
  ref.refAttrName = "outer_alpha";
  n->setAttr(std::move(ref));
  Attribute bodies;
  bodies.name = "bodies";
  bodies.kind = AttrKind::Graphs;
  for (int i = 0; i < 2; ++i) {
    auto g = std::make_unique<Graph>(&m, n);
    g->name = fmt::format("b{}", i);
    g->addOutput(x);
    bodies.graphs.push_back(std::move(g));
  }
  n->setAttr(std::move(bodies));
  EXPECT_EQ(printGraph(m.graph()),
            "graph {\n"
            "  input %x\n"
            "  %s = Scan(%x) {alpha=@outer_alpha}\n"
            "    bodies[0]: graph b0 {\n"
            "      output %x\n"
            "    }\n"
            "    bodies[1]: graph b1 {\n"
            "      output %x\n"
            "    }\n"
            "}\n");
}

}  // namespace
}  // namespace qopt
