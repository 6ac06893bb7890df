// Unit tests of the IR core: use lists, replace-all-uses, erase, topological sort, clone, fresh
// names, and the tensor number conversions.
#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "IrTestUtil.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/Tensor.h"

namespace qopt {
namespace {

ValueType floatType(std::vector<int64_t> dims) {
  return ValueType::tensor(DataType::Float, dims);
}

std::vector<std::string> opOrder(const Graph& g) {
  std::vector<std::string> ops;
  for (Node* n : g.nodes()) ops.push_back(n->name().empty() ? n->opType() : n->name());
  return ops;
}

bool hasUse(const Value* v, const Node* user, uint32_t index) {
  for (const Use& u : v->uses()) {
    if (u.user == user && u.index == index) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Uses

// Most tests below start from an empty model `m` and its main graph `g`.
using GraphClone = testing::ModelTest;
using GraphErase = testing::ModelTest;
using GraphSort = testing::ModelTest;
using GraphUses = testing::ModelTest;
using ModelNames = testing::ModelTest;

TEST_F(GraphUses, CreateNodeRecordsOneUsePerInputSlot) {
  Value* x = g.addInput("x", floatType({2}));
  Node* add = g.createNode("Add", {x, x}, 1);
  ASSERT_EQ(x->uses().size(), 2u);
  EXPECT_TRUE(hasUse(x, add, 0));
  EXPECT_TRUE(hasUse(x, add, 1));
  EXPECT_EQ(x->users(), std::vector<Node*>{add});
  EXPECT_EQ(add->output(0)->producer(), add);
  EXPECT_EQ(add->output(0)->outputIndex(), 0u);
}

TEST_F(GraphUses, InsertAndRemoveInputKeepIndicesInUses) {
  Value* a = g.addInput("a", floatType({1}));
  Value* b = g.addInput("b", floatType({1}));
  Value* c = g.addInput("c", floatType({1}));
  Node* n = g.createNode("Concat", {a, c}, 1);
  n->insertInput(1, b);
  ASSERT_EQ(n->numInputs(), 3u);
  EXPECT_TRUE(hasUse(a, n, 0));
  EXPECT_TRUE(hasUse(b, n, 1));
  EXPECT_TRUE(hasUse(c, n, 2));
  EXPECT_FALSE(hasUse(c, n, 1));
  n->removeInput(0);
  EXPECT_FALSE(a->hasUses());
  EXPECT_TRUE(hasUse(b, n, 0));
  EXPECT_TRUE(hasUse(c, n, 1));
  EXPECT_EQ(c->uses().size(), 1u);
  n->setInput(1, nullptr);
  EXPECT_FALSE(c->hasUses());
  EXPECT_EQ(n->input(1), nullptr);
}

class RecordingObserver : public ModelObserver {
 public:
  void valueReplaced(Value* from, Value* to) override { replaced.emplace_back(from, to); }
  void valueRenamed(Value* value, const std::string& oldName) override {
    renamed.push_back(oldName + "->" + value->name());
  }
  void nodeErased(Node* node) override { erased.push_back(node->opType()); }
  std::vector<std::pair<Value*, Value*>> replaced;
  std::vector<std::string> renamed;
  std::vector<std::string> erased;
};

TEST_F(GraphUses, ReplaceAllUsesWithMovesEveryUse) {
  Value* x = g.addInput("x", floatType({2}));
  Node* relu = g.createNode("Relu", {x}, 1);
  Node* a = g.createNode("Neg", {relu->output(0)}, 1);
  Node* b = g.createNode("Add", {relu->output(0), relu->output(0)}, 1);
  RecordingObserver obs;
  m.addObserver(&obs);
  relu->output(0)->replaceAllUsesWith(x);
  m.removeObserver(&obs);
  EXPECT_FALSE(relu->output(0)->hasUses());
  EXPECT_EQ(a->input(0), x);
  EXPECT_EQ(b->input(0), x);
  EXPECT_EQ(b->input(1), x);
  EXPECT_EQ(x->uses().size(), 4u);
  ASSERT_EQ(obs.replaced.size(), 1u);
  EXPECT_EQ(obs.replaced[0].first, relu->output(0));
  EXPECT_EQ(obs.replaced[0].second, x);
}

TEST_F(GraphUses, ReplacingAGraphOutputKeepsTheInterfaceName) {
  Value* x = g.addInput("x", floatType({2}));
  Node* relu = g.createNode("Relu", {x}, 1);
  relu->output(0)->setName("y");
  relu->output(0)->setType(floatType({2}));
  g.addOutput(relu->output(0));
  Node* neg = g.createNode("Neg", {x}, 1);
  Value* replacement = neg->output(0);
  std::string replacementOldName = replacement->name();
  RecordingObserver obs;
  m.addObserver(&obs);
  relu->output(0)->replaceAllUsesWith(replacement);
  m.removeObserver(&obs);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0], replacement);
  EXPECT_EQ(replacement->name(), "y");
  EXPECT_TRUE(replacement->isGraphOutput());
  EXPECT_FALSE(relu->output(0)->isGraphOutput());
  EXPECT_NE(relu->output(0)->name(), "y");
  EXPECT_EQ(g.findValue("y"), replacement);
  // The replacement had no type: it takes the output's.
  EXPECT_EQ(replacement->type(), floatType({2}));
  EXPECT_FALSE(m.isNameUsed(replacementOldName));
  EXPECT_EQ(obs.renamed.size(), 2u);
}

TEST_F(GraphUses, ReplacingAGraphOutputByAGraphInputKeepsBothNames) {
  Value* x = g.addInput("x", floatType({2}));
  Node* id = g.createNode("Identity", {x}, 1);
  id->output(0)->setName("y");
  g.addOutput(id->output(0));
  id->output(0)->replaceAllUsesWith(x);
  EXPECT_EQ(g.outputs()[0], x);
  EXPECT_EQ(x->name(), "x");
  EXPECT_EQ(id->output(0)->name(), "y");
  EXPECT_TRUE(x->isGraphOutput());
}

TEST_F(GraphUses, ReplaceAllUsesExceptLeavesThatNodeAlone) {
  Value* x = g.addInput("x", floatType({2}));
  Node* q = g.createNode("QuantizeLinear", {x}, 1);
  Node* other = g.createNode("Relu", {x}, 1);
  Node* dq = g.createNode("DequantizeLinear", {q->output(0)}, 1);
  x->replaceAllUsesExcept(dq->output(0), q);
  EXPECT_EQ(q->input(0), x);
  EXPECT_EQ(other->input(0), dq->output(0));
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_TRUE(hasUse(dq->output(0), other, 0));
}

// ---------------------------------------------------------------------------------------------
// Erase

TEST_F(GraphErase, RefusesANodeWhoseOutputIsStillUsed) {
  Value* x = g.addInput("x", floatType({2}));
  Node* relu = g.createNode("Relu", {x}, 1);
  g.createNode("Neg", {relu->output(0)}, 1);
  EXPECT_THROW(g.eraseNode(relu), Error);
  EXPECT_EQ(g.numNodes(), 2u);
}

TEST_F(GraphErase, RefusesANodeProducingAGraphOutput) {
  Value* x = g.addInput("x", floatType({2}));
  Node* relu = g.createNode("Relu", {x}, 1);
  g.addOutput(relu->output(0));
  EXPECT_THROW(g.eraseNode(relu), Error);
}

TEST_F(GraphErase, ErasedNodeReleasesItsUsesAndNames) {
  Value* x = g.addInput("x", floatType({2}));
  Node* first = g.createNode("Relu", {x}, 1);
  first->output(0)->setName("r");
  Node* mid = g.createNode("Neg", {x, x}, 1);
  Node* last = g.createNode("Abs", {x}, 1);
  RecordingObserver obs;
  m.addObserver(&obs);
  g.eraseNode(mid);
  g.eraseNode(first);
  m.removeObserver(&obs);
  EXPECT_EQ(obs.erased, (std::vector<std::string>{"Neg", "Relu"}));
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.firstNode(), last);
  EXPECT_EQ(g.lastNode(), last);
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_TRUE(hasUse(x, last, 0));
  EXPECT_FALSE(m.isNameUsed("r"));
  EXPECT_EQ(g.findValue("r"), nullptr);
}

TEST_F(GraphErase, ErasingWhileIteratingVisitsEveryNode) {
  Value* x = g.addInput("x", floatType({2}));
  for (int i = 0; i < 5; ++i) g.createNode("Relu", {x}, 1);
  int visited = 0;
  for (Node* n : g.nodes()) {
    ++visited;
    g.eraseNode(n);
  }
  EXPECT_EQ(visited, 5);
  EXPECT_EQ(g.numNodes(), 0u);
  EXPECT_FALSE(x->hasUses());
}

// Builds `cond -> If` whose then-branch reads `outer` from the main graph.
Node* addIfReading(Graph& g, Value* cond, Value* outer, const std::string& tag) {
  Node* ifNode = g.createNode("If", {cond}, 1);
  testing::addSubgraph(ifNode, "then_branch", [&](Graph& then) {
    then.name = "then_" + tag;
    Node* inner = then.createNode("Neg", {outer}, 1);
    inner->output(0)->setName("inner_" + tag);
    then.addOutput(inner->output(0));
  });
  return ifNode;
}

// The model with the inputs cond (bool) and x, for the tests that give it If nodes.
class GraphEraseSubgraphs : public testing::ModelTest {
 protected:
  Value* cond = g.addInput("cond", ValueType::tensor(DataType::Bool, {}));
  Value* x = g.addInput("x", floatType({2}));
};

TEST_F(GraphEraseSubgraphs, ErasingANodeDropsTheUsesOfItsSubgraphs) {
  Node* ifNode = addIfReading(g, cond, x, "a");
  ASSERT_EQ(x->uses().size(), 1u);
  ASSERT_TRUE(m.isNameUsed("inner_a"));
  g.eraseNode(ifNode);
  EXPECT_FALSE(x->hasUses());
  EXPECT_FALSE(cond->hasUses());
  // The branch's value names are free again.
  EXPECT_FALSE(m.isNameUsed("inner_a"));
  EXPECT_EQ(m.uniqueValueName("inner_a"), "inner_a");
}

TEST_F(GraphEraseSubgraphs, RemovingOrReplacingASubgraphAttributeDropsItsOuterUses) {
  Node* ifNode = addIfReading(g, cond, x, "a");
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_TRUE(ifNode->removeAttr("then_branch"));
  EXPECT_FALSE(x->hasUses());
  EXPECT_FALSE(m.isNameUsed("inner_a"));

  Node* second = addIfReading(g, cond, x, "b");
  ASSERT_EQ(x->uses().size(), 1u);
  Attribute replacement = Attribute::makeInt("then_branch", 0);
  second->setAttr(std::move(replacement));
  EXPECT_FALSE(x->hasUses());
}

TEST_F(GraphEraseSubgraphs, ModelCountsItsSubgraphsAtAnyDepth) {
  EXPECT_EQ(m.numSubgraphs(), 0u);
  Node* first = addIfReading(g, cond, x, "a");
  Node* second = addIfReading(g, cond, x, "b");
  EXPECT_EQ(m.numSubgraphs(), 2u);
  // A body inside a body counts too.
  Graph& body = *first->subgraphs()[0];
  Value* innerCond = body.addInput("inner_cond", ValueType::tensor(DataType::Bool, {}));
  addIfReading(body, innerCond, x, "c");
  EXPECT_EQ(m.numSubgraphs(), 3u);
  EXPECT_EQ(m.clone()->numSubgraphs(), 3u);
  g.eraseNode(first);
  EXPECT_EQ(m.numSubgraphs(), 1u);
  EXPECT_TRUE(second->removeAttr("then_branch"));
  EXPECT_EQ(m.numSubgraphs(), 0u);
}

TEST_F(GraphUses, ReplaceByInitializerTakesTheUsesAndTheName) {
  Value* x = g.addInput("x", floatType({2}));
  Node* constant = g.createNode("Constant", {}, 1);
  Value* c = constant->output(0);
  c->setName("c");
  Node* add = g.createNode("Add", {x, c}, 1);
  Node* mul = g.createNode("Mul", {c, c}, 1);
  g.addOutput(mul->output(0));
  auto tensor = std::make_shared<Tensor>(Tensor::fromFloats({2}, std::vector<float>{3, 4}));
  Value* init = g.replaceByInitializer(c, tensor);
  EXPECT_TRUE(init->isInitializer());
  EXPECT_EQ(init->name(), "c");
  EXPECT_EQ(tensor->name(), "c");
  EXPECT_EQ(init->type(), floatType({2}));
  EXPECT_EQ(add->input(1), init);
  EXPECT_EQ(mul->input(0), init);
  EXPECT_EQ(mul->input(1), init);
  EXPECT_EQ(init->uses().size(), 3u);
  EXPECT_TRUE(c->isAbsent());
  EXPECT_FALSE(c->hasUses());
  EXPECT_EQ(g.findValue("c"), init);
  EXPECT_EQ(g.initializers().back(), init);
  g.eraseNode(constant);
  EXPECT_EQ(g.findValue("c"), init);
  EXPECT_TRUE(m.isNameUsed("c"));
  EXPECT_EQ(m.uniqueValueName("c"), "c_1");
}

TEST_F(GraphUses, ReplaceByInitializerRefusesWhatHasNoPlaceToGive) {
  Value* x = g.addInput("x", floatType({2}));
  Node* relu = g.createNode("Relu", {x}, 1);
  g.addOutput(relu->output(0));
  auto tensor = [] {
    return std::make_shared<Tensor>(Tensor::fromFloats({1}, std::vector<float>{1.0f}));
  };
  // A graph output's name is the interface; a graph input is not a node output.
  EXPECT_THROW(g.replaceByInitializer(relu->output(0), tensor()), Error);
  EXPECT_THROW(g.replaceByInitializer(x, tensor()), Error);
  EXPECT_EQ(g.findValue("x"), x);
  EXPECT_EQ(relu->output(0)->producer(), relu);
  EXPECT_TRUE(g.initializers().empty());
}

// ---------------------------------------------------------------------------------------------
// Topological sort

TEST_F(GraphSort, KeepsAValidOrderUnchanged) {
  Value* x = g.addInput("x", floatType({2}));
  Node* a = g.createNode("A", {x}, 1);
  Node* b = g.createNode("B", {x}, 1);
  Node* c = g.createNode("C", {a->output(0), b->output(0)}, 1);
  g.createNode("D", {x}, 1);
  g.createNode("E", {c->output(0)}, 1);
  ASSERT_TRUE(g.isTopologicallySorted());
  g.topologicalSort();
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"A", "B", "C", "D", "E"}));
}

