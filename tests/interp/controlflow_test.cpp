// If, Loop and Scan with hand-built bodies that read values of the enclosing graph.
#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

Graph* attachGraph(Node* node, const char* name) {
  Attribute a;
  a.name = name;
  a.kind = AttrKind::Graph;
  a.g = std::make_unique<Graph>(&node->graph()->model(), node);
  a.g->name = name;
  Graph* g = a.g.get();
  node->setAttr(std::move(a));
  return g;
}

// An If node on `cond` with two empty branches.
struct IfParts {
  Node* node;
  Graph* thenBranch;
  Graph* elseBranch;
};

IfParts ifWithBranches(GraphBuilder& b, Value* cond) {
  Node* node = b.node("If", {cond});
  return {node, attachGraph(node, "then_branch"), attachGraph(node, "else_branch")};
}

// A Loop node over `inputs` (M, cond, one carried value) and its body's inputs: the iteration
// number, the condition and the carried value, of `stateType`.
struct LoopParts {
  Node* loop;
  Graph* body;
  Value* condIn;
  Value* state;
};

LoopParts loopNode(GraphBuilder& b, std::vector<Value*> inputs, size_t outputs,
                   DataType stateType) {
  Node* loop = b.node("Loop", std::move(inputs), outputs);
  Graph* body = attachGraph(loop, "body");
  body->addInput("i", ValueType::tensor(DataType::Int64, {}));
  Value* condIn = body->addInput("c", ValueType::tensor(DataType::Bool, {}));
  Value* state = body->addInput("v", ValueType::tensor(stateType));
  return {loop, body, condIn, state};
}

// Records every capture, in order.
class Recorder : public CaptureObserver {
 public:
  explicit Recorder(std::unordered_set<const Value*> wanted) : wanted_(std::move(wanted)) {}
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void captured(const Value& value, const Array& array) override {
    seen.emplace_back(value.name(), doubles(array));
  }
  std::vector<std::pair<std::string, std::vector<double>>> seen;

 private:
  std::unordered_set<const Value*> wanted_;
};

TEST(ControlFlow, IfRunsTheChosenBranchWithOuterValues) {
  GraphBuilder b(13);
  Value* cond = b.input("cond");
  Value* x = b.input("x");
  auto [ifNode, thenBranch, elseBranch] = ifWithBranches(b, cond);
  thenBranch->addOutput(b.node("Add", {x, x}, 1, thenBranch)->output(0));
  elseBranch->addOutput(b.node("Neg", {x}, 1, elseBranch)->output(0));
  b.output(ifNode->output(0));
  Interpreter interp(b.graph());
  Array xs = floats({2}, {1, 2});
  EXPECT_EQ(doubles(interp.run({{"cond", bools({}, {true})}, {"x", xs}})[0]),
            (std::vector<double>{2, 4}));
  EXPECT_EQ(doubles(interp.run({{"cond", bools({}, {false})}, {"x", xs}})[0]),
            (std::vector<double>{-1, -2}));
}

TEST(ControlFlow, UnsupportedOpInsideABodyFailsAtConstruction) {
  GraphBuilder b(13);
  Value* cond = b.input("cond");
  auto [ifNode, thenBranch, elseBranch] = ifWithBranches(b, cond);
  thenBranch->addOutput(b.node("NoSuchOp", {cond}, 1, thenBranch)->output(0));
  elseBranch->addOutput(b.node("Identity", {cond}, 1, elseBranch)->output(0));
  b.output(ifNode->output(0));
  try {
    Interpreter interp(b.graph());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchOp"), std::string::npos) << e.what();
  }
}

TEST(ControlFlow, LoopCarriesStateAndStacksScanOutputs) {
  GraphBuilder b(13);
  Value* x = b.input("x");
  Value* trips = b.input("M");
  Value* cond = b.input("cond");
  Value* init = b.input("v0");
  auto [loop, body, condIn, v] = loopNode(b, {trips, cond, init}, 2, DataType::Float);
  Value* next = b.node("Add", {v, x}, 1, body)->output(0);
  body->addOutput(b.node("Identity", {condIn}, 1, body)->output(0));
  body->addOutput(next);
  body->addOutput(b.node("Identity", {next}, 1, body)->output(0));
  b.output(loop->output(0));
  b.output(loop->output(1));
  Interpreter interp(b.graph());
  auto out = interp.run({{"x", floats({2}, {1, 10})},
                         {"M", int64s({}, {3})},
                         {"cond", bools({}, {true})},
                         {"v0", floats({2}, {0, 0})}});
  EXPECT_EQ(doubles(out[0]), (std::vector<double>{3, 30}));
  EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(doubles(out[1]), (std::vector<double>{1, 10, 2, 20, 3, 30}));
  // No iterations: the state passes through and the scan output is empty.
  auto none = interp.run({{"x", floats({2}, {1, 10})},
                          {"M", int64s({}, {0})},
                          {"cond", bools({}, {true})},
                          {"v0", floats({2}, {5, 5})}});
  EXPECT_EQ(doubles(none[0]), (std::vector<double>{5, 5}));
  EXPECT_EQ(none[1].numel(), 0);
  // A capture sees every iteration: the body's input, its computed value, and once a value of
  // the main graph the body reads.
  Recorder recorder({v, next, x});
  interp.run({{"x", floats({1}, {10})},
              {"M", int64s({}, {3})},
              {"cond", bools({}, {true})},
              {"v0", floats({1}, {1})}},
             &recorder);
  std::vector<std::pair<std::string, std::vector<double>>> expected = {
      {x->name(), {10}},    {v->name(), {1}},  {next->name(), {11}}, {v->name(), {11}},
      {next->name(), {21}}, {v->name(), {21}}, {next->name(), {31}}};
  EXPECT_EQ(recorder.seen, expected);
}

