// NameMap: original tensor names follow replacements, renames and erasures.
#include <gtest/gtest.h>

#include "TestPasses.h"
#include "qopt/pass/NameMap.h"

namespace qopt {
namespace {

TEST(NameMap, UntouchedNamesMapToThemselves) {
  NameMap map;
  EXPECT_EQ(map.currentName("anything"), "anything");
  EXPECT_TRUE(map.changes().empty());
}

// A chain model whose changes `map` follows for the length of the test.
class NameMapObserving : public ::testing::Test {
 protected:
  NameMapObserving() { model->addObserver(&map); }
  ~NameMapObserving() override { model->removeObserver(&map); }
  std::unique_ptr<Model> model = testing::chainModel();
  NameMap map;
  Graph& g = model->graph();
};

TEST_F(NameMapObserving, FollowsRenamesAndReplacementChains) {
  Value* r = g.firstNode()->output(0);
  r->setName("r2");
  EXPECT_EQ(map.currentName("r"), "r2");
  // r2 replaced by a new Tanh output: both "r" and that value's own name follow it.
  Node* tanh = g.createNode("Tanh", {g.inputs()[0]}, 1, g.lastNode());
  tanh->output(0)->setName("t");
  r->replaceAllUsesWith(tanh->output(0));
  g.eraseNode(r->producer());
  EXPECT_EQ(map.currentName("r"), "t");
  EXPECT_EQ(map.currentName("t"), "t");
  tanh->output(0)->setName("t2");
  EXPECT_EQ(map.currentName("r"), "t2");
  EXPECT_EQ(map.currentName("t"), "t2");
}

TEST_F(NameMapObserving, ErasedValuesAreRemoved) {
  Node* extra = g.createEmptyNode("Neg");
  extra->addInput(g.inputs()[0]);
  extra->addOutput("dead");
  g.eraseNode(extra);
  EXPECT_EQ(map.currentName("dead"), std::nullopt);
  auto changes = map.changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first, "dead");
  EXPECT_EQ(changes[0].second, std::nullopt);
}

TEST_F(NameMapObserving, AValueReplacedByAnInitializerOfItsNameKeepsIt) {
  // r (Relu's output) becomes an initializer under the same name, as lifting a constant does.
  Node* relu = g.firstNode();
  auto tensor = std::make_shared<Tensor>(Tensor::fromFloats({1, 4}, std::vector<float>(4, 0)));
  Value* init = g.replaceByInitializer(relu->output(0), tensor);
  g.eraseNode(relu);
  EXPECT_EQ(init->name(), "r");
  EXPECT_EQ(map.currentName("r"), "r");
  EXPECT_EQ(map.currentName("y"), "y");
  EXPECT_TRUE(map.changes().empty());
}

TEST_F(NameMapObserving, GraphOutputKeepsItsNameWhenItsProducerIsReplaced) {
  // y = Sigmoid(r) is replaced by r itself (as eliminating a no-op would do): r takes the name y.
  Node* sigmoid = g.lastNode();
  Value* r = sigmoid->input(0);
  sigmoid->output(0)->replaceAllUsesWith(r);
  g.eraseNode(sigmoid);
  EXPECT_EQ(g.outputs()[0], r);
  EXPECT_EQ(r->name(), "y");
  EXPECT_EQ(map.currentName("y"), "y");
  EXPECT_EQ(map.currentName("r"), "y");
}

}  // namespace
}  // namespace qopt
