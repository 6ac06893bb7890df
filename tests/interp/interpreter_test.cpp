// The executor: preparation errors, input checks, last-use freeing (peak memory), capture of
// intermediates, allocation limits and repeated runs with one plan.
#include <unordered_set>

#include "InterpTestUtil.h"
#include "qopt/interp/Kernel.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

TEST(Interpreter, UnsupportedOpNamesNodeOpDomainAndOpset) {
  GraphBuilder b(15);
  Value* x = b.input("x");
  Node* n = b.node("FancyOp", {x});
  n->setName("fancy1");
  n->setDomain("com.example");
  b.model().setOpsetVersion("com.example", 3);
  b.output(n->output(0));
  std::string message = errorMessage([&] { Interpreter interp(b.graph()); });
  EXPECT_NE(message.find("fancy1"), std::string::npos) << message;
  EXPECT_NE(message.find("FancyOp"), std::string::npos) << message;
  EXPECT_NE(message.find("com.example"), std::string::npos) << message;
  EXPECT_NE(message.find("opset 3"), std::string::npos) << message;
}

TEST(Interpreter, OpsetTooOldForTheOpIsReportedAtConstruction) {
  GraphBuilder b(5);
  Value* x = b.input("x");
  b.output(b.node("Range", {x, x, x})->output(0));
  std::string message = errorMessage([&] { Interpreter interp(b.graph()); });
  EXPECT_NE(message.find("Range"), std::string::npos) << message;
  EXPECT_NE(message.find("opset 5"), std::string::npos) << message;
}

TEST(Interpreter, InputsAreChecked) {
  GraphBuilder b;
  Value* x = b.input("x", DataType::Float, {2});
  b.output(b.node("Relu", {x})->output(0));
  Interpreter interp(b.graph());
  EXPECT_NE(errorMessage([&] { interp.run({}); }).find("'x'"), std::string::npos);
  EXPECT_NE(errorMessage([&] {
              interp.run({{"x", int64s({2}, {1, 2})}});
            }).find("FLOAT"),
            std::string::npos);
  EXPECT_NE(errorMessage([&] {
              interp.run({{"x", floats({3}, {1, 2, 3})}});
            }).find("dimension 0"),
            std::string::npos);
  EXPECT_NE(errorMessage([&] {
              interp.run({{"x", floats({2}, {1, 2})}, {"y", floats({1}, {1})}});
            }).find("'y'"),
            std::string::npos);
}

TEST(Interpreter, KernelErrorsNameTheNode) {
  GraphBuilder b;
  Value* x = b.input("x");
  Value* shape = b.input("shape");
  Node* n = b.node("Reshape", {x, shape});
  n->setName("reshape7");
  b.output(n->output(0));
  Interpreter interp(b.graph());
  std::string message = errorMessage([&] {
    interp.run({{"x", floats({4}, {1, 2, 3, 4})}, {"shape", int64s({1}, {3})}});
  });
  EXPECT_NE(message.find("reshape7"), std::string::npos) << message;
  EXPECT_NE(message.find("Reshape"), std::string::npos) << message;
}

TEST(Interpreter, IntermediatesAreFreedAfterTheirLastUse) {
  // x -> Relu -> Relu -> ... -> Relu: at most two intermediates are alive at once.
  GraphBuilder b;
  Value* v = b.input("x");
  for (int i = 0; i < 10; ++i) v = b.node("Relu", {v})->output(0);
  b.output(v);
  Interpreter interp(b.graph());
  Array x(DataType::Float, {1024, 256});
  std::fill_n(x.data<float>(), x.numel(), 1.0f);
  interp.run({{"x", x}});
  EXPECT_EQ(interp.lastPeakBytes(), 2 * x.byteSize());
}

TEST(Interpreter, BranchesKeepValuesAliveUntilTheirLastUser) {
  // a = Relu(x); b = Neg(a); c = Abs(b); d = Add(a, c): a lives until the Add.
  GraphBuilder b;
  Value* x = b.input("x");
  Value* a = b.node("Relu", {x})->output(0);
  Value* n = b.node("Neg", {a})->output(0);
  Value* c = b.node("Abs", {n})->output(0);
  b.output(b.node("Add", {a, c})->output(0));
  Interpreter interp(b.graph());
  Array in = floats({4}, {-1, 2, -3, 4});
  auto out = interp.run({{"x", in}});
  EXPECT_EQ(doubles(out[0]), (std::vector<double>{0, 4, 0, 8}));
  EXPECT_EQ(interp.lastPeakBytes(), 3 * in.byteSize());
}

class Recorder : public CaptureObserver {
 public:
  std::unordered_set<const Value*> values;
  std::map<std::string, std::vector<double>> seen;
  const std::unordered_set<const Value*>& wanted() const override { return values; }
  void captured(const Value& value, const Array& array) override {
    seen[value.name()] = doubles(array);
  }
};