TEST(ControlFlow, LoopStopsWhenTheBodyConditionTurnsFalse) {
  GraphBuilder b(13);
  Value* cond = b.input("cond");
  Value* init = b.input("v0");
  Value* limit = b.input("limit");
  auto [loop, body, condIn, v] = loopNode(b, {nullptr, cond, init}, 1, DataType::Int64);
  Value* one = b.node("Constant", {}, 1, body)->output(0);
  one->producer()->setAttr(Attribute::makeInt("value_int", 1));
  Value* next = b.node("Add", {v, one}, 1, body)->output(0);
  body->addOutput(b.node("Less", {next, limit}, 1, body)->output(0));
  body->addOutput(next);
  b.output(loop->output(0));
  Interpreter interp(b.graph());
  auto out = interp.run(
      {{"cond", bools({}, {true})}, {"v0", int64s({}, {0})}, {"limit", int64s({}, {5})}});
  EXPECT_EQ(out[0].getInt64(0), 5);
}

TEST(ControlFlow, ScanAccumulatesAlongAnAxis) {
  GraphBuilder b(16);
  Value* s0 = b.input("s0");
  Value* xs = b.input("xs");
  Node* scan = b.node("Scan", {s0, xs}, 2);
  scan->setAttr(Attribute::makeInt("num_scan_inputs", 1));
  Graph* body = attachGraph(scan, "body");
  Value* s = body->addInput("s", ValueType::tensor(DataType::Float));
  Value* e = body->addInput("e", ValueType::tensor(DataType::Float));
  Value* sum = b.node("Add", {s, e}, 1, body)->output(0);
  body->addOutput(sum);
  body->addOutput(b.node("Identity", {sum}, 1, body)->output(0));
  b.output(scan->output(0));
  b.output(scan->output(1));
  Interpreter interp(b.graph());
  auto out = interp.run({{"s0", floats({}, {0})}, {"xs", floats({3}, {1, 2, 3})}});
  EXPECT_EQ(out[0].getDouble(0), 6);
  EXPECT_EQ(doubles(out[1]), (std::vector<double>{1, 3, 6}));
  scan->setAttr(Attribute::makeInts("scan_input_directions", {1}));
  Interpreter reversed(b.graph());
  auto back = reversed.run({{"s0", floats({}, {0})}, {"xs", floats({3}, {1, 2, 3})}});
  EXPECT_EQ(doubles(back[1]), (std::vector<double>{3, 5, 6}));
}

TEST(ControlFlow, CapturesSeeTheBranchAnIfTookAndNotTheOther) {
  GraphBuilder b(13);
  Value* cond = b.input("cond");
  Value* x = b.input("x");
  auto [ifNode, thenBranch, elseBranch] = ifWithBranches(b, cond);
  Value* doubled = b.node("Add", {x, x}, 1, thenBranch)->output(0);
  Value* negated = b.node("Neg", {x}, 1, elseBranch)->output(0);
  thenBranch->addOutput(b.node("Relu", {doubled}, 1, thenBranch)->output(0));
  elseBranch->addOutput(b.node("Relu", {negated}, 1, elseBranch)->output(0));
  b.output(ifNode->output(0));
  Interpreter interp(b.graph());
  Recorder taken({doubled, negated});
  interp.run({{"cond", bools({}, {true})}, {"x", floats({2}, {1, -2})}}, &taken);
  ASSERT_EQ(taken.seen.size(), 1u);
  EXPECT_EQ(taken.seen[0].first, doubled->name());
  EXPECT_EQ(taken.seen[0].second, (std::vector<double>{2, -4}));
  Recorder other({doubled, negated});
  interp.run({{"cond", bools({}, {false})}, {"x", floats({2}, {1, -2})}}, &other);
  ASSERT_EQ(other.seen.size(), 1u);
  EXPECT_EQ(other.seen[0].first, negated->name());
  // Without an observer the same interpreter still runs (nothing of the last run is kept).
  EXPECT_EQ(doubles(interp.run({{"cond", bools({}, {true})}, {"x", floats({2}, {1, -2})}})[0]),
            (std::vector<double>{2, 0}));
}

}  // namespace
}  // namespace qopt::interp
