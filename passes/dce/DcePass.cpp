// dce: removes nodes whose outputs nothing uses, and initializers nothing uses. Graph outputs
// and graph inputs are never removed; If/Loop/Scan bodies are cleaned too.
#include <fmt/format.h>

#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class DcePass : public Pass {
 public:
  DcePass() : Pass("dce", "Removes nodes whose outputs nothing uses, and unused initializers") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    result.statistics["nodes-removed"] = 0;
    result.statistics["initializers-removed"] = 0;
    sweep(model.graph(), result);
    result.changed = result.statistics.get("nodes-removed") > 0 ||
                     result.statistics.get("initializers-removed") > 0;
    return result;
  }

 private:
  static bool isDead(const Node* node) {
    // A node without outputs can only exist for an effect outside the graph: keep it.
    if (node->numOutputs() == 0) return false;
    for (const Value* out : node->outputs()) {
      if (out->hasUses() || out->isGraphOutput()) return false;
    }
    return true;
  }

  // Nodes are in topological order, so walking backwards visits every consumer before its
  // producers: one sweep removes whole dead chains. A live node's bodies are cleaned when it is
  // visited, before the producers of the outer values they use.
  void sweep(Graph& graph, PassResult& result) {
    for (Node* node = graph.lastNode(); node != nullptr;) {
      Node* previous = node->prev();
      if (isDead(node)) {
        graph.eraseNode(node);
        result.statistics.add("nodes-removed");
      } else {
        if (node->numOutputs() == 0) {
          result.missed(node->describe(), "kept: it has no outputs, so it may exist for an effect");
        }
        if (*subgraphs_) {
          for (Graph* body : node->subgraphs()) sweep(*body, result);
        }
      }
      node = previous;
    }
    if (!*initializers_) return;
    std::vector<Value*> unused;
    for (Value* init : graph.initializers()) {
      if (init->hasUses() || init->isGraphOutput()) continue;
      if (init->isGraphInput()) {
        result.missed(fmt::format("initializer '{}'", init->name()),
                      "kept: it is also a graph input, which callers may feed");
        continue;
      }
      unused.push_back(init);
    }
    for (Value* init : unused) graph.eraseInitializer(init);
    result.statistics.add("initializers-removed", static_cast<int64_t>(unused.size()));
  }

  Option<bool> subgraphs_{*this, "subgraphs", true, "Also clean If/Loop/Scan bodies"};
  Option<bool> initializers_{*this, "initializers", true, "Also remove initializers nothing uses"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("dce", QOPT_VERSION_STRING, qopt::DcePass)
