// fuse-hardswish: recognises the two ways exporters spell HardSwish and replaces them with the
// HardSwish operator (ONNX opset 14 and later):
//   x * HardSigmoid(x)            with alpha = 1/6, beta = 0.5      (option hardsigmoid)
//   x * Clip(x + 3, 0, 6) / 6     Relu6 as Clip; "/ 6" as Div(., 6) or Mul(., 1/6), applied to
//                                 the product or to the Clip        (option relu6)
// Constants must be scalar initializers (run canonicalize first to lift Constant nodes). The
// intermediate values must have no other use and not be graph outputs.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace fuse_hardswish {
namespace {

using qopt::Node;
using qopt::Value;

class FuseHardSwishPass : public qopt::Pass {
 public:
  FuseHardSwishPass()
      : Pass("fuse-hardswish", "Replaces x*HardSigmoid(x) and x*Relu6(x+3)/6 with HardSwish") {}

  qopt::PassResult run(qopt::Model& model, qopt::PassContext&) override {
    qopt::PassResult result;
    result.statistics["fused"] = 0;
    std::optional<int64_t> opset = model.opsetVersion("");
    if (!opset || *opset < 14) {
      result.missed("model", "left alone: HardSwish needs ONNX opset 14 or later");
      return result;
    }
    qopt::Graph& graph = model.graph();
    for (Node* node = graph.firstNode(); node != nullptr;) {
      Node* next = node->next();
      Match match;
      if ((*hardSigmoid_ && matchHardSigmoid(node, match)) ||
          (*relu6_ && matchRelu6(node, match))) {
        fuse(graph, node, match, result);
        // The erased chain precedes the root, so `next` survives.
      }
      node = next;
    }
    result.changed = result.statistics.get("fused") > 0;
    return result;
  }

 private:
  struct Match {
    Value* x = nullptr;
    std::vector<Node*> chain;  // producers of the root's operands, erased after the root
  };

  bool near(double value, double expected) const {
    return std::fabs(value - expected) <= *tolerance_ * std::max(1.0, std::fabs(expected));
  }

  static std::optional<double> scalar(const Value* value) {
    if (value == nullptr || !value->isInitializer() || !value->initializer()) return std::nullopt;
    if (value->initializer()->numElements() != 1) return std::nullopt;
    return value->initializer()->doubleAt(0);
  }

  // The producer of `value` when it is `op` and `value` feeds nothing but the pattern.
  static Node* privateProducer(Value* value, const char* op) {
    if (value == nullptr || value->isGraphOutput() || value->uses().size() != 1) return nullptr;
    Node* producer = value->producer();
    return producer != nullptr && producer->is(op) ? producer : nullptr;
  }

  // Mul(x, HardSigmoid(x)) in either operand order.
  bool matchHardSigmoid(Node* mul, Match& match) const {
    if (!mul->is("Mul") || mul->numInputs() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      Value* x = mul->input(side);
      Node* sigmoid = privateProducer(mul->input(1 - side), "HardSigmoid");
      if (sigmoid == nullptr || sigmoid->input(0) != x) continue;
      if (!near(sigmoid->attrFloat("alpha", 0.2f), 1.0 / 6) ||
          !near(sigmoid->attrFloat("beta", 0.5f), 0.5)) {
        continue;
      }
      match = {x, {sigmoid}};
      return true;
    }
    return false;
  }

