// Runs a pipeline over a model. Instrumentation (timing, printing, verification, reports) is a
// set of observers of the pass manager; passes contain none of it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "qopt/pass/Pass.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/Pipeline.h"

namespace qopt {

class Model;

/// One pass execution.
struct PassRun {
  const Pass& pass;
  const PassResult& result;
  double seconds;
  /// 1-based round of the innermost enclosing fixpoint; 0 outside any fixpoint.
  int iteration;
};

/// One fixpoint group execution (reported after the passes it ran).
struct FixpointRun {
  const FixpointGroup& group;
  int iterations;
  bool converged;  // the last round changed nothing
  bool changed;    // some round changed the model
  double seconds;
  const Statistics& statistics;  // "iterations", "cap-hit"
};

class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  virtual void pipelineStarted(const Pipeline& /*pipeline*/, const Model& /*model*/,
                               PassContext& /*context*/) {}
  virtual void passStarted(const Pass& /*pass*/, const Model& /*model*/, PassContext& /*context*/) {
  }
  /// May throw qopt::Error to stop the pipeline (the verifier does).
  virtual void passFinished(const PassRun& /*run*/, const Model& /*model*/,
                            PassContext& /*context*/) {}
  virtual void fixpointFinished(const FixpointRun& /*run*/, const Model& /*model*/,
                                PassContext& /*context*/) {}
  virtual void pipelineFinished(const Model& /*model*/, PassContext& /*context*/) {}
};

class PassManager {
 public:
  explicit PassManager(Pipeline pipeline) : pipeline_(std::move(pipeline)) {}

  /// `instrumentation` is borrowed and must outlive run(); called in the order added.
  void addInstrumentation(PassInstrumentation& instrumentation) {
    instrumentations_.push_back(&instrumentation);
  }
  const Pipeline& pipeline() const { return pipeline_; }

  /// Runs every pass in order. Keeps context.nameMap() up to date (observing the model), and
  /// snapshots the input into context when a pass needs it. Returns whether the model changed.
  /// An error thrown by a pass is rethrown with the pass named in its cause.
  bool run(Model& model, PassContext& context);

  /// The pass whose run() threw the error run() rethrew; null when run() did not throw or the
  /// error came from elsewhere (an instrumentation, the input snapshot).
  const Pass* failedPass() const { return failedPass_; }

 private:
  bool runItems(const std::vector<PipelineItem>& items, Model& model, PassContext& context,
                int iteration);
  bool runPass(Pass& pass, Model& model, PassContext& context, int iteration);
  void warnBodiesLeft(const Pass& pass, const Model& model, PassContext& context);
  bool runFixpoint(const FixpointGroup& group, Model& model, PassContext& context);

  Pipeline pipeline_;
  std::vector<PassInstrumentation*> instrumentations_;
  const Pass* failedPass_ = nullptr;
  std::set<std::string> bodiesWarned_;  // passes that warned they left bodies as they are
};

}  // namespace qopt
