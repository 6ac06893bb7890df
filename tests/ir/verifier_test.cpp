// The structural verifier: each kind of broken IR, built through the IR API, yields its issue.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "IrTestUtil.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/Verifier.h"

namespace qopt {
namespace {

ValueType floatType() {
  return ValueType::tensor(DataType::Float, {2});
}

std::string allIssues(const std::vector<VerifyIssue>& issues) {
  std::string out;
  for (const VerifyIssue& i : issues) out += i.subject + ": " + i.message + "\n";
  return out;
}

// Expects exactly one issue, about `subject`, whose message contains `fragment`.
void expectOneIssue(const Model& m, const std::string& subject, const std::string& fragment) {
  std::vector<VerifyIssue> issues = verifyModel(m);
  ASSERT_EQ(issues.size(), 1u) << allIssues(issues);
  EXPECT_EQ(issues[0].subject, subject) << allIssues(issues);
  EXPECT_NE(issues[0].message.find(fragment), std::string::npos) << allIssues(issues);
}

// x -> Relu(relu) -> Neg(neg) -> output, opset 17.
struct Chain {
  Model m;
  Value* x;
  Node* relu;
  Node* neg;
  Chain() {
    m.setOpsetVersion("", 17);
    Graph& g = m.graph();
    x = g.addInput("x", floatType());
    relu = g.createNode("Relu", {x}, 1);
    relu->setName("relu");
    relu->output(0)->setName("r");
    neg = g.createNode("Neg", {relu->output(0)}, 1);
    neg->setName("neg");
    neg->output(0)->setName("y");
    g.addOutput(neg->output(0));
  }
};

// Adds an If node reading `cond` whose then-branch computes Neg(`outer`).
Node* addIf(Graph& g, Value* cond, Value* outer, const std::string& tag) {
  Node* ifNode = g.createNode("If", {cond}, 1);
  ifNode->setName("if_" + tag);
  ifNode->output(0)->setName("if_out_" + tag);
  testing::addSubgraph(ifNode, "then_branch", [&](Graph& then) {
    then.name = "then_" + tag;
    Node* inner = then.createNode("Neg", {outer}, 1);
    inner->setName("inner_" + tag);
    inner->output(0)->setName("inner_out_" + tag);
    then.addOutput(inner->output(0));
  });
  return ifNode;
}

// Each test breaks the chain model `c` in one way; `g` is its main graph.
class Verifier : public ::testing::Test {
 protected:
  // A bool graph input: the condition of the If nodes a test adds.
  Value* addCond() { return g.addInput("cond", ValueType::tensor(DataType::Bool, {})); }

