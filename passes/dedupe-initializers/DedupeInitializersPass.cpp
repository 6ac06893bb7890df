// dedupe-initializers: initializers with identical type, shape and bytes become one (the first
// in file order), within each graph. Initializers that are also graph inputs (callers may feed
// them) or graph outputs (their names are the interface) are left alone.
#include <unordered_map>

#include <fmt/format.h>

#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class DedupeInitializersPass : public Pass {
 public:
  DedupeInitializersPass()
      : Pass("dedupe-initializers",
             "Merges initializers with identical type, shape and contents into one") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    result.statistics["initializers-merged"] = 0;
    result.statistics["bytes-saved"] = 0;
    dedupe(model.graph(), result);
    if (model.numSubgraphs() > 0) {
      model.graph().walk([&](Node* node) {
        for (Graph* body : node->subgraphs()) dedupe(*body, result);
      });
    }
    result.changed = result.statistics.get("initializers-merged") > 0;
    return result;
  }

 private:
  void dedupe(Graph& graph, PassResult& result) {
    std::unordered_map<uint64_t, std::vector<Value*>> byHash;
    std::vector<std::pair<Value*, Value*>> merges;  // duplicate -> kept
    for (Value* init : graph.initializers()) {
      const TensorPtr& tensor = init->initializer();
      if (!tensor || init->isGraphInput() || init->isGraphOutput()) continue;
      if (tensor->numElements() < static_cast<uint64_t>(*minElements_)) continue;
      std::vector<Value*>& candidates = byHash[tensor->contentHash()];
      Value* same = nullptr;
      for (Value* candidate : candidates) {
        if (candidate->initializer()->sameContent(*tensor)) {
          same = candidate;
          break;
        }
      }
      if (same) {
        merges.emplace_back(init, same);
      } else {
        candidates.push_back(init);
      }
    }
    for (auto [duplicate, kept] : merges) {
      int64_t bytes = static_cast<int64_t>(duplicate->initializer()->rawBytes().size());
      result.applied(fmt::format("initializer '{}'", duplicate->name()),
                     fmt::format("merged into '{}'", kept->name()));
      duplicate->replaceAllUsesWith(kept);
      graph.eraseInitializer(duplicate);
      result.statistics.add("initializers-merged");
      result.statistics.add("bytes-saved", bytes);
    }
  }

  Option<int64_t> minElements_{*this, "min-elements", 1,
                               "Only merge initializers with at least this many elements"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("dedupe-initializers", QOPT_VERSION_STRING, qopt::DedupeInitializersPass)
