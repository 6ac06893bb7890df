// PassManager: order of instrumentation callbacks, change tracking, fixpoint convergence and
// cap, errors naming the pass, the input snapshot, the verifier and the report.
#include <memory>
#include <sstream>
#include <string_view>

#include <gtest/gtest.h>

#include "ErrorTestUtil.h"
#include "TestPasses.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/TextFormat.h"
#include "qopt/pass/Instrumentations.h"
#include "qopt/pass/PassManager.h"

namespace qopt {
namespace {

using testing::chainModel;

// An If whose then branch holds a Loop, and an else branch: four graphs.
constexpr std::string_view kNested = R"(
<ir_version: 8, opset_import: ["" : 13]>
nested (bool c, float[2] x) => (float[2] y)
{
  y = If (c) <
    then_branch = then_body () => (float[2] t) {
      n = Constant <value = int64 {2}> ()
      t = Loop (n, , x) <
        body = loop_body (int64 i, bool cond, float[2] acc) => (bool cond_out, float[2] next) {
          cond_out = Identity (cond)
          next = Relu (acc)
        }
      >
    },
    else_branch = else_body () => (float[2] e) {
      e = Sigmoid (x)
    }
  >
}
)";

// Records the graphs it is run on; removes every Relu of the graph it is given.
class GraphVisitPass : public GraphPass {
 public:
  GraphVisitPass() : GraphPass("graph-visit", "Records the graphs it runs on") {}
  PassResult prepare(Model&, PassContext&) override {
    visited.push_back("prepare");
    PassResult r;
    r.statistics["graphs"] = 0;
    return r;
  }
  PassResult runOnGraph(Graph& graph, PassContext&) override {
    visited.push_back(graph.parentNode() ? graph.name : "main");
    PassResult r;
    r.statistics["graphs"] = 1;
    r.note(visited.back(), "seen");
    std::vector<Node*> relus;
    for (Node* node : graph.nodes()) {
      if (node->is("Relu")) relus.push_back(node);
    }
    for (Node* node : relus) {
      node->output(0)->replaceAllUsesWith(node->input(0));
      graph.eraseNode(node);
      r.changed = true;
    }
    return r;
  }
  std::vector<std::string> visited;
};

// A model pass that stays in the main graph.
class MainOnlyPass : public Pass {
 public:
  MainOnlyPass() : Pass("main-only", "Sees the main graph only") {}
  bool entersBodies() const override { return false; }
  PassResult run(Model&, PassContext&) override { return {}; }
};
using testing::errorOf;

const PassRegistry& registry() {
  static const PassRegistry r = testing::testRegistry();
  return r;
}

class Recorder : public PassInstrumentation {
 public:
  void pipelineStarted(const Pipeline&, const Model&, PassContext&) override {
    log.push_back("start");
  }
  void passStarted(const Pass& pass, const Model&, PassContext&) override {
    log.push_back("before " + pass.name());
  }
  void passFinished(const PassRun& run, const Model&, PassContext&) override {
    log.push_back("after " + run.pass.name() + (run.result.changed ? " changed" : "") +
                  (run.iteration ? " round " + std::to_string(run.iteration) : ""));
  }
  void fixpointFinished(const FixpointRun& run, const Model&, PassContext&) override {
    log.push_back("fixpoint " + std::to_string(run.iterations) +
                  (run.converged ? " converged" : " capped"));
  }
  void pipelineFinished(const Model&, PassContext&) override { log.push_back("finish"); }
  std::vector<std::string> log;
};

/// A pipeline of the test passes, a fresh chain model to run it on and the context.
struct ChainRun {
  explicit ChainRun(std::string_view pipeline) : manager(parsePipeline(pipeline, registry())) {}
  bool run() { return manager.run(*model, context); }
  PassManager manager;
  std::unique_ptr<Model> model = chainModel();
  PassContext context;
};

/// A ChainRun that records the instrumentation callbacks.
struct RecordedRun : ChainRun {
  explicit RecordedRun(std::string_view pipeline) : ChainRun(pipeline) {
    manager.addInstrumentation(recorder);
  }
  Recorder recorder;
};

TEST(PassManager, CallsInstrumentationAroundEachPass) {
  RecordedRun r("noop,append-relu");
  EXPECT_TRUE(r.run());
  EXPECT_EQ(r.recorder.log,
            (std::vector<std::string>{"start", "before noop", "after noop", "before append-relu",
                                      "after append-relu changed", "finish"}));
  EXPECT_EQ(r.model->graph().numNodes(), 3u);
  EXPECT_EQ(r.manager.failedPass(), nullptr);  // no pass threw
}

TEST(PassManager, FixpointStopsAtTheFirstRoundWithoutChange) {
  RecordedRun r("fixpoint(countdown{rounds=2},noop)");
  EXPECT_TRUE(r.run());
  EXPECT_EQ(r.recorder.log,
            (std::vector<std::string>{
                "start", "before countdown", "after countdown changed round 1", "before noop",
                "after noop round 1", "before countdown", "after countdown changed round 2",
                "before noop", "after noop round 2", "before countdown", "after countdown round 3",
                "before noop", "after noop round 3", "fixpoint 3 converged", "finish"}));
  EXPECT_TRUE(r.context.diagnostics().warnings().empty());
}

TEST(PassManager, FixpointCapWarnsAndIsReported) {
  ChainRun r("fixpoint(countdown{rounds=100}){max-iterations=3}");
  ReportBuilder report;
  r.manager.addInstrumentation(report);
  std::ostringstream err;
  r.context.diagnostics().setSink(&err);
  EXPECT_TRUE(r.run());
  ASSERT_EQ(r.context.diagnostics().warnings().size(), 1u);
  EXPECT_EQ(err.str(),
            "qopt: warning: fixpoint(countdown{rounds=100}){max-iterations=3} reached "
            "max-iterations=3 and the last round still changed the model\n");
  const Json& passes = report.report()["passes"];
  ASSERT_EQ(passes.size(), 4u);
  const Json& fixpoint = passes.asArray()[3];
  EXPECT_EQ(fixpoint["name"].asString(), "fixpoint");
  EXPECT_EQ(fixpoint["statistics"]["iterations"].asInt(), 3);
  EXPECT_EQ(fixpoint["statistics"]["cap-hit"].asInt(), 1);
  EXPECT_EQ(passes.asArray()[2]["fixpoint-round"].asInt(), 3);
}

TEST(PassManager, QuietDiagnosticsStillKeepWarnings) {
  ChainRun r("fixpoint(countdown{rounds=5}){max-iterations=1}");
  std::ostringstream err;
  r.context.diagnostics().setSink(&err);
  r.context.diagnostics().setVerbosity(Verbosity::Quiet);
  r.run();
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(r.context.diagnostics().warnings().size(), 1u);
}

TEST(PassManager, PassErrorsKeepTheirKindAndNameThePass) {
  ChainRun r("noop,throwing");
  try {
    r.run();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verification);
    EXPECT_EQ(std::string(e.what()), "model.onnx: tensor 'x': mismatch (in pass 'throwing')");
    ASSERT_NE(r.manager.failedPass(), nullptr);
    EXPECT_EQ(r.manager.failedPass()->name(), "throwing");
    EXPECT_FALSE(r.manager.failedPass()->isCheck());
  }
}