TEST_F(GraphSort, MovesOnlyWhatMustMoveAndKeepsTheRestStable) {
  Value* x = g.addInput("x", floatType({2}));
  Node* a = g.createNode("A", {x}, 1);
  Node* b = g.createNode("B", {a->output(0)}, 1);
  g.createNode("C", {x}, 1);
  g.createNode("D", {x}, 1);
  // Put B first: it must come back after A; C and D keep their relative order.
  b->moveBefore(a);
  ASSERT_EQ(opOrder(g), (std::vector<std::string>{"B", "A", "C", "D"}));
  EXPECT_FALSE(g.isTopologicallySorted());
  g.topologicalSort();
  EXPECT_TRUE(g.isTopologicallySorted());
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"A", "B", "C", "D"}));
}

TEST_F(GraphSort, OrdersANodeAfterTheProducersItsSubgraphReads) {
  Value* cond = g.addInput("cond", ValueType::tensor(DataType::Bool, {}));
  Value* x = g.addInput("x", floatType({2}));
  Node* producer = g.createNode("Relu", {x}, 1);
  Node* ifNode = addIfReading(g, cond, producer->output(0), "a");
  ifNode->moveBefore(producer);
  EXPECT_FALSE(g.isTopologicallySorted());
  g.topologicalSort();
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"Relu", "If"}));
}