  // Clip(Add(x, 3), 0, 6) with min/max as inputs (opset 11+) or attributes (before).
  Node* matchClip(Value* value, Value*& x, std::vector<Node*>& chain) const {
    Node* clip = privateProducer(value, "Clip");
    if (clip == nullptr) return nullptr;
    std::optional<double> low = clip->numInputs() > 1
                                    ? scalar(clip->input(1))
                                    : std::optional<double>(clip->attrFloat("min", NAN));
    std::optional<double> high = clip->numInputs() > 2
                                     ? scalar(clip->input(2))
                                     : std::optional<double>(clip->attrFloat("max", NAN));
    if (!low || !high || !near(*low, 0) || !near(*high, 6)) return nullptr;
    Node* add = privateProducer(clip->input(0), "Add");
    if (add == nullptr) return nullptr;
    for (int side = 0; side < 2; ++side) {
      std::optional<double> three = scalar(add->input(1 - side));
      if (three && near(*three, 3) && !add->input(side)->isInitializer()) {
        x = add->input(side);
        chain.push_back(clip);
        chain.push_back(add);
        return clip;
      }
    }
    return nullptr;
  }

  // `value` / 6 as Div(value, 6) or Mul(value, 1/6) (either order): returns `value`.
  Value* divisionBySix(Node* node) const {
    if (node->is("Div") && node->numInputs() == 2) {
      std::optional<double> six = scalar(node->input(1));
      return six && near(*six, 6) ? node->input(0) : nullptr;
    }
    if (node->is("Mul") && node->numInputs() == 2) {
      for (int side = 0; side < 2; ++side) {
        std::optional<double> sixth = scalar(node->input(1 - side));
        if (sixth && near(*sixth, 1.0 / 6)) return node->input(side);
      }
    }
    return nullptr;
  }

  // Mul(x, Clip(x+3, 0, 6)) (either order) with `value` its output, private to the pattern.
  bool matchProduct(Node* product, Match& match) const {
    if (product == nullptr || !product->is("Mul") || product->numInputs() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      Value* x = nullptr;
      std::vector<Node*> chain;
      if (matchClip(product->input(1 - side), x, chain) && x == product->input(side)) {
        chain.insert(chain.begin(), product);
        match = {x, chain};
        return true;
      }
    }
    return false;
  }

  bool matchRelu6(Node* root, Match& match) const {
    // (x * relu6) / 6: the division is the root.
    if (Value* product = divisionBySix(root)) {
      if (matchProduct(privateProducer(product, "Mul"), match)) return true;
    }
    // x * (relu6 / 6): the Mul is the root, the division feeds it.
    if (!root->is("Mul") || root->numInputs() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      Value* x = root->input(side);
      Value* scaled = root->input(1 - side);
      if (scaled == nullptr || scaled->isGraphOutput() || scaled->uses().size() != 1) continue;
      Node* division = scaled->producer();
      if (division == nullptr) continue;
      Value* relu6 = divisionBySix(division);
      Value* clipInput = nullptr;
      std::vector<Node*> chain;
      if (relu6 != nullptr && matchClip(relu6, clipInput, chain) && clipInput == x) {
        chain.insert(chain.begin(), division);
        match = {x, chain};
        return true;
      }
    }
    return false;
  }

  void fuse(qopt::Graph& graph, Node* root, const Match& match, qopt::PassResult& result) {
    Node* hardSwish = graph.createNode("HardSwish", {match.x}, 1, root);
    Value* out = root->output(0);
    hardSwish->output(0)->setType(out->type());
    result.applied(root->describe(), "replaced with HardSwish(" + match.x->name() + ")");
    out->replaceAllUsesWith(hardSwish->output(0));
    graph.eraseNode(root);
    for (Node* node : match.chain) graph.eraseNode(node);
    result.statistics.add("fused");
  }

  qopt::Option<bool> hardSigmoid_{*this, "hardsigmoid", true, "Fuse x * HardSigmoid(x)"};
  qopt::Option<bool> relu6_{*this, "relu6", true, "Fuse x * Clip(x + 3, 0, 6) / 6"};
  qopt::Option<double> tolerance_{*this, "tolerance", 1e-5,
                                  "Relative tolerance on the constants 3, 6, 1/6 and 0.5"};
};

}  // namespace
}  // namespace fuse_hardswish

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "fuse-hardswish", "1.0",
          [](qopt::PassRegistry& registry) { registry.add<fuse_hardswish::FuseHardSwishPass>(); }};
}
