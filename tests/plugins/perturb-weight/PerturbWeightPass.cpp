// perturb-weight: scales the weight of one named node (a deliberately planted error), so that
// tests can check that verify catches it and names that layer as the first to diverge.
#include <fmt/format.h>

#include <memory>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassPlugin.h"

namespace {

using namespace qopt;

class PerturbWeightPass : public Pass {
 public:
  PerturbWeightPass() : Pass("perturb-weight", "Scales one node's weight (tests of verify)") {}

  PassResult run(Model& model, PassContext&) override {
    for (Node* node : model.graph().nodes()) {
      // Nodes of ONNX text models have no names: their first output names them.
      bool named = node->name() == *node_ || (node->name().empty() && node->numOutputs() > 0 &&
                                              node->output(0)->name() == *node_);
      if (!named) continue;
      Value* weight = node->input(static_cast<size_t>(*input_));
      if (weight == nullptr || !weight->isInitializer()) {
        throw Error(ErrorKind::Usage, model.sourcePath, node->describe(),
                    fmt::format("input {} is not an initializer", *input_));
      }
      const Tensor& old = *weight->initializer();
      std::vector<double> values = old.toDoubles();
      for (double& v : values) v *= *factor_;
      auto perturbed =
          std::make_shared<Tensor>(Tensor::fromDoubles(old.dataType(), old.dims(), values));
      perturbed->setName(old.name());
      weight->setInitializer(std::move(perturbed));
      PassResult result;
      result.changed = true;
      result.applied(node->describe(), fmt::format("weight scaled by {}", *factor_));
      return result;
    }
    throw Error(ErrorKind::Usage, model.sourcePath, {}, fmt::format("no node named '{}'", *node_));
  }

 private:
  Option<std::string> node_{
      *this, "node", "",
      "The node (or, for unnamed nodes, its first output) whose weight is scaled"};
  Option<int64_t> input_{*this, "input", 1, "Which input holds the weight"};
  Option<double> factor_{*this, "factor", 3.0, "The factor"};
};

}  // namespace

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "perturb-weight", "1.0",
          [](qopt::PassRegistry& registry) { registry.add<PerturbWeightPass>(); }};
}