  Chain c;
  Graph& g = c.m.graph();
};

TEST_F(Verifier, AcceptsAWellFormedModelWithSubgraphs) {
  Value* cond = addCond();
  auto t = std::make_shared<Tensor>(Tensor::fromFloats({2}, std::vector<float>{1.0f, 2.0f}));
  t->setName("w");
  Value* w = g.addInitializer(t);
  g.addInitializerAsInput(w);
  Node* ifNode = addIf(g, cond, c.relu->output(0), "a");
  g.createNode("Add", {ifNode->output(0), w}, 1);
  EXPECT_EQ(allIssues(verifyModel(c.m)), "");
  EXPECT_NO_THROW(verifyModelOrThrow(c.m, "after pass 'test'"));
}

TEST_F(Verifier, NodesOutOfTopologicalOrder) {
  c.neg->moveBefore(c.relu);
  expectOneIssue(c.m, "node 'neg' (Neg)", "before it is defined");
}

TEST_F(Verifier, Cycle) {
  // relu reads neg's output, neg reads relu's.
  c.relu->setInput(0, c.neg->output(0));
  expectOneIssue(c.m, "node 'relu' (Relu)", "cycle");
}

TEST_F(Verifier, UseOfAValueFromAnotherModel) {
  Model other;
  Value* foreign = other.graph().addInput("foreign", floatType());
  c.neg->addInput(foreign);
  expectOneIssue(c.m, "node 'neg' (Neg)", "not defined in this model");
  c.neg->removeInput(1);
}

TEST_F(Verifier, UseOfAnOmittedOutput) {
  Node* split = c.m.graph().createNode("Split", {c.x}, 0);
  split->addOutput("s0");
  Value* absent = split->addOutput({}, /*absent=*/true);
  c.m.graph().createNode("Relu", {absent}, 1)->setName("reader");
  expectOneIssue(c.m, "node 'reader' (Relu)", "omitted");
}

TEST_F(Verifier, DuplicateNameInOneGraph) {
  Node* abs = c.m.graph().createNode("Abs", {c.x}, 0);
  abs->addOutput("r");  // same name as relu's output
  expectOneIssue(c.m, "value 'r'", "two values");
}

TEST_F(Verifier, SubgraphShadowingAnOuterName) {
  Value* cond = addCond();
  Node* ifNode = addIf(g, cond, c.relu->output(0), "a");
  Graph* sub = ifNode->subgraphs()[0];
  sub->firstNode()->addOutput("x");  // shadows the main graph's input
  expectOneIssue(c.m, "value 'x'", "no shadowing");
}

TEST_F(Verifier, SiblingSubgraphsMayReuseAName) {
  Value* cond = addCond();
  Node* first = addIf(g, cond, c.relu->output(0), "a");
  Node* second = addIf(g, cond, first->output(0), "b");
  Node* reuse = second->subgraphs()[0]->createEmptyNode("Abs");
  reuse->addInput(c.x);
  reuse->addOutput("inner_out_a");  // as the first If's branch value
  g.addOutput(second->output(0));
  std::vector<VerifyIssue> none = verifyModel(c.m);
  EXPECT_TRUE(none.empty()) << none[0].subject << ": " << none[0].message;
  // The same name in the main graph would be shadowed by both.
  Node* outer = g.createEmptyNode("Abs");
  outer->addInput(c.x);
  outer->addOutput("inner_out_a");
  std::vector<VerifyIssue> issues = verifyModel(c.m);
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(issues[0].message.find("no shadowing"), std::string::npos) << issues[0].message;
}

TEST_F(Verifier, OuterValueDefinedAfterTheNodeOwningTheSubgraph) {
  Value* cond = addCond();
  // The If reads neg's output from inside its branch, but sits before neg.
  Node* ifNode = addIf(g, cond, c.neg->output(0), "a");
  ifNode->moveBefore(c.neg);
  expectOneIssue(c.m, "node 'inner_a' (Neg)", "enclosing graph");
}

TEST_F(Verifier, UseOfASiblingSubgraphsValue) {
  Value* cond = addCond();
  Node* first = addIf(g, cond, c.x, "a");
  Value* innerOfFirst = first->subgraphs()[0]->firstNode()->output(0);
  addIf(g, cond, innerOfFirst, "b");
  expectOneIssue(c.m, "node 'inner_b' (Neg)", "not visible here");
}

TEST_F(Verifier, UseOfASubgraphValueInTheOuterGraph) {
  Value* cond = addCond();
  Node* ifNode = addIf(g, cond, c.x, "a");
  Value* inner = ifNode->subgraphs()[0]->firstNode()->output(0);
  g.createNode("Relu", {inner}, 1)->setName("outside");
  expectOneIssue(c.m, "node 'outside' (Relu)", "not visible here");
}

TEST_F(Verifier, GraphOutputNotDefined) {
  Model other;
  Value* foreign = other.graph().addInput("foreign", floatType());
  c.m.graph().addOutput(foreign);
  std::vector<VerifyIssue> issues = verifyModel(c.m);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].subject, "main graph");
  EXPECT_NE(issues[0].message.find("('foreign') is not defined"), std::string::npos)
      << allIssues(issues);
  c.m.graph().removeOutput(1);
}

TEST_F(Verifier, SubgraphOutputMayBeAnOuterValue) {
  Value* cond = addCond();
  Node* ifNode = addIf(g, cond, c.x, "a");
  ifNode->subgraphs()[0]->addOutput(c.x);
  EXPECT_EQ(allIssues(verifyModel(c.m)), "");
}

TEST_F(Verifier, MissingOpsetImport) {
  c.m.graph().createNode("Foo", {c.x}, 1, nullptr, "com.example")->setName("foo");
  c.m.graph().createNode("Bar", {c.x}, 1, nullptr, "com.example")->setName("bar");
  // Reported once per domain, at its first node.
  expectOneIssue(c.m, "node 'foo' (com.example::Foo)", "'com.example'");
  c.m.setOpsetVersion("com.example", 1);
  EXPECT_EQ(allIssues(verifyModel(c.m)), "");
}

TEST_F(Verifier, MissingDefaultOpsetImport) {
  c.m.opsetImports.clear();
  expectOneIssue(c.m, "node 'relu' (Relu)", "default domain");
}

TEST_F(Verifier, DomainImportedTwice) {
  c.m.opsetImports.push_back({"ai.onnx", 17});
  expectOneIssue(c.m, "model", "imported twice");
}

TEST_F(Verifier, UseByANodeThatLeftTheModel) {
  Value* cond = addCond();
  Node* ifNode = addIf(g, cond, c.x, "a");
  // Taking the branch out of the attribute list behind the IR's back leaves x with a use by a
  // node that is no longer part of the model.
  Attribute detached = std::move(ifNode->mutableAttributes()[0]);
  ifNode->mutableAttributes().clear();
  expectOneIssue(c.m, "value 'x'", "not in the model");
  ifNode->setAttr(std::move(detached));
  EXPECT_EQ(allIssues(verifyModel(c.m)), "");
}

TEST_F(Verifier, VerifyOrThrowNamesTheFirstIssueAndTheContext) {
  c.m.sourcePath = "model.onnx";
  c.neg->moveBefore(c.relu);
  c.m.opsetImports.clear();
  try {
    verifyModelOrThrow(c.m, "after pass 'dce'");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
    EXPECT_EQ(e.where(), "model.onnx");
    std::string message = e.what();
    EXPECT_NE(message.find("after pass 'dce'"), std::string::npos) << message;
    EXPECT_NE(message.find("default domain"), std::string::npos) << message;
    EXPECT_NE(message.find("1 more issue"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace qopt