TEST(Interpreter, CaptureReportsOnlyWantedValues) {
  GraphBuilder b;
  Value* x = b.input("x");
  Value* r = b.node("Relu", {x})->output(0);
  Value* n = b.node("Neg", {r})->output(0);
  b.output(b.node("Abs", {n})->output(0));
  Interpreter interp(b.graph());
  Recorder recorder;
  recorder.values = {r, x};
  interp.run({{"x", floats({2}, {-1, 2})}}, &recorder);
  EXPECT_EQ(recorder.seen.size(), 2u);
  EXPECT_EQ(recorder.seen[r->name()], (std::vector<double>{0, 2}));
  EXPECT_EQ(recorder.seen["x"], (std::vector<double>{-1, 2}));
}

TEST(Interpreter, InitializersAndRepeatedRuns) {
  GraphBuilder b;
  Value* x = b.input("x");
  Value* w = b.constant("w", floats({2}, {10, 20}));
  b.output(b.node("Mul", {x, w})->output(0));
  b.output(w);
  b.output(x);
  Interpreter interp(b.graph());
  for (int i = 1; i <= 3; ++i) {
    auto out = interp.run({{"x", floats({2}, {static_cast<float>(i), 1})}});
    EXPECT_EQ(doubles(out[0]), (std::vector<double>{10.0 * i, 20}));
    EXPECT_EQ(doubles(out[1]), (std::vector<double>{10, 20}));
    EXPECT_EQ(doubles(out[2]), (std::vector<double>{static_cast<double>(i), 1}));
  }
}

TEST(Interpreter, AllocationsOverTheLimitFailCleanly) {
  GraphBuilder b;
  Value* x = b.input("x");
  Value* shape = b.input("shape");
  b.output(b.node("Expand", {x, shape})->output(0));
  RunOptions options;
  options.maxTensorBytes = 1 << 20;
  Interpreter interp(b.graph(), options);
  std::string message = errorMessage([&] {
    interp.run({{"x", floats({1}, {1})}, {"shape", int64s({2}, {1 << 20, 1 << 20})}});
  });
  EXPECT_NE(message.find("over the limit"), std::string::npos) << message;
  EXPECT_NE(message.find("Expand"), std::string::npos) << message;
}

// Nodes reading only constants (a weight's DequantizeLinear, shape arithmetic) run once when the
// plan is made; their values are the same on every run and are reported to observers.
TEST(Interpreter, ConstantOnlyNodesGiveTheSameValuesOnEveryRun) {
  GraphBuilder b;
  Value* x = b.input("x");
  Value* w = b.constant("w", floats({2}, {1.5f, -2}));
  Value* three = b.constant("three", floats({1}, {3}));
  Value* scaled = b.node("Mul", {w, three})->output(0);
  b.output(b.node("Add", {x, scaled})->output(0));
  Interpreter interp(b.graph());
  for (int i = 0; i < 2; ++i) {
    Recorder recorder;
    recorder.values = {scaled};
    auto out = interp.run({{"x", floats({2}, {1, 1})}}, &recorder);
    EXPECT_EQ(doubles(out[0]), (std::vector<double>{5.5, -5}));
    EXPECT_EQ(recorder.seen[scaled->name()], (std::vector<double>{4.5, -6}));
  }
}

// A constant-only node whose kernel fails is not run ahead: the run reports it, naming the node,
// as for any other node.
TEST(Interpreter, ConstantOnlyNodeErrorsComeFromTheRun) {
  GraphBuilder b;
  Value* x = b.input("x");
  Value* data = b.constant("data", floats({4}, {1, 2, 3, 4}));
  Value* shape = b.constant("shape", int64s({1}, {3}));
  Node* bad = b.node("Reshape", {data, shape});
  bad->setName("bad_reshape");
  b.output(b.node("Add", {x, bad->output(0)})->output(0));
  Interpreter interp(b.graph());
  std::string message = errorMessage([&] { interp.run({{"x", floats({3}, {1, 1, 1})}}); });
  EXPECT_NE(message.find("bad_reshape"), std::string::npos) << message;
}

TEST(Interpreter, RegistryPicksTheNewestKernelNotAfterTheOpset) {
  KernelRegistry registry;
  int picked = 0;
  registry.add("", "Op", 1, [&](KernelContext&) { picked = 1; });
  registry.add("", "Op", 13, [&](KernelContext&) { picked = 13; });
  EXPECT_EQ(registry.find("", "Op", 0), nullptr);
  EXPECT_NE(registry.find("", "Op", 12), nullptr);
  EXPECT_NE(registry.find("", "Op", 12), registry.find("", "Op", 13));
  EXPECT_EQ(registry.find("", "Op", 13), registry.find("", "Op", 21));
  EXPECT_EQ(registry.find("x", "Op", 13), nullptr);
  EXPECT_TRUE(registry.supports("", "Op"));
  EXPECT_FALSE(registry.supports("", "Opp"));
  EXPECT_EQ(registry.opNames(), std::vector<std::string>{"Op"});
  for (const char* op : {"Add", "Conv", "Softmax", "Loop", "Einsum"}) {
    EXPECT_TRUE(KernelRegistry::builtin().supports("", op)) << op;
  }
}

}  // namespace
}  // namespace qopt::interp
