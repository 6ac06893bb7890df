// eliminate-identity: removes Identity nodes, and Dropout nodes that run in inference mode and
// whose mask nothing uses. Graph outputs keep their names: an Identity that is the only thing
// giving an output its own name (its input is a graph input, an initializer, another output or
// a value of an enclosing graph) stays.
#include <fmt/format.h>

#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class EliminateIdentityPass : public Pass {
 public:
  EliminateIdentityPass()
      : Pass("eliminate-identity",
             "Removes Identity nodes and inference-mode Dropout nodes whose mask is unused") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    result.statistics["identity-removed"] = 0;
    result.statistics["dropout-removed"] = 0;
    std::optional<int64_t> opset = model.opsetVersion("");
    simplify(model.graph(), opset, result);
    result.changed = result.statistics.get("identity-removed") > 0 ||
                     result.statistics.get("dropout-removed") > 0;
    return result;
  }

 private:
  // Why `node` cannot forward its input to the users of its first output, or "" when it can.
  static std::string whyNotForwardable(const Node* node) {
    const Value* in = node->input(0);
    const Value* out = node->output(0);
    if (!in) return "kept: it has no input";
    if (!out->isGraphOutput()) return {};
    if (in->graph() != out->graph()) {
      return "kept: it gives a graph output a value of an enclosing graph";
    }
    if (in->isGraphInput() || in->isInitializer() || in->isGraphOutput()) {
      return fmt::format("kept: graph output '{}' would lose its name", out->name());
    }
    return {};
  }

  // Dropout is the identity on its data when it does not train: opset < 7 says so with
  // is_test=1; opsets 7 to 11 have no training behaviour at inference; from opset 12 the
  // optional training_mode input must be absent or a constant false.
  static std::string whyDropoutNotInference(const Node* node, std::optional<int64_t> opset) {
    if (!opset) return "kept: the model imports no default opset";
    if (*opset < 7) {
      return node->attrInt("is_test", 0) == 1 ? std::string()
                                              : "kept: is_test is not 1 (training mode)";
    }
    if (*opset < 12) return {};
    const Value* mode = node->input(2);
    if (!mode) return {};
    if (!mode->isInitializer() || mode->isGraphInput() || !mode->initializer()) {
      return "kept: training_mode is not a constant";
    }
    const Tensor& t = *mode->initializer();
    if (t.dataType() != DataType::Bool || t.numElements() != 1) {
      return "kept: training_mode is not a boolean scalar";
    }
    return t.doubleAt(0) == 0 ? std::string() : "kept: training_mode is true";
  }

  static std::string whyMaskNeeded(const Node* node) {
    const Value* mask = node->output(1);
    if (!mask || mask->isAbsent()) return {};
    if (mask->hasUses() || mask->isGraphOutput()) return "kept: its mask output is used";
    return {};
  }

  void simplify(Graph& graph, std::optional<int64_t> opset, PassResult& result) {
    for (Node* node : graph.nodes()) {
      for (Graph* body : node->subgraphs()) simplify(*body, opset, result);
      std::string counter;
      std::string why;
      if (node->is("Identity")) {
        counter = "identity-removed";
        why = whyNotForwardable(node);
      } else if (node->is("Dropout") && *dropout_) {
        counter = "dropout-removed";
        why = whyDropoutNotInference(node, opset);
        if (why.empty()) why = whyMaskNeeded(node);
        if (why.empty()) why = whyNotForwardable(node);
      } else {
        continue;
      }
      if (!why.empty()) {
        result.missed(node->describe(), why);
        continue;
      }
      node->output(0)->replaceAllUsesWith(node->input(0));
      graph.eraseNode(node);
      result.statistics.add(counter);
    }
  }

  Option<bool> dropout_{*this, "dropout", true,
                        "Also remove Dropout in inference mode when its mask is unused"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("eliminate-identity", QOPT_VERSION_STRING, qopt::EliminateIdentityPass)