TEST_F(GraphSort, SortsCorrectlyAfterErasesReshuffledThePool) {
  // Erasing moves the last node of the pool into the hole: the sort's per-node state is indexed
  // by pool position, so it must still find every node's own entry afterwards.
  Value* x = g.addInput("x", floatType({2}));
  Node* dead = g.createNode("Neg", {x}, 1);
  Node* deadToo = g.createNode("Abs", {x}, 1);
  std::vector<Node*> chain;
  Value* current = x;
  for (int i = 0; i < 6; ++i) {
    Node* n = g.createNode("Relu", {current}, 1);
    n->setName("n" + std::to_string(i));
    current = n->output(0);
    chain.push_back(n);
  }
  g.addOutput(current);
  g.eraseNode(dead);     // n5 takes its pool position
  g.eraseNode(deadToo);  // then n4
  // Reverse the chain: the sort must restore n0..n5.
  for (Node* n : chain) n->moveBefore(g.firstNode());
  EXPECT_FALSE(g.isTopologicallySorted());
  g.topologicalSort();
  EXPECT_TRUE(g.isTopologicallySorted());
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"n0", "n1", "n2", "n3", "n4", "n5"}));
}

TEST_F(GraphSort, ACycleIsAnErrorNamingANodeOnIt) {
  Value* x = g.addInput("x", floatType({2}));
  Node* a = g.createNode("Add", {x, x}, 1);
  a->setName("first");
  Node* b = g.createNode("Relu", {a->output(0)}, 1);
  b->setName("second");
  a->setInput(1, b->output(0));
  try {
    g.topologicalSort();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("cycle"), std::string::npos) << message;
    EXPECT_TRUE(message.find("first") != std::string::npos ||
                message.find("second") != std::string::npos)
        << message;
  }
}