TEST(PassManager, RequirementsAreCheckedBeforeAnyPassRuns) {
  // No pass before needs-quantized quantizes and the input is float: nothing runs.
  Pipeline pipeline = parsePipeline("countdown,needs-quantized", registry());
  auto* countdown = static_cast<testing::CountdownPass*>(pipeline.items()[0].pass.get());
  PassManager manager(std::move(pipeline));
  auto model = chainModel();
  model->sourcePath = "model.onnx";
  PassContext context;
  EXPECT_EQ(errorOf([&] { manager.run(*model, context); }, ErrorKind::Usage),
            "model.onnx: pass 'needs-quantized': needs a quantized model (QuantizeLinear/"
            "DequantizeLinear or integer layers), and neither the input model nor a pass before "
            "it in the pipeline gives one: run mark-quantized before it");
  EXPECT_EQ(countdown->runs, 0);

  // A pass before it that provides the property, also inside a fixpoint, satisfies it.
  for (const char* text : {"mark-quantized,needs-quantized",
                           "fixpoint(mark-quantized){max-iterations=1},needs-quantized"}) {
    Pipeline ok = parsePipeline(text, registry());
    auto* needs = static_cast<testing::NeedsQuantizedPass*>(ok.items().back().pass.get());
    PassManager runner(std::move(ok));
    auto m = chainModel();
    PassContext c;
    runner.run(*m, c);
    EXPECT_EQ(needs->runs, 1) << text;
  }
  // ... and so does an input model that has it already.
  {
    auto quantized = chainModel();
    PassContext c;
    PassManager(parsePipeline("mark-quantized", registry())).run(*quantized, c);
    Pipeline alone = parsePipeline("needs-quantized", registry());
    auto* needs = static_cast<testing::NeedsQuantizedPass*>(alone.items()[0].pass.get());
    PassContext c2;
    PassManager runner(std::move(alone));  // owns the pass `needs` points to
    runner.run(*quantized, c2);
    EXPECT_EQ(needs->runs, 1);
  }
}

