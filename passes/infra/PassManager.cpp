#include "qopt/pass/PassManager.h"

#include <chrono>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"

namespace qopt {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Keeps the name map listening to the model exactly while the pipeline runs.
class ObserverScope {
 public:
  ObserverScope(Model& model, ModelObserver& observer) : model_(model), observer_(observer) {
    model_.addObserver(&observer_);
  }
  ~ObserverScope() { model_.removeObserver(&observer_); }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  Model& model_;
  ModelObserver& observer_;
};

}  // namespace

bool PassManager::run(Model& model, PassContext& context) {
  if (pipeline_.needsOriginalModel() && !context.originalModel()) {
    context.setOriginalModel(model.clone());
  }
  ObserverScope scope(model, context.nameMap());
  for (PassInstrumentation* i : instrumentations_) i->pipelineStarted(pipeline_, model, context);
  bool changed = runItems(pipeline_.items(), model, context, 0);
  for (PassInstrumentation* i : instrumentations_) i->pipelineFinished(model, context);
  return changed;
}

bool PassManager::runItems(const std::vector<PipelineItem>& items, Model& model,
                           PassContext& context, int iteration) {
  bool changed = false;
  for (const PipelineItem& item : items) {
    if (item.pass) {
      changed = runPass(*item.pass, model, context, iteration) || changed;
    } else if (item.fixpoint) {
      changed = runFixpoint(*item.fixpoint, model, context) || changed;
    }
  }
  return changed;
}

bool PassManager::runPass(Pass& pass, Model& model, PassContext& context, int iteration) {
  for (PassInstrumentation* i : instrumentations_) i->passStarted(pass, model, context);
  auto start = std::chrono::steady_clock::now();
  PassResult result;
  try {
    result = pass.run(model, context);
  } catch (const Error& e) {
    failedPass_ = &pass;
    throw Error(e.kind(), e.where(), e.subject(),
                fmt::format("{} (in pass '{}')", e.cause(), pass.name()));
  } catch (const std::exception& e) {
    failedPass_ = &pass;
    throw Error(ErrorKind::Internal, model.sourcePath, fmt::format("pass '{}'", pass.name()),
                fmt::format("unexpected exception: {}", e.what()));
  }
  PassRun run{pass, result, secondsSince(start), iteration};
  for (PassInstrumentation* i : instrumentations_) i->passFinished(run, model, context);
  return result.changed;
}

bool PassManager::runFixpoint(const FixpointGroup& group, Model& model, PassContext& context) {
  auto start = std::chrono::steady_clock::now();
  const int64_t cap = *group.maxIterations;
  int iterations = 0;
  bool changed = false;
  bool converged = false;
  while (iterations < cap) {
    ++iterations;
    if (!runItems(group.body.items(), model, context, iterations)) {
      converged = true;
      break;
    }
    changed = true;
  }
  Statistics statistics;
  statistics["iterations"] = iterations;
  statistics["cap-hit"] = converged ? 0 : 1;
  if (!converged) {
    context.diagnostics().warning(
        fmt::format("{} reached max-iterations={} and the last round still changed the model",
                    group.str(), cap));
  }
  FixpointRun run{group, iterations, converged, changed, secondsSince(start), statistics};
  for (PassInstrumentation* i : instrumentations_) i->fixpointFinished(run, model, context);
  return changed;
}

}  // namespace qopt
