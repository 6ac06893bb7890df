// Running pipelines of the built-in passes as the driver runs them: the pass modules loaded from
// the build's pass folder, the pass manager (which keeps the name map), the IR checked after.
// Shared by the pass tests that build their models in memory.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "qopt/ir/Graph.h"
#include "qopt/ir/Verifier.h"
#include "qopt/pass/PassManager.h"
#include "qopt/pass/PluginLoader.h"

namespace qopt::testing {

inline const PassRegistry& builtinPasses() {
  static const PassRegistry registry = [] {
    PassRegistry r;
    PluginLoader loader;
    loader.loadDirectory(builtinPassDirectory(), r);
    return r;
  }();
  return registry;
}

struct PassOutcome {
  PassResult result;  // of the last pass
  std::unique_ptr<PassContext> context = std::make_unique<PassContext>();
};

class LastResult : public PassInstrumentation {
 public:
  void passFinished(const PassRun& run, const Model&, PassContext&) override { last = run.result; }
  PassResult last;
};

/// Runs `pipeline` of `registry`'s passes with `calibData` as --calib-data (empty: none) and
/// checks the IR after.
inline PassOutcome runPipeline(Model& model, std::string_view pipeline,
                               const std::string& calibData = {},
                               const PassRegistry& registry = builtinPasses()) {
  PassManager manager(parsePipeline(pipeline, registry));
  LastResult keeper;
  manager.addInstrumentation(keeper);
  PassOutcome outcome;
  outcome.context->data.calibData = calibData;
  manager.run(model, *outcome.context);
  outcome.result = keeper.last;
  std::vector<VerifyIssue> issues = verifyModel(model);
  EXPECT_TRUE(issues.empty()) << "IR invalid after " << pipeline << ": "
                              << (issues.empty() ? ""
                                                 : issues[0].subject + ": " + issues[0].message);
  return outcome;
}

/// An empty model of IR version 8 importing the default domain at `opset`.
inline std::unique_ptr<Model> newModel(int64_t opset = 17) {
  auto model = std::make_unique<Model>();
  model->irVersion = 8;
  model->setOpsetVersion("", opset);
  return model;
}

}  // namespace qopt::testing