TEST(PassManager, ModelAnalysesLastUntilAPassChangesTheModel) {
  using Scope = PassContext::AnalysisScope;
  auto run = [](const char* text, const std::vector<std::string>& expectKept) {
    ChainRun r(text);
    r.context.setAnalysis<int>("relu-count", Scope::Model, 1);
    r.context.setAnalysis<int>("node-count", Scope::Model, 2);
    r.context.setAnalysis<int>("samples", Scope::Data, 3);
    r.context.setAnalysis<int>("choice", Scope::Outcome, 4);
    r.run();
    std::vector<std::string> kept;
    for (const char* key : {"relu-count", "node-count", "samples", "choice"}) {
      if (r.context.findAnalysis<int>(key) != nullptr) kept.push_back(key);
    }
    EXPECT_EQ(kept, expectKept) << text;
  };
  run("noop", {"relu-count", "node-count", "samples", "choice"});  // nothing changed
  run("append-relu", {"samples", "choice"});
  run("append-relu-keeping", {"relu-count", "samples", "choice"});
}

TEST(PassManager, SnapshotsTheInputOnlyWhenAPassAsks) {
  {
    ChainRun r("append-relu");
    r.run();
    EXPECT_EQ(r.context.originalModel(), nullptr);
  }
  Pipeline pipeline = parsePipeline("append-relu,original-reader", registry());
  auto* reader = static_cast<testing::OriginalReaderPass*>(pipeline.items()[1].pass.get());
  PassManager manager(std::move(pipeline));
  auto model = chainModel();
  PassContext context;
  manager.run(*model, context);
  EXPECT_TRUE(reader->sawOriginal);
  ASSERT_NE(context.originalModel(), nullptr);
  EXPECT_EQ(context.originalModel()->graph().numNodes(), 2u);  // before append-relu
  EXPECT_EQ(model->graph().numNodes(), 3u);
}

TEST(PassManager, NameMapFollowsChangesWhileRunningOnly) {
  ChainRun r("append-relu");
  r.run();
  // append-relu made a new output value: the old one keeps its name, nothing was replaced.
  EXPECT_EQ(r.context.nameMap().currentName("y"), "y");
  // After the run the map no longer listens.
  r.model->graph().outputs()[0]->setName("late");
  EXPECT_TRUE(r.context.nameMap().changes().empty());
}

TEST(PassManager, ReportHasPassesOptionsStatisticsAndRemarks) {
  ChainRun r("typed{count=3 ops=[A]},append-relu");
  ReportBuilder report;
  r.manager.addInstrumentation(report);
  r.context.results()["topic"] = "value";
  r.run();
  Json json = Json::parse(report.report().dump(2));
  EXPECT_EQ(json["pipeline"].asString(), r.manager.pipeline().str());
  const Json& typed = json["passes"].asArray()[0];
  EXPECT_EQ(typed["name"].asString(), "typed");
  EXPECT_EQ(typed["options"]["count"].asInt(), 3);
  EXPECT_TRUE(typed["options"]["flag"].asBool());
  EXPECT_EQ(typed["options"]["ratio"].asDouble(), 0.25);
  EXPECT_EQ(typed["options"]["ops"], Json(Json::Array{Json("A")}));
  EXPECT_EQ(typed["options"]["level"].asString(), "low");
  EXPECT_FALSE(typed["changed"].asBool());
  EXPECT_GE(typed["wall-time-ms"].asDouble(), 0.0);
  const Json& relu = json["passes"].asArray()[1];
  EXPECT_TRUE(relu["changed"].asBool());
  EXPECT_EQ(relu["statistics"]["relus-added"].asInt(), 1);
  ASSERT_EQ(relu["remarks"].size(), 1u);
  EXPECT_EQ(relu["remarks"].asArray()[0]["kind"].asString(), "applied");
  EXPECT_EQ(relu["remarks"].asArray()[0]["message"].asString(), "added");
  EXPECT_EQ(json["results"]["topic"].asString(), "value");
  EXPECT_TRUE(json["warnings"].isArray());
  EXPECT_TRUE(json["tensor-map"].isObject());
}