// ---------------------------------------------------------------------------------------------
// Clone

TEST_F(GraphClone, SubgraphsOfTheCopyReadTheCopiedOuterValues) {
  m.setOpsetVersion("", 17);
  Value* cond = g.addInput("cond", ValueType::tensor(DataType::Bool, {}));
  Value* x = g.addInput("x", floatType({2}));
  auto w = std::make_shared<Tensor>(Tensor::fromFloats({2}, std::vector<float>{1.0f, 2.0f}));
  w->setName("w");
  Value* wv = g.addInitializer(w);
  Node* mul = g.createNode("Mul", {x, wv}, 1);
  mul->setName("mul");
  Node* ifNode = addIfReading(g, cond, mul->output(0), "a");
  ifNode->setName("if");
  g.addOutput(ifNode->output(0));

  std::unique_ptr<Model> copy = m.clone();
  Graph& cg = copy->graph();
  ASSERT_EQ(cg.numNodes(), 2u);
  Node* cmul = cg.firstNode();
  Node* cif = cmul->next();
  EXPECT_EQ(cmul->name(), "mul");
  EXPECT_NE(cmul, mul);
  ASSERT_EQ(cif->subgraphs().size(), 1u);
  Graph* sub = cif->subgraphs()[0];
  EXPECT_EQ(sub->parentNode(), cif);
  EXPECT_EQ(&sub->model(), copy.get());
  Node* inner = sub->firstNode();
  ASSERT_NE(inner, nullptr);
  // The inner node reads the copy's Mul output, and that value knows it.
  EXPECT_EQ(inner->input(0), cmul->output(0));
  EXPECT_TRUE(hasUse(cmul->output(0), inner, 0));
  // The original is untouched: its Mul output is still used only by the original inner node.
  ASSERT_EQ(mul->output(0)->uses().size(), 1u);
  EXPECT_EQ(mul->output(0)->uses()[0].user->graph(), ifNode->subgraphs()[0]);
  // Initializers share their bytes but not their tensor objects.
  Value* cw = cg.findValue("w");
  ASSERT_NE(cw, nullptr);
  EXPECT_NE(cw, wv);
  EXPECT_NE(cw->initializer(), w);
  EXPECT_EQ(cw->initializer()->buffer(), w->buffer());
  EXPECT_EQ(cg.outputs()[0], cif->output(0));
  EXPECT_EQ(copy->opsetVersion(""), 17);
  EXPECT_TRUE(copy->isNameUsed("inner_a"));
}

