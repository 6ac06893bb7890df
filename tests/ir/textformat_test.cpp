// ONNX text input: parsing into the IR (subgraphs, every attribute kind, initializers), the
// parser's gaps turned into errors, error positions, and binary/text detection.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/ir/Printer.h"
#include "qopt/ir/TextFormat.h"
#include "qopt/ir/Verifier.h"

namespace qopt {
namespace {

using namespace std::string_literals;

std::string allIssues(const Model& m) {
  std::string out;
  for (const VerifyIssue& i : verifyModel(m)) out += i.subject + ": " + i.message + "\n";
  return out;
}

// Parses `text` expecting an Error; returns its message.
std::string parseFailure(const std::string& text, const std::string& name = "bad.onnxtxt") {
  try {
    parseModelText(text, name);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_EQ(e.where(), name);
    return e.what();
  }
  ADD_FAILURE() << "expected an error for:\n" << text;
  return {};
}

const char* kFullModel = R"(
<
  ir_version: 8,
  opset_import: ["" : 17, "com.microsoft" : 1],
  producer_name: "unit-test",
  model_version: 3
>
main (float[N, 3] x, bool cond, float[3] w = {0.5, -1, 2.5}) => (float[N, 3] y, float[N, 3] z)
<int64[2] shape = {1, -1}, float[N, 3] t>
{
  # every attribute kind the syntax has
  t = Mul <i = 3, f = 0.25, s = "same", ints = [1, 2], floats = [1.5, 2.0], strings = ["a", "b"],
           tensor = int8[2] {-128, 127}> (x, w)
  y = com.microsoft.Fused (t, , w)
  z = If (cond) <
    then_branch = then_body () => (float[N, 3] a) { a = Neg(t) },
    else_branch = else_body () => (float[N, 3] b) { b = Abs(x) }
  >
}
)";

TEST(TextFormat, ParsesAFullModelIntoTheIR) {
  std::unique_ptr<Model> m = parseModelText(kFullModel, "full.onnxtxt");
  EXPECT_EQ(allIssues(*m), "");
  EXPECT_EQ(m->irVersion, 8);
  EXPECT_EQ(m->opsetVersion(""), 17);
  EXPECT_EQ(m->opsetVersion("com.microsoft"), 1);
  EXPECT_EQ(m->producerName, "unit-test");
  EXPECT_EQ(m->modelVersion, 3);
  EXPECT_EQ(m->sourcePath, "full.onnxtxt");

  Graph& g = m->graph();
  EXPECT_EQ(g.name, "main");
  ASSERT_EQ(g.inputs().size(), 3u);
  Value* x = g.inputs()[0];
  ASSERT_TRUE(x->type().shape.has_value());
  EXPECT_EQ((*x->type().shape)[0], Dim::symbolic("N"));
  EXPECT_EQ((*x->type().shape)[1], Dim::known(3));
  // An initializer written in the input list is both an input and an initializer.
  Value* w = g.inputs()[2];
  EXPECT_TRUE(w->isInitializer());
  EXPECT_TRUE(w->isGraphInput());
  EXPECT_EQ(w->initializer()->toDoubles(), (std::vector<double>{0.5, -1.0, 2.5}));
  // One written in the value-info list is an initializer only.
  Value* shape = g.findValue("shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_TRUE(shape->isInitializer());
  EXPECT_FALSE(shape->isGraphInput());
  EXPECT_EQ(shape->initializer()->dataType(), DataType::Int64);
  EXPECT_EQ(shape->initializer()->toInt64s(), (std::vector<int64_t>{1, -1}));

  ASSERT_EQ(g.numNodes(), 3u);
  Node* mul = g.firstNode();
  EXPECT_EQ(mul->attrInt("i", 0), 3);
  EXPECT_EQ(mul->attrFloat("f", 0), 0.25f);
  EXPECT_EQ(mul->attrString("s"), "same");
  EXPECT_EQ(mul->attrInts("ints"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(mul->attrFloats("floats"), (std::vector<float>{1.5f, 2.0f}));
  const Attribute* strings = mul->findAttr("strings");
  ASSERT_NE(strings, nullptr);
  EXPECT_EQ(strings->strings, (std::vector<std::string>{"a", "b"}));
  const Attribute* tensor = mul->findAttr("tensor");
  ASSERT_NE(tensor, nullptr);
  ASSERT_EQ(tensor->kind, AttrKind::Tensor);
  EXPECT_EQ(tensor->t->dataType(), DataType::Int8);
  EXPECT_EQ(tensor->t->toDoubles(), (std::vector<double>{-128, 127}));

  Node* fused = mul->next();
  EXPECT_EQ(fused->domain(), "com.microsoft");
  EXPECT_EQ(fused->opType(), "Fused");
  ASSERT_EQ(fused->numInputs(), 3u);
  EXPECT_EQ(fused->input(1), nullptr);

  // The then-branch reads t of the main graph directly.
  Node* ifNode = fused->next();
  ASSERT_EQ(ifNode->subgraphs().size(), 2u);
  const Attribute* then = ifNode->findAttr("then_branch");
  ASSERT_NE(then, nullptr);
  ASSERT_NE(then->g, nullptr);
  Node* neg = then->g->firstNode();
  EXPECT_EQ(neg->input(0), mul->output(0));
  EXPECT_EQ(Graph::implicitInputs(ifNode).size(), 2u);  // t and x
}

TEST(TextFormat, PrintsTheParsedModelExactly) {
  std::unique_ptr<Model> m = parseModelText(kFullModel, "full.onnxtxt");
  EXPECT_EQ(printModel(*m),
            R"(model {ir_version=8, producer_name="unit-test", model_version=3}
opset_import {"": 17, "com.microsoft": 1}
graph main {
  input %x:FLOAT[N,3]
  input %cond:BOOL[]
  input %w:FLOAT[3]
  initializer %w = FLOAT[3] {0.5, -1.0, 2.5}
  initializer %shape = INT64[2] {1, -1}
  %t:FLOAT[N,3] = Mul(%x, %w) {f=0.25, floats=[1.5,2.0], i=3, ints=[1,2], s="same", strings=["a","b"], tensor=INT8[2] {-128, 127}}
  %y:FLOAT[N,3] = com.microsoft::Fused(%t, _, %w)
  %z:FLOAT[N,3] = If(%cond)
    else_branch: graph else_body {
      %b:FLOAT[N,3] = Abs(%x)
      output %b:FLOAT[N,3]
    }
    then_branch: graph then_body {
      %a:FLOAT[N,3] = Neg(%t)
      output %a:FLOAT[N,3]
    }
  output %y:FLOAT[N,3]
  output %z:FLOAT[N,3]
}
)");
}

TEST(TextFormat, LoopBodyWithStateAndScanOutputs) {
  std::unique_ptr<Model> m = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
looped (int64 trips, bool keep, float[2] init) => (float[2] final, float[K, 2] scanned) {
  final, scanned = Loop (trips, keep, init) <
    body = loop_body (int64 i, bool c, float[2] acc) => (bool c_out, float[2] acc_out, float[2] each) {
      c_out = Identity(c)
      acc_out = Add(acc, init)
      each = Identity(acc_out)
    }
  >
}
)");
  EXPECT_EQ(allIssues(*m), "");
  Node* loop = m->graph().firstNode();
  ASSERT_EQ(loop->subgraphs().size(), 1u);
  Graph* body = loop->subgraphs()[0];
  EXPECT_EQ(body->inputs().size(), 3u);
  EXPECT_EQ(body->outputs().size(), 3u);
  EXPECT_EQ(body->firstNode()->next()->input(1), m->graph().inputs()[2]);
}

TEST(TextFormat, StringTensorsAndUnsignedIntegers) {
  std::unique_ptr<Model> m = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (string[2] s = {"ab", "c d"}, uint32[1] u = {4000000000}, double[1] d = {0.1}) => (string[2] o) {
  o = Identity(s)
}
)");
  Graph& g = m->graph();
  EXPECT_EQ(g.findValue("s")->initializer()->strings(), (std::vector<std::string>{"ab", "c d"}));
  EXPECT_EQ(g.findValue("u")->initializer()->toInt64s(), (std::vector<int64_t>{4000000000}));
  EXPECT_EQ(g.findValue("d")->initializer()->toDoubles(), (std::vector<double>{0.1}));
}

TEST(TextFormat, SyntaxErrorsNameTheFileLineAndColumn) {
  std::string message = parseFailure(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float x) => (float y) {\n"
      "  y = Relu(x\n"
      "}\n",
      "broken.onnxtxt");
  EXPECT_NE(message.find("broken.onnxtxt: line 4, column 1: Expected character ) not found"),
            std::string::npos)
      << message;
}

TEST(TextFormat, NumbersOutOfRangeAreErrorsNotCrashes) {
  std::string message = parseFailure(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float x) => (float y) { y = Relu <a = 99999999999999999999999> (x) }\n");
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
  EXPECT_NE(message.find("bad.onnxtxt: line 2, column "), std::string::npos) << message;
  message = parseFailure(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float x) => (float y) { y = Relu <a = 1e999> (x) }\n");
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

TEST(TextFormat, WhatTheParserWouldGetWrongIsAnError) {
  const std::string head = "<ir_version: 8, opset_import: [\"\" : 17]>\n";
  std::string message = parseFailure(
      head + "g (float x) => (float y) { y = Relu <a = [float[1] {1.0}, float[1] {2.0}]> (x) }");
  EXPECT_NE(message.find("attribute 'a' of node producing 'y' (Relu)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("lists of tensors, graphs or references"), std::string::npos) << message;

  message = parseFailure(head + "g (float x) => (float y) { y = Relu <alpha = inf> (x) }");
  EXPECT_NE(message.find("inf and nan cannot be written"), std::string::npos) << message;

  message = parseFailure(head + "g (float x) => (float y) { y = Relu <a = [1, 2.5]> (x) }");
  EXPECT_NE(message.find("mixes integers and floats"), std::string::npos) << message;

  message = parseFailure(head + "g (float16[1] h = {1}) => (float y) { y = Cast <to = 1> (h) }");
  EXPECT_NE(message.find("FLOAT16 cannot be written"), std::string::npos) << message;

  message = parseFailure(head + "g (float[3] w = {1, 2}) => (float y) { y = Relu (w) }");
  EXPECT_NE(message.find("initializer 'w': the tensor has 2 values, its shape needs 3"),
            std::string::npos)
      << message;

  message = parseFailure(head + "g (int8[1] w = {300}) => (int8[1] y) { y = Identity (w) }");
  EXPECT_NE(message.find("value 300 is out of range for INT8"), std::string::npos) << message;

  message = parseFailure(head + "g (float x) => (float y) { y = (x) }");
  EXPECT_NE(message.find("no operator name"), std::string::npos) << message;

  message = parseFailure(head + "g (float x) => (float y) { y = Relu(x) }\0junk"s);
  EXPECT_NE(message.find("NUL byte"), std::string::npos) << message;

  message = parseFailure("  # nothing but a comment\n");
  EXPECT_NE(message.find("holds no model"), std::string::npos) << message;
}

TEST(TextFormat, ImportErrorsNameTheFile) {
  std::string message = parseFailure(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float x) => (float y) { y = Add(x, nowhere) }\n",
      "undefined.onnxtxt");
  EXPECT_NE(message.find("nowhere"), std::string::npos) << message;
}

TEST(TextFormat, DetectsTextAndBinary) {
  EXPECT_TRUE(looksLikeModelText("<ir_version: 8> g () => () {}"));
  EXPECT_TRUE(looksLikeModelText("  # a comment\n\n  main (float x) => (float y) {}"));
  EXPECT_TRUE(looksLikeModelText("_g (float x) => (float y) {}"));
  EXPECT_FALSE(looksLikeModelText(""));
  EXPECT_FALSE(looksLikeModelText("   # only a comment\n"));
  // A ModelProto beginning with ir_version (field 1, varint) and a producer name.
  EXPECT_FALSE(looksLikeModelText(std::string("\x08\x08\x12\x04test", 8)));
  // One beginning with opset_import (field 8: tag 'B') still holds control bytes.
  EXPECT_FALSE(looksLikeModelText(std::string("B\x04\x0A\x00\x10\x11", 6)));
}

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::temp_directory_path() / ("qopt-textformat-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path file(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void writeFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

TEST(TextFormat, LoadsEitherFormatFromAFile) {
  TempDir dir;
  std::unique_ptr<Model> parsed = parseModelText(kFullModel, "full.onnxtxt");
  std::string expected = printModel(*parsed);

  writeFile(dir.file("model.onnxtxt"), kFullModel);
  std::unique_ptr<Model> fromText = loadModelAnyFormat(dir.file("model.onnxtxt"));
  EXPECT_EQ(fromText->sourcePath, dir.file("model.onnxtxt").string());
  EXPECT_EQ(printModel(*fromText), expected);

  writeFile(dir.file("model.onnx"), serializeModel(*parsed));
  std::unique_ptr<Model> fromBinary = loadModelAnyFormat(dir.file("model.onnx"));
  EXPECT_EQ(fromBinary->sourcePath, dir.file("model.onnx").string());
  EXPECT_EQ(printModel(*fromBinary), expected);

  writeFile(dir.file("broken.onnxtxt"), "<ir_version: 8>\ng (float x) => (float y) { y = }");
  try {
    loadModelAnyFormat(dir.file("broken.onnxtxt"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), dir.file("broken.onnxtxt").string());
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(loadModelAnyFormat(dir.file("missing.onnx")), Error);
}

}  // namespace
}  // namespace qopt