TEST(PassManager, PrinterAndTimerWriteToTheirStream) {
  ChainRun r("noop,append-relu");
  std::ostringstream printed, timed;
  IrPrinter printer(printed, {"append-relu"});
  PassTimer timer(timed);
  r.manager.addInstrumentation(printer);
  r.manager.addInstrumentation(timer);
  r.run();
  EXPECT_EQ(printed.str().find("// ----- IR after append-relu -----\n"), 0u) << printed.str();
  EXPECT_EQ(printed.str().find("IR after noop"), std::string::npos);
  EXPECT_NE(printed.str().find("Relu"), std::string::npos);
  EXPECT_NE(timed.str().find("noop"), std::string::npos);
  EXPECT_NE(timed.str().find("total"), std::string::npos);
}

class MisorderPass : public Pass {
 public:
  MisorderPass() : Pass("misorder", "Puts the last node first") {}
  PassResult run(Model& model, PassContext&) override {
    model.graph().lastNode()->moveBefore(model.graph().firstNode());
    PassResult result;
    result.changed = true;
    return result;
  }
};

TEST(PassManager, VerifierStopsAfterThePassThatBrokeTheIr) {
  PassRegistry registry = testing::testRegistry();
  registry.add<MisorderPass>();
  PassManager manager(parsePipeline("noop,misorder,append-relu", registry));
  EachPassVerifier verifier;
  Recorder recorder;
  manager.addInstrumentation(verifier);
  manager.addInstrumentation(recorder);
  auto model = chainModel();
  PassContext context;
  std::string message = errorOf([&] { manager.run(*model, context); }, ErrorKind::Verification);
  EXPECT_NE(message.find("the IR is not valid after pass 'misorder'"), std::string::npos)
      << message;
  EXPECT_EQ(recorder.log.back(), "before misorder");
}

TEST(PassManager, VerifierBlamesABrokenInputOnTheInput) {
  PassManager manager(parsePipeline("noop", registry()));
  EachPassVerifier verifier;
  Recorder recorder;
  manager.addInstrumentation(verifier);
  manager.addInstrumentation(recorder);
  auto model = chainModel();
  model->graph().lastNode()->moveBefore(model->graph().firstNode());
  std::string message =
      errorOf([&] { manager.run(*model, *std::make_unique<PassContext>()); }, ErrorKind::Input);
  EXPECT_NE(message.find("the input model is not valid"), std::string::npos) << message;
  EXPECT_TRUE(recorder.log.empty());
}

TEST(PassManager, GraphPassRunsOnTheMainGraphAndEveryBody) {
  auto model = parseModelText(kNested, "nested.onnxtxt");
  auto pass = std::make_unique<GraphVisitPass>();
  GraphVisitPass& visit = *pass;
  Pipeline pipeline;
  pipeline.addPass(std::move(pass));
  PassManager manager(std::move(pipeline));
  PassContext context;
  std::ostringstream err;
  context.diagnostics().setSink(&err);
  EXPECT_TRUE(manager.run(*model, context));
  EXPECT_EQ(visit.visited,
            (std::vector<std::string>{"prepare", "main", "then_body", "loop_body", "else_body"}));
  EXPECT_EQ(err.str().find("main graph only"), std::string::npos) << err.str();
  // The Loop body's Relu is gone and its output now reads the carried value.
  bool relu = false;
  model->graph().walk([&](Node* node) { relu = relu || node->is("Relu"); });
  EXPECT_FALSE(relu);
}

TEST(PassManager, GraphPassResultsMergeAcrossGraphs) {
  auto model = parseModelText(kNested, "nested.onnxtxt");
  GraphVisitPass pass;
  PassContext context;
  PassResult result = pass.run(*model, context);
  EXPECT_TRUE(result.changed);  // only the Loop body changed
  EXPECT_EQ(result.statistics.get("graphs"), 4);
  ASSERT_EQ(result.remarks.size(), 4u);
  EXPECT_EQ(result.remarks[2].subject, "loop_body");
}

TEST(PassManager, APassThatStaysInTheMainGraphWarnsNamingTheBodies) {
  auto model = parseModelText(kNested, "nested.onnxtxt");
  Pipeline pipeline;
  pipeline.addPass(std::make_unique<MainOnlyPass>());
  PassManager manager(std::move(pipeline));
  PassContext context;
  std::ostringstream err;
  context.diagnostics().setSink(&err);
  manager.run(*model, context);
  EXPECT_NE(err.str().find("main-only: works on the main graph only: the 5 nodes inside the "
                           "bodies of node producing 'y' (If) are left as they are"),
            std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace qopt