// ---------------------------------------------------------------------------------------------
// Names

TEST_F(ModelNames, FreshNamesSkipTakenOnes) {
  g.addInput("x", floatType({1}));
  g.addInput("x_1", floatType({1}));
  EXPECT_EQ(m.uniqueValueName("y"), "y");
  EXPECT_EQ(m.uniqueValueName("x"), "x_2");
  g.addInput("x_1_1", floatType({1}));
  EXPECT_EQ(m.uniqueValueName("x_1"), "x_1_2");
  EXPECT_EQ(m.uniqueNodeName("conv"), "conv");
  EXPECT_EQ(m.uniqueNodeName("conv"), "conv_1");
}

TEST_F(ModelNames, ManyNamesWithOneBaseStayUniqueAndCheap) {
  // 100k names from one base: a generator that retried from _1 each time would need ~5e9
  // lookups here; the per-base counter keeps this instantaneous.
  Value* x = g.addInput("x", floatType({1}));
  std::set<std::string> seen;
  constexpr int kCount = 100000;
  for (int i = 0; i < kCount; ++i) {
    Node* n = g.createNode("Relu", {x}, 1);
    ASSERT_TRUE(seen.insert(n->output(0)->name()).second) << n->output(0)->name();
    std::string nodeName = m.uniqueNodeName("relu");
    ASSERT_TRUE(seen.insert("node:" + nodeName).second) << nodeName;
  }
  EXPECT_EQ(seen.size(), 2u * kCount);
  EXPECT_TRUE(m.isNameUsed("Relu"));
  EXPECT_TRUE(m.isNameUsed("Relu_99999"));
}

