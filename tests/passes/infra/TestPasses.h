// In-process passes for the pass infrastructure tests (no module needed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassRegistry.h"

namespace qopt::testing {

enum class Level { Low, High };

class NoopPass : public Pass {
 public:
  NoopPass() : Pass("noop", "Does nothing") {}
  PassResult run(Model&, PassContext&) override { return {}; }
};

class TypedPass : public Pass {
 public:
  TypedPass() : Pass("typed", "Has one option of each type") {}
  PassResult run(Model&, PassContext&) override { return {}; }

  Option<bool> flag{*this, "flag", true, "bool"};
  Option<int64_t> count{*this, "count", 8, "int"};
  Option<double> ratio{*this, "ratio", 0.25, "float"};
  Option<std::string> label{*this, "label", "a b", "string"};
  ListOption<std::string> ops{*this, "ops", {"Conv", "Gemm"}, "list"};
  ListOption<int64_t> axes{*this, "axes", {}, "list of ints"};
  EnumOption<Level> level{
      *this, "level", Level::Low, "enum", {{Level::Low, "low"}, {Level::High, "high"}}};
  TargetOption target{*this};
};

/// Reports a change on its first `rounds` runs.
class CountdownPass : public Pass {
 public:
  CountdownPass() : Pass("countdown", "Changes the model on its first N runs") {}
  PassResult run(Model&, PassContext&) override {
    PassResult result;
    result.changed = runs < *rounds;
    ++runs;
    result.statistics["runs"] = runs;
    return result;
  }
  Option<int64_t> rounds{*this, "rounds", 2, "rounds"};
  int64_t runs = 0;
};

/// Appends a Relu after the first graph output's producer value and makes it the output.
class AppendReluPass : public Pass {
 public:
  AppendReluPass() : Pass("append-relu", "Adds a Relu in front of the first graph output") {}
  explicit AppendReluPass(std::string name) : Pass(std::move(name), "append-relu, another name") {}
  PassResult run(Model& model, PassContext&) override {
    Graph& g = model.graph();
    Value* out = g.outputs().at(0);
    Node* relu = g.createNode("Relu", {out}, 1);
    g.setOutput(0, relu->output(0));
    PassResult result;
    result.changed = true;
    result.statistics["relus-added"] = 1;
    result.applied(relu->describe(), "added");
    return result;
  }
};

/// append-relu that keeps the model analysis "relu-count" (it updates what that counts itself).
class AppendReluKeepingPass : public AppendReluPass {
 public:
  AppendReluKeepingPass() : AppendReluPass("append-relu-keeping") {}
  std::vector<std::string> preservedAnalyses() const override { return {"relu-count"}; }
};

/// Makes the model quantized: a DequantizeLinear in front of the first graph output.
class MarkQuantizedPass : public Pass {
 public:
  MarkQuantizedPass() : Pass("mark-quantized", "Adds a DequantizeLinear before the output") {}
  std::vector<ModelProperty> provides() const override { return {ModelProperty::Quantized}; }
  PassResult run(Model& model, PassContext&) override {
    Graph& g = model.graph();
    Node* dq = g.createNode("DequantizeLinear", {g.outputs().at(0)}, 1);
    g.setOutput(0, dq->output(0));
    PassResult result;
    result.changed = true;
    return result;
  }
};

/// Needs a quantized model; counts its runs.
class NeedsQuantizedPass : public Pass {
 public:
  NeedsQuantizedPass() : Pass("needs-quantized", "Works on quantized models only") {}
  std::vector<Requirement> requirements() const override {
    return {{ModelProperty::Quantized, "run mark-quantized before it"}};
  }
  PassResult run(Model&, PassContext&) override {
    ++runs;
    return {};
  }
  int runs = 0;
};

class ThrowingPass : public Pass {
 public:
  ThrowingPass() : Pass("throwing", "Throws") {}
  PassResult run(Model&, PassContext&) override {
    throw Error(ErrorKind::Verification, "model.onnx", "tensor 'x'", "mismatch");
  }
};

class OriginalReaderPass : public Pass {
 public:
  OriginalReaderPass() : Pass("original-reader", "Needs the input model") {}
  bool needsOriginalModel() const override { return true; }
  PassResult run(Model&, PassContext& context) override {
    sawOriginal = context.originalModel() != nullptr;
    return {};
  }
  bool sawOriginal = false;
};

inline PassRegistry testRegistry() {
  PassRegistry registry("<tests>");
  registry.add<NoopPass>();
  registry.add<TypedPass>();
  registry.add<CountdownPass>();
  registry.add<AppendReluPass>();
  registry.add<ThrowingPass>();
  registry.add<OriginalReaderPass>();
  registry.add<AppendReluKeepingPass>();
  registry.add<MarkQuantizedPass>();
  registry.add<NeedsQuantizedPass>();
  return registry;
}

/// x -> Relu -> Sigmoid -> y
inline std::unique_ptr<Model> chainModel() {
  auto model = std::make_unique<Model>();
  model->irVersion = 8;
  model->setOpsetVersion("", 17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 4}));
  Node* relu = g.createNode("Relu", {x}, 1);
  relu->output(0)->setName("r");
  Node* sigmoid = g.createNode("Sigmoid", {relu->output(0)}, 1);
  sigmoid->output(0)->setName("y");
  g.addOutput(sigmoid->output(0));
  return model;
}

}  // namespace qopt::testing
