// The built-in pass modules, loaded the way the driver loads them and run on models built in
// memory: what they change, what they leave alone, their statistics and the name map.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "PipelineTestSupport.h"

namespace qopt {
namespace {

using testing::builtinPasses;
using testing::newModel;
using testing::PassOutcome;
using testing::runPipeline;

ValueType f32(std::vector<int64_t> dims) {
  return ValueType::tensor(DataType::Float, dims);
}

Node* op(Graph& g, const char* type, std::initializer_list<Value*> inputs, const char* out) {
  Node* n = g.createNode(type, inputs, 1);
  n->output(0)->setName(out);
  return n;
}

Value* floatInit(Graph& g, const char* name, std::vector<float> values) {
  auto t =
      std::make_shared<Tensor>(Tensor::fromFloats({static_cast<int64_t>(values.size())}, values));
  t->setName(name);
  return g.addInitializer(t);
}

// Each test builds its model in `model` (IR version 8, opset 17 unless it sets another), through
// `g`.
class BuiltinPass : public ::testing::Test {
 protected:
  std::unique_ptr<Model> model = newModel();
  Graph& g = model->graph();
};
using Dce = BuiltinPass;
using EliminateIdentity = BuiltinPass;
using Canonicalize = BuiltinPass;
using DedupeInitializers = BuiltinPass;
using TopoSort = BuiltinPass;

TEST_F(Dce, RemovesDeadChainsAndUnusedInitializersKeepsOutputs) {
  Value* x = g.addInput("x", f32({4}));
  Value* w = floatInit(g, "w", {1, 2, 3, 4});
  floatInit(g, "unused", {5});
  Node* add = op(g, "Add", {x, w}, "sum");
  Node* dead1 = op(g, "Neg", {add->output(0)}, "d1");
  op(g, "Abs", {dead1->output(0)}, "d2");
  Node* out = op(g, "Relu", {add->output(0)}, "y");
  g.addOutput(out->output(0));
  g.addOutput(add->output(0));  // a graph output used by nobody is kept

  PassOutcome run = runPipeline(*model, "dce");
  EXPECT_TRUE(run.result.changed);
  EXPECT_EQ(run.result.statistics.get("nodes-removed"), 2);
  EXPECT_EQ(run.result.statistics.get("initializers-removed"), 1);
  EXPECT_EQ(g.numNodes(), 2u);
  EXPECT_EQ(g.initializers().size(), 1u);
  EXPECT_EQ(run.context->nameMap().currentName("d2"), std::nullopt);
  EXPECT_EQ(run.context->nameMap().currentName("y"), "y");

  PassOutcome again = runPipeline(*model, "dce");
  EXPECT_FALSE(again.result.changed);
}

TEST_F(EliminateIdentity, RemovesIdentityAndKeepsOutputNames) {
  Value* x = g.addInput("x", f32({4}));
  Node* relu = op(g, "Relu", {x}, "r");
  Node* id1 = op(g, "Identity", {relu->output(0)}, "r_id");
  Node* sig = op(g, "Sigmoid", {id1->output(0)}, "s");
  Node* idOut = op(g, "Identity", {sig->output(0)}, "y");
  Node* idInput = op(g, "Identity", {x}, "x_copy");  // output would be renamed: kept
  g.addOutput(idOut->output(0));
  g.addOutput(idInput->output(0));

  PassOutcome run = runPipeline(*model, "eliminate-identity");
  EXPECT_EQ(run.result.statistics.get("identity-removed"), 2);
  EXPECT_EQ(g.numNodes(), 3u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer()->opType(), "Sigmoid");
  EXPECT_EQ(g.outputs()[1]->name(), "x_copy");
  EXPECT_EQ(run.context->nameMap().currentName("r_id"), "r");
  EXPECT_EQ(run.context->nameMap().currentName("s"), "y");
  ASSERT_EQ(run.result.remarks.size(), 1u);
  EXPECT_EQ(run.result.remarks[0].kind, Remark::Kind::Missed);
  EXPECT_NE(run.result.remarks[0].message.find("would lose its name"), std::string::npos);
}

TEST_F(EliminateIdentity, DropoutOnlyInInferenceModeWithUnusedMask) {
  model->setOpsetVersion("", 13);
  Value* x = g.addInput("x", f32({4}));
  Node* plain = op(g, "Dropout", {x}, "d_plain");
  auto trueTensor =
      std::make_shared<Tensor>(Tensor::fromInt64s(DataType::Bool, {}, std::vector<int64_t>{1}));
  trueTensor->setName("training");
  Value* training = g.addInitializer(trueTensor);
  Node* trained = g.createNode("Dropout", {plain->output(0), nullptr, training}, 1);
  trained->output(0)->setName("d_trained");
  Node* masked = g.createNode("Dropout", {trained->output(0)}, 2);
  masked->output(0)->setName("d_masked");
  masked->output(1)->setName("mask");
  Node* relu = op(g, "Relu", {masked->output(0)}, "y");
  g.addOutput(relu->output(0));
  g.addOutput(masked->output(1));

  PassOutcome run = runPipeline(*model, "eliminate-identity");
  EXPECT_EQ(run.result.statistics.get("dropout-removed"), 1);
  EXPECT_EQ(trained->input(0), x);
  EXPECT_EQ(run.result.remarks.size(), 2u);
  PassOutcome none = runPipeline(*model, "eliminate-identity{dropout=false}");
  EXPECT_FALSE(none.result.changed);
}

TEST_F(Canonicalize, LiftsConstantsUnderTheirNameAndConvertsClip) {
  model->setOpsetVersion("", 13);
  Value* x = g.addInput("x", f32({3}));
  Node* c = g.createNode("Constant", {}, 1);
  c->output(0)->setName("k");
  c->setAttr(Attribute::makeFloats("value_floats", {1, 2, 3}));
  Node* add = op(g, "Add", {x, c->output(0)}, "sum");
  Node* clip = op(g, "Clip", {add->output(0)}, "y");
  clip->output(0)->setType(f32({3}));
  add->output(0)->setType(f32({3}));
  clip->setAttr(Attribute::makeFloat("max", 6.0f));
  g.addOutput(clip->output(0));

  PassOutcome run = runPipeline(*model, "canonicalize");
  EXPECT_EQ(run.result.statistics.get("constants-lifted"), 1);
  EXPECT_EQ(run.result.statistics.get("clip-converted"), 1);
  Value* k = g.findValue("k");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->isInitializer());
  EXPECT_EQ(k->initializer()->toFloats(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(add->input(1), k);
  EXPECT_EQ(run.context->nameMap().currentName("k"), "k");
  EXPECT_FALSE(clip->hasAttr("max"));
  ASSERT_EQ(clip->numInputs(), 3u);
  EXPECT_EQ(clip->input(1), nullptr);
  EXPECT_EQ(clip->input(2)->initializer()->toFloats(), std::vector<float>{6.0f});
}

TEST_F(Canonicalize, LeavesOldOpsetClipAlone) {
  model->setOpsetVersion("", 10);
  Value* x = g.addInput("x", f32({3}));
  Node* clip = op(g, "Clip", {x}, "y");
  clip->setAttr(Attribute::makeFloat("min", 0.0f));
  g.addOutput(clip->output(0));
  PassOutcome run = runPipeline(*model, "canonicalize");
  EXPECT_FALSE(run.result.changed);
  EXPECT_TRUE(clip->hasAttr("min"));
  ASSERT_EQ(run.result.remarks.size(), 1u);
}

TEST_F(DedupeInitializers, MergesIdenticalTensorsOnly) {
  Value* x = g.addInput("x", f32({2}));
  Value* a = floatInit(g, "a", {1, 2});
  Value* b = floatInit(g, "b", {1, 2});
  Value* c = floatInit(g, "c", {2, 1});
  Node* n1 = op(g, "Add", {x, a}, "s1");
  Node* n2 = op(g, "Add", {n1->output(0), b}, "s2");
  Node* n3 = op(g, "Add", {n2->output(0), c}, "y");
  g.addOutput(n3->output(0));

  PassOutcome run = runPipeline(*model, "dedupe-initializers");
  EXPECT_EQ(run.result.statistics.get("initializers-merged"), 1);
  EXPECT_EQ(run.result.statistics.get("bytes-saved"), 8);
  EXPECT_EQ(n2->input(1), a);
  EXPECT_EQ(g.initializers().size(), 2u);
  EXPECT_EQ(run.context->nameMap().currentName("b"), "a");
  EXPECT_EQ(run.context->nameMap().currentName("c"), "c");
}

TEST_F(TopoSort, RestoresOrderAndReportsNoChangeWhenSorted) {
  Value* x = g.addInput("x", f32({2}));
  Node* a = op(g, "Relu", {x}, "a");
  Node* b = op(g, "Neg", {a->output(0)}, "b");
  g.addOutput(b->output(0));
  PassOutcome sorted = runPipeline(*model, "topo-sort");
  EXPECT_FALSE(sorted.result.changed);
  b->moveBefore(a);
  EXPECT_FALSE(g.isTopologicallySorted());
  PassManager manager(parsePipeline("topo-sort", builtinPasses()));
  PassContext context;
  EXPECT_TRUE(manager.run(*model, context));
  EXPECT_EQ(g.firstNode(), a);
}

TEST(Pipelines, ShippedCleanupPipelineParsesAndRoundTrips) {
  std::ifstream in(std::string(QOPT_SOURCE_DIR) + "/pipelines/cleanup.qp");
  ASSERT_TRUE(in);
  Pipeline pipeline =
      parsePipelineFile(std::string(QOPT_SOURCE_DIR) + "/pipelines/cleanup.qp", builtinPasses());
  std::vector<std::string> names;
  pipeline.forEachPass([&](const Pass& pass) { names.push_back(pass.name()); });
  for (const char* name :
       {"dce", "eliminate-identity", "canonicalize", "dedupe-initializers", "topo-sort"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_EQ(parsePipeline(pipeline.str(), builtinPasses()).str(), pipeline.str());
}

}  // namespace
}  // namespace qopt