TEST_F(ModelNames, RenamingToATakenNameFails) {
  g.addInput("a", floatType({1}));
  Value* b = g.addInput("b", floatType({1}));
  EXPECT_THROW(b->setName("a"), Error);
  b->setName("c");
  EXPECT_FALSE(m.isNameUsed("b"));
  EXPECT_EQ(g.findValue("c"), b);
}

TEST_F(ModelNames, RenamingAnInitializerRenamesItsTensor) {
  auto t = std::make_shared<Tensor>(Tensor::fromFloats({1}, std::vector<float>{1.0f}));
  t->setName("w");
  Value* w = m.graph().addInitializer(t);
  w->setName("weights");
  EXPECT_EQ(w->initializer()->name(), "weights");
}

// ---------------------------------------------------------------------------------------------
// Small float formats

TEST(TensorConversions, HalfFromFloatKnownBitPatterns) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7C00);  // halfway to 65536: ties to even = inf
  EXPECT_EQ(floatToHalfBits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(floatToHalfBits(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(floatToHalfBits(0.1f), 0x2E66);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);             // smallest normal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);             // tie: to even (zero)
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);             // tie: to even (two)
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie down to even
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie up to even
  uint16_t nan = floatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(TensorConversions, HalfToFloatKnownValues) {
  EXPECT_EQ(halfBitsToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfBitsToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfBitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(halfBitsToFloat(0x8000)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7E00)));
  // Every finite half survives a round trip through float.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7C00) == 0x7C00) continue;
    ASSERT_EQ(floatToHalfBits(halfBitsToFloat(static_cast<uint16_t>(bits))), bits) << bits;
  }
}

