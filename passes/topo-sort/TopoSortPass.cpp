// topo-sort: puts nodes in topological order (stable: where the order is already valid it is
// kept), in the main graph and every subgraph. A cycle is an error naming a node on it.
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class TopoSortPass : public Pass {
 public:
  TopoSortPass()
      : Pass("topo-sort", "Orders nodes topologically, keeping the current order where valid") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    result.statistics["graphs-reordered"] = 0;
    sort(model.graph(), result);
    result.changed = result.statistics.get("graphs-reordered") > 0;
    return result;
  }

 private:
  static void sort(Graph& graph, PassResult& result) {
    for (Node* node : graph.nodes()) {
      for (Graph* body : node->subgraphs()) sort(*body, result);
    }
    // The sort is stable, so a sorted graph keeps its order: sorting only when needed tells
    // whether anything changed without comparing orders.
    if (graph.isTopologicallySorted()) return;
    graph.topologicalSort();
    result.statistics.add("graphs-reordered");
  }
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("topo-sort", QOPT_VERSION_STRING, qopt::TopoSortPass)
