// PassManager: order of instrumentation callbacks, change tracking, fixpoint convergence and
// cap, errors naming the pass, the input snapshot, the verifier and the report.
#include <sstream>

#include <gtest/gtest.h>

#include "TestPasses.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/Instrumentations.h"
#include "qopt/pass/PassManager.h"

namespace qopt {
namespace {

using testing::chainModel;

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

TEST(PassManager, CallsInstrumentationAroundEachPass) {
  PassManager manager(parsePipeline("noop,append-relu", registry()));
  Recorder recorder;
  manager.addInstrumentation(recorder);
  auto model = chainModel();
  PassContext context;
  EXPECT_TRUE(manager.run(*model, context));
  EXPECT_EQ(recorder.log,
            (std::vector<std::string>{"start", "before noop", "after noop", "before append-relu",
                                      "after append-relu changed", "finish"}));
  EXPECT_EQ(model->graph().numNodes(), 3u);
  EXPECT_EQ(manager.failedPass(), nullptr);  // no pass threw
}

TEST(PassManager, FixpointStopsAtTheFirstRoundWithoutChange) {
  PassManager manager(parsePipeline("fixpoint(countdown{rounds=2},noop)", registry()));
  Recorder recorder;
  manager.addInstrumentation(recorder);
  auto model = chainModel();
  PassContext context;
  EXPECT_TRUE(manager.run(*model, context));
  EXPECT_EQ(recorder.log,
            (std::vector<std::string>{
                "start", "before countdown", "after countdown changed round 1", "before noop",
                "after noop round 1", "before countdown", "after countdown changed round 2",
                "before noop", "after noop round 2", "before countdown", "after countdown round 3",
                "before noop", "after noop round 3", "fixpoint 3 converged", "finish"}));
  EXPECT_TRUE(context.diagnostics().warnings().empty());
}

TEST(PassManager, FixpointCapWarnsAndIsReported) {
  PassManager manager(
      parsePipeline("fixpoint(countdown{rounds=100}){max-iterations=3}", registry()));
  ReportBuilder report;
  manager.addInstrumentation(report);
  auto model = chainModel();
  std::ostringstream err;
  PassContext context;
  context.diagnostics().setSink(&err);
  EXPECT_TRUE(manager.run(*model, context));
  ASSERT_EQ(context.diagnostics().warnings().size(), 1u);
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
  PassManager manager(parsePipeline("fixpoint(countdown{rounds=5}){max-iterations=1}", registry()));
  auto model = chainModel();
  std::ostringstream err;
  PassContext context;
  context.diagnostics().setSink(&err);
  context.diagnostics().setVerbosity(Verbosity::Quiet);
  manager.run(*model, context);
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(context.diagnostics().warnings().size(), 1u);
}

TEST(PassManager, PassErrorsKeepTheirKindAndNameThePass) {
  PassManager manager(parsePipeline("noop,throwing", registry()));
  auto model = chainModel();
  PassContext context;
  try {
    manager.run(*model, context);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verification);
    EXPECT_EQ(std::string(e.what()), "model.onnx: tensor 'x': mismatch (in pass 'throwing')");
    ASSERT_NE(manager.failedPass(), nullptr);
    EXPECT_EQ(manager.failedPass()->name(), "throwing");
    EXPECT_FALSE(manager.failedPass()->isCheck());
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
  try {
    manager.run(*model, context);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_EQ(std::string(e.what()),
              "model.onnx: pass 'needs-quantized': needs a quantized model (QuantizeLinear/"
              "DequantizeLinear or integer layers), and neither the input model nor a pass before "
              "it in the pipeline gives one: run mark-quantized before it");
  }
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
    PassManager manager(parsePipeline(text, registry()));
    auto model = chainModel();
    PassContext context;
    context.setAnalysis<int>("relu-count", Scope::Model, 1);
    context.setAnalysis<int>("node-count", Scope::Model, 2);
    context.setAnalysis<int>("samples", Scope::Data, 3);
    context.setAnalysis<int>("choice", Scope::Outcome, 4);
    manager.run(*model, context);
    std::vector<std::string> kept;
    for (const char* key : {"relu-count", "node-count", "samples", "choice"}) {
      if (context.findAnalysis<int>(key) != nullptr) kept.push_back(key);
    }
    EXPECT_EQ(kept, expectKept) << text;
  };
  run("noop", {"relu-count", "node-count", "samples", "choice"});  // nothing changed
  run("append-relu", {"samples", "choice"});
  run("append-relu-keeping", {"relu-count", "samples", "choice"});
}

TEST(PassManager, SnapshotsTheInputOnlyWhenAPassAsks) {
  {
    PassManager manager(parsePipeline("append-relu", registry()));
    auto model = chainModel();
    PassContext context;
    manager.run(*model, context);
    EXPECT_EQ(context.originalModel(), nullptr);
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
  PassManager manager(parsePipeline("append-relu", registry()));
  auto model = chainModel();
  PassContext context;
  manager.run(*model, context);
  // append-relu made a new output value: the old one keeps its name, nothing was replaced.
  EXPECT_EQ(context.nameMap().currentName("y"), "y");
  // After the run the map no longer listens.
  model->graph().outputs()[0]->setName("late");
  EXPECT_TRUE(context.nameMap().changes().empty());
}

TEST(PassManager, ReportHasPassesOptionsStatisticsAndRemarks) {
  PassManager manager(parsePipeline("typed{count=3 ops=[A]},append-relu", registry()));
  ReportBuilder report;
  manager.addInstrumentation(report);
  auto model = chainModel();
  PassContext context;
  context.results()["topic"] = "value";
  manager.run(*model, context);
  Json json = Json::parse(report.report().dump(2));
  EXPECT_EQ(json["pipeline"].asString(), manager.pipeline().str());
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
  PassManager manager(parsePipeline("noop,append-relu", registry()));
  std::ostringstream printed, timed;
  IrPrinter printer(printed, {"append-relu"});
  PassTimer timer(timed);
  manager.addInstrumentation(printer);
  manager.addInstrumentation(timer);
  auto model = chainModel();
  PassContext context;
  manager.run(*model, context);
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
  try {
    manager.run(*model, context);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verification);
    EXPECT_NE(std::string(e.what()).find("the IR is not valid after pass 'misorder'"),
              std::string::npos)
        << e.what();
  }
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
  try {
    manager.run(*model, *std::make_unique<PassContext>());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("the input model is not valid"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(recorder.log.empty());
}

}  // namespace
}  // namespace qopt
