// Unit tests of the model's value index, through the Graph API: lookups by graph, sibling
// subgraphs sharing a name, erases that wait in the deferred list (lookups must skip them, a
// value remade at the same address must be found), and a random sequence of creates, erases and
// renames checked against a std::map.
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "IrTestUtil.h"
#include "qopt/ir/Graph.h"

namespace qopt {
namespace {

ValueType floatType() {
  return ValueType::tensor(DataType::Float, {2});
}

Node* reluNamed(Graph& g, Value* input, const std::string& output) {
  Node* node = g.createEmptyNode("Relu");
  node->addInput(input);
  node->addOutput(output);
  return node;
}

// An If whose two branches each define a value named `inner`.
Node* ifWithBranchesDefining(Graph& g, Value* cond, Value* outer, const std::string& inner) {
  Node* ifNode = g.createNode("If", {cond}, 1);
  for (const char* branch : {"then_branch", "else_branch"}) {
    testing::addSubgraph(ifNode, branch, [&](Graph& body) {
      Node* neg = body.createEmptyNode("Neg");
      neg->addInput(outer);
      body.addOutput(neg->addOutput(inner));
    });
  }
  return ifNode;
}

TEST(ValueIndex, FindsAValueOnlyInItsOwnGraph) {
  Model m;
  Graph& g = m.graph();
  Value* cond = g.addInput("cond", ValueType::tensor(DataType::Bool, {}));
  Value* x = g.addInput("x", floatType());
  Node* ifNode = ifWithBranchesDefining(g, cond, x, "t");
  std::vector<Graph*> branches = ifNode->subgraphs();
  ASSERT_EQ(branches.size(), 2u);
  EXPECT_EQ(g.findValue("t"), nullptr);
  Value* thenT = branches[0]->findValue("t");
  Value* elseT = branches[1]->findValue("t");
  ASSERT_NE(thenT, nullptr);
  ASSERT_NE(elseT, nullptr);
  EXPECT_NE(thenT, elseT);
  EXPECT_EQ(thenT->graph(), branches[0]);
  EXPECT_EQ(elseT->graph(), branches[1]);
  EXPECT_EQ(branches[0]->lookupValue("x"), x);
  EXPECT_TRUE(m.isNameUsed("t"));

  // Dropping one branch leaves the other's value findable and the name used.
  ASSERT_TRUE(ifNode->removeAttr("then_branch"));
  EXPECT_EQ(ifNode->subgraphs()[0]->findValue("t"), elseT);
  EXPECT_TRUE(m.isNameUsed("t"));
  ASSERT_TRUE(ifNode->removeAttr("else_branch"));
  EXPECT_FALSE(m.isNameUsed("t"));
}

// Makes a Relu whose output is `name`, erases it, and returns where that output lived.
const Value* eraseNewRelu(Graph& g, Value* input, const std::string& name) {
  Node* node = reluNamed(g, input, name);
  const Value* address = node->output(0);
  g.eraseNode(node);
  return address;
}

TEST(ValueIndex, AValueRemadeAtTheSameAddressUnderItsOldNameIsFound) {
  Model m;
  Graph& g = m.graph();
  Value* x = g.addInput("x", floatType());
  const Value* oldAddress = eraseNewRelu(g, x, "y");
  EXPECT_FALSE(m.isNameUsed("y"));
  EXPECT_EQ(g.findValue("y"), nullptr);
  // The arena hands the freed slot out again: the same address, the same name.
  Value* remade = reluNamed(g, x, "y")->output(0);
  ASSERT_EQ(remade, oldAddress);
  EXPECT_EQ(g.findValue("y"), remade);
  EXPECT_TRUE(m.isNameUsed("y"));
  g.eraseNode(remade->producer());
  EXPECT_EQ(g.findValue("y"), nullptr);
  EXPECT_EQ(m.uniqueValueName("y"), "y");
}

TEST(ValueIndex, AValueRemadeAtTheSameAddressUnderANewNameDropsTheOldOne) {
  Model m;
  Graph& g = m.graph();
  Value* x = g.addInput("x", floatType());
  const Value* oldAddress = eraseNewRelu(g, x, "y");
  Value* remade = reluNamed(g, x, "z")->output(0);
  ASSERT_EQ(remade, oldAddress);
  EXPECT_EQ(g.findValue("y"), nullptr);
  EXPECT_FALSE(m.isNameUsed("y"));
  EXPECT_EQ(g.findValue("z"), remade);
  // Enough erases to push the deferred ones through the table.
  for (int i = 0; i < 100; ++i) g.eraseNode(reluNamed(g, x, "w" + std::to_string(i)));
  EXPECT_EQ(g.findValue("y"), nullptr);
  EXPECT_EQ(g.findValue("z"), remade);
  EXPECT_FALSE(m.isNameUsed("w7"));
}

TEST(ValueIndex, RandomCreatesErasesAndRenamesMatchAMap) {
  Model m;
  Graph& g = m.graph();
  Value* x = g.addInput("x", floatType());
  std::vector<std::string> pool;
  for (int i = 0; i < 64; ++i) {
    // Short names stay inline in std::string, long ones do not: both kinds must work.
    pool.push_back(i % 4 ? "v" + std::to_string(i) : "a_long_name_not_inline_" + std::to_string(i));
  }
  std::map<std::string, Value*> live;  // pool name -> value holding it
  std::mt19937 rng(11);
  auto unusedName = [&]() -> const std::string* {
    const std::string& name = pool[rng() % pool.size()];
    return live.count(name) ? nullptr : &name;
  };
  auto anyLive = [&]() {
    auto it = live.begin();
    std::advance(it, static_cast<long>(rng() % live.size()));
    return it;
  };
  for (int step = 0; step < 5000; ++step) {
    unsigned op = rng() % 3;
    if (op == 0 || live.empty()) {
      if (const std::string* name = unusedName()) live[*name] = reluNamed(g, x, *name)->output(0);
    } else if (op == 1) {
      auto it = anyLive();
      g.eraseNode(it->second->producer());
      live.erase(it);
    } else if (const std::string* name = unusedName()) {
      auto it = anyLive();
      Value* value = it->second;
      live.erase(it);
      value->setName(*name);
      live[*name] = value;
    }
    for (const std::string& name : pool) {
      auto it = live.find(name);
      Value* expected = it == live.end() ? nullptr : it->second;
      ASSERT_EQ(g.findValue(name), expected) << "step " << step << ", " << name;
      ASSERT_EQ(m.isNameUsed(name), expected != nullptr) << "step " << step << ", " << name;
    }
  }
}

}  // namespace
}  // namespace qopt
