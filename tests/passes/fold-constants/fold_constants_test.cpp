// fold-constants through the library: shape arithmetic and cast chains fold without changing
// results, the size caps and the quantization and randomness rules hold, and the dynamo export's
// bias chains fold so that fold-bn can then remove every BatchNormalization.
#include <zlib.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "FoldTestSupport.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt::testing {
namespace {

Value* int64Init(Graph& g, const std::string& name, std::vector<int64_t> dims,
                 std::vector<int64_t> values) {
  auto tensor =
      std::make_shared<Tensor>(Tensor::fromInt64s(DataType::Int64, std::move(dims), values));
  tensor->setName(name);
  return g.addInitializer(std::move(tensor));
}

Node* node(Graph& g, const char* op, std::initializer_list<Value*> inputs, const char* out) {
  Node* n = g.createNode(op, inputs, 1);
  n->output(0)->setName(out);
  return n;
}

TEST(FoldConstants, ShapeArithmeticFoldsAndResultsStayIdentical) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {2, 3, 4}));
  Node* shape = node(g, "Shape", {x}, "s");
  Node* gather = node(g, "Gather", {shape->output(0), int64Init(g, "i0", {}, {0})}, "d0");
  Node* unsq = node(g, "Unsqueeze", {gather->output(0), int64Init(g, "axes", {1}, {0})}, "u0");
  Node* concat = node(g, "Concat", {unsq->output(0), int64Init(g, "minus1", {1}, {-1})}, "target");
  concat->setAttr(Attribute::makeInt("axis", 0));
  Node* reshape = node(g, "Reshape", {x, concat->output(0)}, "y");
  g.addOutput(reshape->output(0));
  auto original = model->clone();

  PassOutcome run = runPipeline(*model, "fold-constants");
  EXPECT_EQ(run.result.statistics.get("nodes-folded"), 4);
  EXPECT_EQ(g.numNodes(), 1u);
  Value* target = g.findValue("target");
  ASSERT_TRUE(target && target->isInitializer());
  EXPECT_EQ(target->initializer()->toInt64s(), (std::vector<int64_t>{2, -1}));
  // The constants only the folded nodes read are gone.
  EXPECT_EQ(g.findValue("i0"), nullptr);
  EXPECT_EQ(g.findValue("axes"), nullptr);
  auto inputs = randomInputs(*original, 1);
  EXPECT_EQ(maxRelativeError(runInterpreter(*model, inputs), runInterpreter(*original, inputs)), 0);
}

TEST(FoldConstants, FoldedOutputsKeepTheirNamesAndGraphOutputsStay) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Int64, {2}));
  // c and d fold and keep their names; e is a graph output, so its node stays.
  Node* add = node(g, "Add", {int64Init(g, "a", {2}, {1, 2}), int64Init(g, "b", {2}, {3, 4})}, "c");
  Node* neg = node(g, "Neg", {add->output(0)}, "d");
  Node* abs = node(g, "Abs", {neg->output(0)}, "e");
  Node* mul = node(g, "Mul", {x, add->output(0)}, "m");
  Node* sum = node(g, "Add", {mul->output(0), neg->output(0)}, "y");
  g.addOutput(abs->output(0));
  g.addOutput(sum->output(0));

  PassOutcome run = runPipeline(*model, "fold-constants");
  EXPECT_EQ(run.result.statistics.get("nodes-folded"), 2);
  EXPECT_EQ(run.result.statistics.get("kept-graph-output"), 1);
  Value* c = g.findValue("c");
  Value* d = g.findValue("d");
  ASSERT_TRUE(c && c->isInitializer());
  ASSERT_TRUE(d && d->isInitializer());
  EXPECT_EQ(c->initializer()->name(), "c");
  EXPECT_EQ(c->initializer()->toInt64s(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(d->initializer()->toInt64s(), (std::vector<int64_t>{-4, -6}));
  EXPECT_EQ(abs->input(0), d);
  EXPECT_EQ(mul->input(1), c);
  EXPECT_EQ(sum->input(1), d);
  EXPECT_EQ(g.outputs()[0], abs->output(0));
  EXPECT_FALSE(model->isNameUsed("c_folded"));
  EXPECT_FALSE(model->isNameUsed("d_folded"));
}

TEST(FoldConstants, SizeCapsLeaveLargeResultsAlone) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1}));
  // 2^28 floats: must never be materialised.
  Node* huge =
      node(g, "ConstantOfShape", {int64Init(g, "huge_shape", {3}, {1024, 1024, 256})}, "huge");
  g.addOutput(node(g, "ReduceSum", {huge->output(0)}, "huge_sum")->output(0));
  // 100 elements: folded by default, kept under max-output-elements=50.
  auto row = std::make_shared<Tensor>(Tensor::fromFloats({4}, std::vector<float>{1, 2, 3, 4}));
  row->setName("row");
  Node* tile = node(g, "Tile", {g.addInitializer(row), int64Init(g, "reps", {1}, {25})}, "tiled");
  Node* sum = node(g, "ReduceSum", {tile->output(0)}, "tiled_sum");
  g.addOutput(node(g, "Add", {x, sum->output(0)}, "y")->output(0));

  auto capped = model->clone();
  PassOutcome run = runPipeline(*capped, "fold-constants{max-output-elements=50}");
  EXPECT_EQ(run.result.statistics.get("kept-too-large"), 2);
  EXPECT_EQ(run.result.statistics.get("nodes-folded"), 0);

  run = runPipeline(*model, "fold-constants");
  EXPECT_EQ(run.result.statistics.get("kept-too-large"), 1);  // only the ConstantOfShape
  EXPECT_EQ(run.result.statistics.get("nodes-folded"), 2);    // Tile and its ReduceSum
  EXPECT_EQ(countOps(*model, "ConstantOfShape"), 1);
  EXPECT_EQ(countOps(*model, "Tile"), 0);
  Value* folded = model->graph().findValue("tiled_sum");
  ASSERT_TRUE(folded && folded->isInitializer());
  EXPECT_EQ(folded->initializer()->toDoubles(), (std::vector<double>{250.0}));
}