TEST(TensorConversions, BFloat16KnownBitPatterns) {
  EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3F80);
  EXPECT_EQ(floatToBFloat16Bits(-2.0f), 0xC000);
  EXPECT_EQ(floatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie to even
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie to even
  EXPECT_EQ(floatToBFloat16Bits(3.14159265f), 0x4049);
  EXPECT_EQ(floatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7F80);
  uint16_t nan = floatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  EXPECT_EQ(bfloat16BitsToFloat(0x4049), 3.140625f);
}

std::vector<uint8_t> bytesOf(const Tensor& t) {
  std::vector<uint8_t> out;
  for (std::byte b : t.rawBytes()) out.push_back(static_cast<uint8_t>(b));
  return out;
}

Tensor fromDoubles(DataType type, std::vector<double> values) {
  return Tensor::fromDoubles(type, {static_cast<int64_t>(values.size())}, values);
}

TEST(TensorConversions, Float8KnownBitPatterns) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(
      bytesOf(fromDoubles(DataType::Float8E4M3FN, {1.0, -1.0, 448.0, 480.0, 1e9, inf, -inf, nan,
                                                   std::ldexp(1.0, -9), -0.0, 0.1})),
      (std::vector<uint8_t>{0x38, 0xB8, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x01, 0x80, 0x1D}));
  EXPECT_EQ(bytesOf(fromDoubles(DataType::Float8E5M2,
                                {1.0, 57344.0, 1e9, inf, -inf, std::ldexp(1.0, -16), -0.0})),
            (std::vector<uint8_t>{0x3C, 0x7B, 0x7B, 0x7B, 0xFB, 0x01, 0x80}));
  EXPECT_EQ(bytesOf(fromDoubles(DataType::Float8E4M3FNUZ, {1.0, 240.0, inf, nan, -0.0})),
            (std::vector<uint8_t>{0x40, 0x7F, 0x80, 0x80, 0x00}));
  EXPECT_EQ(bytesOf(fromDoubles(DataType::Float8E5M2FNUZ, {1.0, 57344.0, -inf})),
            (std::vector<uint8_t>{0x40, 0x7F, 0x80}));
  // Ties go to the even code: 1.0625 lies halfway between 1.0 (0x38) and 1.125 (0x39).
  EXPECT_EQ(bytesOf(fromDoubles(DataType::Float8E4M3FN, {1.0625, 1.1875})),
            (std::vector<uint8_t>{0x38, 0x3A}));
}

TEST(TensorConversions, Float8DecodesEveryCode) {
  Tensor t(DataType::Float8E4M3FN, {3});
  t.setRawBytes(std::vector<std::byte>{std::byte{0x7E}, std::byte{0x7F}, std::byte{0x01}});
  std::vector<double> v = t.toDoubles();
  EXPECT_EQ(v[0], 448.0);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], std::ldexp(1.0, -9));
  // Every finite E5M2 code round-trips.
  for (uint32_t code = 0; code < 256; ++code) {
    Tensor one(DataType::Float8E5M2, {1});
    one.setRawBytes(std::vector<std::byte>{static_cast<std::byte>(code)});
    double value = one.toDoubles()[0];
    if (!std::isfinite(value)) continue;
    ASSERT_EQ(bytesOf(fromDoubles(DataType::Float8E5M2, {value}))[0], code) << code;
  }
}

TEST(TensorConversions, Int4PacksLowNibbleFirstAndSaturates) {
  Tensor t = fromDoubles(DataType::Int4, {1.0, -1.0, 9.0, -9.5, 2.5});
  EXPECT_EQ(bytesOf(t), (std::vector<uint8_t>{0xF1, 0x87, 0x02}));
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{1.0, -1.0, 7.0, -8.0, 2.0}));
  Tensor u = fromDoubles(DataType::UInt4, {15.0, 16.0, -3.0, 3.5});
  EXPECT_EQ(bytesOf(u), (std::vector<uint8_t>{0xFF, 0x40}));
  EXPECT_EQ(u.toDoubles(), (std::vector<double>{15.0, 15.0, 0.0, 4.0}));
}

