#include "qopt/pass/PassManager.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Cancellation.h"

namespace qopt {

namespace {

// The flag of the innermost CancellationScope on this thread (Cancellation.h), which the pass
// manager and the sample loops poll.
thread_local const std::atomic<bool>* cancellationFlag = nullptr;

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

Error requirementNotMet(const Model& model, const Pass& pass, const Requirement& r,
                        std::string_view why) {
  return Error(ErrorKind::Usage, model.sourcePath, fmt::format("pass '{}'", pass.name()),
               fmt::format("needs {}, and {}: {}", modelPropertyName(r.property), why, r.remedy));
}

// Throws for the first pass of `items` (fixpoint bodies in order) needing a property that neither
// the input model nor an earlier pass gives. `provided` collects what the passes before give;
// `inputHas` asks the input model (once per property).
void checkRequirements(const std::vector<PipelineItem>& items, const Model& model,
                       std::vector<ModelProperty>& provided,
                       const std::function<bool(ModelProperty)>& inputHas) {
  auto given = [&](ModelProperty p) {
    return std::find(provided.begin(), provided.end(), p) != provided.end();
  };
  for (const PipelineItem& item : items) {
    if (item.fixpoint) {
      checkRequirements(item.fixpoint->body.items(), model, provided, inputHas);
      continue;
    }
    if (!item.pass) continue;
    for (const Requirement& r : item.pass->requirements()) {
      if (!given(r.property) && !inputHas(r.property)) {
        throw requirementNotMet(
            model, *item.pass, r,
            "neither the input model nor a pass before it in the pipeline gives one");
      }
    }
    for (ModelProperty p : item.pass->provides()) {
      if (!given(p)) provided.push_back(p);
    }
  }
}

}  // namespace

CancellationScope::CancellationScope(const std::atomic<bool>& flag) : previous_(cancellationFlag) {
  cancellationFlag = &flag;
}

CancellationScope::~CancellationScope() {
  cancellationFlag = previous_;
}

void pollCancellation() {
  if (cancellationFlag != nullptr && cancellationFlag->load(std::memory_order_relaxed)) {
    throw Error("the run was interrupted", ErrorKind::Internal);
  }
}

bool PassManager::run(Model& model, PassContext& context) {
  std::map<ModelProperty, bool> inputProperties;
  auto inputHas = [&](ModelProperty p) {
    auto [it, added] = inputProperties.try_emplace(p, false);
    if (added) it->second = modelHas(model, p);
    return it->second;
  };
  std::vector<ModelProperty> provided;
  checkRequirements(pipeline_.items(), model, provided, inputHas);
  if (pipeline_.needsOriginalModel() && !context.originalModel()) {
    context.setOriginalModel(model.clone());
  }
  ObserverScope scope(model, context.nameMap());
  bodiesWarned_.clear();
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

void PassManager::warnBodiesLeft(const Pass& pass, const Model& model, PassContext& context) {
  if (!bodiesWarned_.insert(pass.name()).second) return;  // once per pass and run
  std::vector<std::string> holders;
  size_t inside = 0;
  for (const Node* node : model.graph().nodes()) {
    const std::vector<Graph*> bodies = node->subgraphs();
    if (bodies.empty()) continue;
    holders.push_back(node->describe());
    for (const Graph* body : bodies) inside += body->allNodes().size();
  }
  const size_t shown = std::min<size_t>(holders.size(), 3);
  context.diagnostics().warning(fmt::format(
      "{}: works on the main graph only: the {} nodes inside the bodies of {}{} are left as "
      "they are",
      pass.name(), inside, fmt::join(holders.begin(), holders.begin() + shown, ", "),
      holders.size() > shown ? fmt::format(" and {} more", holders.size() - shown) : ""));
}

bool PassManager::runPass(Pass& pass, Model& model, PassContext& context, int iteration) {
  pollCancellation();
  // A pass that provides a property may still give none (every layer excluded): checked again.
  for (const Requirement& r : pass.requirements()) {
    if (!modelHas(model, r.property)) {
      failedPass_ = &pass;
      throw requirementNotMet(model, pass, r, "the model it is given has none");
    }
  }
  if (!pass.entersBodies() && model.numSubgraphs() > 0) warnBodiesLeft(pass, model, context);
  for (PassInstrumentation* i : instrumentations_) i->passStarted(pass, model, context);
  auto start = std::chrono::steady_clock::now();
  PassResult result;
  try {
    result = pass.run(model, context);
  } catch (const Error& e) {
    failedPass_ = &pass;
    // An error raised where the file was not known is about the model the pass was given.
    throw Error(e.kind(), e.where().empty() ? model.sourcePath : e.where(), e.subject(),
                fmt::format("{} (in pass '{}')", e.cause(), pass.name()));
  } catch (const std::exception& e) {
    failedPass_ = &pass;
    throw Error(ErrorKind::Internal, model.sourcePath, fmt::format("pass '{}'", pass.name()),
                fmt::format("unexpected exception: {}", e.what()));
  }
  if (result.changed) context.invalidateModelAnalyses(pass.preservedAnalyses());
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
