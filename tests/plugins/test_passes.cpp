// Passes for tests: options of every type, passes that change the model a given number of times,
// break the IR, throw, or publish results. Loaded only by tests (--load-pass-plugin).
#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace {

using namespace qopt;

enum class Mode { Fast, Careful, Exhaustive };

// Options of every kind; run() publishes what it sees so tests can check the values arrived.
class OptionsPass : public Pass {
 public:
  OptionsPass() : Pass("test-options", "Has options of every type and publishes their values") {}

  PassResult run(Model&, PassContext& context) override {
    Json seen = Json::object();
    seen["flag"] = *flag_;
    seen["count"] = *count_;
    seen["ratio"] = *ratio_;
    seen["label"] = *label_;
    Json ops = Json::array();
    for (const std::string& op : *ops_) ops.push(op);
    seen["ops"] = std::move(ops);
    seen["mode"] = mode_.spelling();
    seen["target"] = target_.resolve(context).str();
    context.results()["test-options"] = std::move(seen);
    PassResult result;
    result.statistics["runs"] = 1;
    result.note("", fmt::format("label is '{}'", *label_));
    return result;
  }

 private:
  Option<bool> flag_{*this, "flag", false, "A boolean"};
  Option<int64_t> count_{*this, "count", 3, "An integer"};
  Option<double> ratio_{*this, "ratio", 0.5, "A float"};
  Option<std::string> label_{*this, "label", "plain", "A string"};
  ListOption<std::string> ops_{*this, "ops", {"Conv", "Gemm"}, "A list of op types"};
  EnumOption<Mode> mode_{
      *this,
      "mode",
      Mode::Fast,
      "An enum",
      {{Mode::Fast, "fast"}, {Mode::Careful, "careful"}, {Mode::Exhaustive, "exhaustive"}}};
  TargetOption target_{*this};
};

// Reports a change for its first `rounds` runs (fixpoint tests); renames nothing.
class CountdownPass : public Pass {
 public:
  CountdownPass() : Pass("test-countdown", "Claims to change the model on its first N runs") {}

  PassResult run(Model&, PassContext&) override {
    PassResult result;
    result.changed = runs_ < *rounds_;
    ++runs_;
    result.statistics["run"] = runs_;
    return result;
  }

 private:
  Option<int64_t> rounds_{*this, "rounds", 2, "How many runs report a change"};
  int64_t runs_ = 0;
};

// Moves the last node of the main graph to the front: the IR is then out of order, which the
// verifier must catch (--verify-each tests).
class MisorderPass : public Pass {
 public:
  MisorderPass() : Pass("test-misorder", "Breaks the topological order (for verifier tests)") {}

  PassResult run(Model& model, PassContext&) override {
    Graph& graph = model.graph();
    PassResult result;
    if (graph.numNodes() >= 2) {
      graph.lastNode()->moveBefore(graph.firstNode());
      result.changed = true;
    }
    return result;
  }
};

// Throws a qopt::Error of the chosen kind (exit code tests); `check` makes it a check pass,
// whose failed check still leaves the output written.
class FailPass : public Pass {
 public:
  FailPass() : Pass("test-fail", "Throws an error of the chosen kind") {}

  bool isCheck() const override { return *check_; }

  PassResult run(Model& model, PassContext&) override {
    ErrorKind kind = *kind_ == "verification" ? ErrorKind::Verification
                     : *kind_ == "input"      ? ErrorKind::Input
                                              : ErrorKind::Internal;
    throw Error(kind, model.sourcePath, "tensor 'x'", "failed on purpose");
  }

 private:
  Option<std::string> kind_{*this, "kind", "verification", "verification, input or internal"};
  Option<bool> check_{*this, "check", false, "Declare the pass a check (Pass::isCheck)"};
};

// Renames every node output of the main graph to "<name>_r" (name map tests).
class RenamePass : public Pass {
 public:
  RenamePass() : Pass("test-rename", "Appends _r to the name of every node output") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    for (Node* node : model.graph().nodes()) {
      for (Value* out : node->outputs()) {
        if (out->isAbsent() || out->isGraphOutput()) continue;
        out->setName(model.uniqueValueName(out->name() + "_r"));
        result.changed = true;
      }
    }
    return result;
  }
};

}  // namespace

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "test-passes", "1.0", [](PassRegistry& registry) {
            registry.add<OptionsPass>();
            registry.add<CountdownPass>();
            registry.add<MisorderPass>();
            registry.add<FailPass>();
            registry.add<RenamePass>();
          }};
}