TEST(TensorConversions, FromDoublesRoundsHalfToEvenAndSaturatesIntegers) {
  Tensor i8 = fromDoubles(DataType::Int8, {2.5, 3.5, -2.5, -3.5, 127.5, 300.0, -300.0, 0.49999});
  EXPECT_EQ(i8.toDoubles(), (std::vector<double>{2, 4, -2, -4, 127, 127, -128, 0}));
  Tensor u8 = fromDoubles(DataType::UInt8, {-1.0, 254.5, 255.5, 0.5, 1.5});
  EXPECT_EQ(u8.toDoubles(), (std::vector<double>{0, 254, 255, 0, 2}));
  Tensor i32 = fromDoubles(DataType::Int32, {3e9, -3e9, -0.5});
  EXPECT_EQ(i32.toInt64s(), (std::vector<int64_t>{2147483647, -2147483648LL, 0}));
  Tensor i64 = fromDoubles(DataType::Int64, {1e19, -1e19});
  EXPECT_EQ(i64.toInt64s(), (std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                                  std::numeric_limits<int64_t>::min()}));
  Tensor nan = fromDoubles(DataType::Int16, {std::numeric_limits<double>::quiet_NaN()});
  EXPECT_EQ(nan.toDoubles(), (std::vector<double>{0}));
}

TEST(TensorConversions, FromDoublesRoundsFloat16AndBFloat16Once) {
  // 1 + 2^-11 + 2^-40 lies just above the tie between 1 and the next half: a cast through float
  // would first round it to the tie and then to 1.
  double justAboveTie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Tensor h = fromDoubles(DataType::Float16, {justAboveTie, 1.0 + std::ldexp(1.0, -11), 1e6, 0.1});
  EXPECT_EQ(bytesOf(h), (std::vector<uint8_t>{0x01, 0x3C, 0x00, 0x3C, 0x00, 0x7C, 0x66, 0x2E}));
  double bfJustAboveTie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  Tensor b = fromDoubles(DataType::BFloat16, {bfJustAboveTie, 1.0 + std::ldexp(1.0, -8)});
  EXPECT_EQ(bytesOf(b), (std::vector<uint8_t>{0x81, 0x3F, 0x80, 0x3F}));
}

TEST(TensorConversions, FromDoublesFloatAndBool) {
  Tensor f = fromDoubles(DataType::Float, {0.1, 1e300});
  std::vector<float> values = f.toFloats();
  EXPECT_EQ(values[0], 0.1f);
  EXPECT_TRUE(std::isinf(values[1]));
  Tensor b = fromDoubles(DataType::Bool, {0.0, 2.0, -0.5});
  EXPECT_EQ(bytesOf(b), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_THROW(fromDoubles(DataType::String, {1.0}), Error);
}

TEST(TensorContent, HashAndEqualityCoverTypeDimsAndBytes) {
  Tensor a = Tensor::fromFloats({2}, std::vector<float>{1.0f, 2.0f});
  Tensor b = Tensor::fromFloats({2}, std::vector<float>{1.0f, 2.0f});
  Tensor c = Tensor::fromFloats({1, 2}, std::vector<float>{1.0f, 2.0f});
  Tensor d = Tensor::fromFloats({2}, std::vector<float>{1.0f, 3.0f});
  EXPECT_EQ(a.contentHash(), b.contentHash());
  EXPECT_TRUE(a.sameContent(b));
  EXPECT_NE(a.contentHash(), c.contentHash());
  EXPECT_FALSE(a.sameContent(c));
  EXPECT_NE(a.contentHash(), d.contentHash());
  EXPECT_FALSE(a.sameContent(d));
}

}  // namespace
}  // namespace qopt