TEST(FoldConstants, EvaluationNeverAllocatesOverMaxBytes) {
  // Range's size is not predicted: the interpreter's allocation limit stops it.
  auto model = newModel(17);
  Graph& g = model->graph();
  auto scalar = [&](const char* name, float v) {
    auto t = std::make_shared<Tensor>(Tensor::fromFloats({}, std::vector<float>{v}));
    t->setName(name);
    return g.addInitializer(t);
  };
  Node* range =
      node(g, "Range", {scalar("start", 0), scalar("limit", 1e6f), scalar("delta", 1)}, "r");
  Node* sum = node(g, "ReduceSum", {range->output(0)}, "total");
  g.addOutput(sum->output(0));
  PassOutcome run = runPipeline(*model, "fold-constants{max-bytes=1024}");
  EXPECT_EQ(countOps(*model, "Range"), 1);
  EXPECT_EQ(run.result.statistics.get("nodes-kept"), 1);
  EXPECT_EQ(run.result.statistics.get("kept-evaluation-failed"), 1);
  EXPECT_EQ(run.result.statistics.get("nodes-folded"), 0);
}

TEST(FoldConstants, QuantizationAndRandomnessStay) {
  auto model = newModel(17);
  Graph& g = model->graph();
  auto w = std::make_shared<Tensor>(Tensor::fromFloats({2}, std::vector<float>{0.5f, -1.0f}));
  w->setName("w");
  auto s = std::make_shared<Tensor>(Tensor::fromFloats({}, std::vector<float>{0.1f}));
  s->setName("s");
  Value* sv = g.addInitializer(s);
  Value* zero = addInitializer(g, "zero", DataType::Int8, {}, {0.0});
  Node* q = node(g, "QuantizeLinear", {g.addInitializer(w), sv, zero}, "q");
  Node* dq = node(g, "DequantizeLinear", {q->output(0), sv, zero}, "dq");
  Node* noise = g.createNode("RandomNormal", std::initializer_list<Value*>{}, 1);
  noise->setAttr(Attribute::makeInts("shape", {2}));
  Node* add = node(g, "Add", {dq->output(0), noise->output(0)}, "y");
  g.addOutput(add->output(0));

  PassOutcome run = runPipeline(*model, "fold-constants");
  EXPECT_EQ(run.result.statistics.get("kept-quantization"), 1);  // DequantizeLinear reads q
  EXPECT_EQ(run.result.statistics.get("kept-nondeterministic"), 1);
  EXPECT_EQ(run.result.statistics.get("nodes-folded"), 0);

  run = runPipeline(*model, "fold-constants{fold-quantization=true}");
  EXPECT_EQ(run.result.statistics.get("nodes-folded"), 2);
  Value* folded = g.findValue("dq");
  ASSERT_TRUE(folded && folded->isInitializer());
  EXPECT_EQ(folded->initializer()->toDoubles(), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(countOps(*model, "RandomNormal"), 1);
}

std::string gunzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr) << path;
  std::string bytes;
  char buffer[1 << 16];
  int n;
  while (file != nullptr && (n = gzread(file, buffer, sizeof(buffer))) > 0) {
    bytes.append(buffer, static_cast<size_t>(n));
  }
  if (file != nullptr) gzclose(file);
  return bytes;
}

TEST(FoldConstants, DynamoExportLosesEveryBatchNormAfterFoldBn) {
  std::string bytes = gunzip(QOPT_SOURCE_DIR "/tests/fixtures/torch/mobilenetv2_bn_dynamo.onnx.gz");
  auto model = loadModelFromBytes(bytes, "mobilenetv2_bn_dynamo.onnx", ".");
  auto original = model->clone();
  EXPECT_EQ(countOps(*model, "BatchNormalization"), 52);

  runPipeline(*model, "fold-constants");
  EXPECT_EQ(countOps(*model, "Shape"), 0);
  EXPECT_EQ(countOps(*model, "Expand"), 0);
  PassOutcome run = runPipeline(*model, "fold-bn");
  EXPECT_EQ(run.result.statistics.get("bn-folded"), 52);
  EXPECT_EQ(countOps(*model, "BatchNormalization"), 0);

  auto inputs = randomInputs(*original, 2024);
  EXPECT_LE(maxRelativeError(runInterpreter(*model, inputs), runInterpreter(*original, inputs)),
            1e-5);
}

}  // namespace
}  // namespace qopt::testing
