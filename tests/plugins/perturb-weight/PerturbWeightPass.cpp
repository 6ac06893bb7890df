// perturb-weight: plants a deliberate error in one named node, so that tests can check that
// verify catches it and names that layer as the first to diverge: its weight scaled (a scale off
// by a factor), its weight's channels reversed (a layout read the wrong way: RGB as BGR), or the
// node bypassed (a lost clamp).
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
      PassResult result;
      result.changed = true;
      if (*mode_ == Mode::Bypass) {
        if (node->output(0)->isGraphOutput()) {
          throw Error(ErrorKind::Usage, model.sourcePath, node->describe(),
                      "computes a graph output: bypassing it would leave the output undefined");
        }
        // Its users read its first input instead.
        node->output(0)->replaceAllUsesWith(node->input(0));
        result.applied(node->describe(), "bypassed");
        model.graph().eraseNode(node);
        return result;
      }
      Value* weight = node->input(static_cast<size_t>(*input_));
      if (weight == nullptr || !weight->isInitializer()) {
        throw Error(ErrorKind::Usage, model.sourcePath, node->describe(),
                    fmt::format("input {} is not an initializer", *input_));
      }
      const Tensor& old = *weight->initializer();
      std::vector<double> values = old.toDoubles();
      if (*mode_ == Mode::Scale) {
        for (double& v : values) v *= *factor_;
      } else {
        // Reverses axis 1 (a Conv weight's input channels).
        if (old.dims().size() < 2) {
          throw Error(ErrorKind::Usage, model.sourcePath, node->describe(),
                      "reverse-channels needs a weight of rank 2 or more");
        }
        const int64_t channels = old.dims()[1];
        int64_t inner = 1;
        for (size_t d = 2; d < old.dims().size(); ++d) inner *= old.dims()[d];
        std::vector<double> reversed(values.size());
        for (size_t i = 0; i < values.size(); ++i) {
          const auto k = static_cast<int64_t>(i);
          const int64_t outer = k / (channels * inner);
          const int64_t c = (k / inner) % channels;
          const int64_t at = (outer * channels + (channels - 1 - c)) * inner + k % inner;
          reversed[static_cast<size_t>(at)] = values[i];
        }
        values = std::move(reversed);
      }
      auto perturbed =
          std::make_shared<Tensor>(Tensor::fromDoubles(old.dataType(), old.dims(), values));
      perturbed->setName(old.name());
      weight->setInitializer(std::move(perturbed));
      result.applied(node->describe(), *mode_ == Mode::Scale
                                           ? fmt::format("weight scaled by {}", *factor_)
                                           : std::string("weight channels reversed"));
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
  enum class Mode { Scale, ReverseChannels, Bypass };
  EnumOption<Mode> mode_{*this,
                         "mode",
                         Mode::Scale,
                         "Scale the weight, reverse its channels (axis 1), or bypass the node",
                         {{Mode::Scale, "scale"},
                          {Mode::ReverseChannels, "reverse-channels"},
                          {Mode::Bypass, "bypass"}}};
};

}  // namespace

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "perturb-weight", "1.0",
          [](qopt::PassRegistry& registry) { registry.add<PerturbWeightPass>(); }};
}
