// canonicalize: rewrites a few spellings into the one later passes expect, and nothing that
// could change results:
//  - Clip with min/max attributes (the opset < 11 form) in a model importing opset >= 11 gets
//    them as scalar initializer inputs, the only form that opset defines.
//  - Constant nodes of the main graph (value, value_float(s), value_int(s)) become initializers
//    carrying the Constant's output name.
#include <utility>

#include <fmt/format.h>

#include "qopt/ir/ConstantNode.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class CanonicalizePass : public Pass {
 public:
  CanonicalizePass()
      : Pass("canonicalize",
             "Moves Clip bounds from attributes to inputs and lifts Constant nodes to "
             "initializers") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    result.statistics["clip-converted"] = 0;
    result.statistics["constants-lifted"] = 0;
    visit(model, model.graph(), result);
    result.changed = result.statistics.get("clip-converted") > 0 ||
                     result.statistics.get("constants-lifted") > 0;
    return result;
  }

 private:
  static bool clipAcceptsType(DataType type) {
    return type == DataType::Float || type == DataType::Float16 || type == DataType::Double ||
           type == DataType::BFloat16;
  }

  // One walk over every graph: large models are bound by memory traffic, not by the rewrites.
  void visit(Model& model, Graph& graph, PassResult& result) {
    for (Node* node : graph.nodes()) {
      for (Graph* body : node->subgraphs()) visit(model, *body, result);
      if (node->is("Clip") && *clip_) {
        convertClip(model, graph, node, result);
      } else if (node->is("Constant") && *constants_) {
        liftConstant(model, graph, node, result);
      }
    }
  }

  void convertClip(Model& model, Graph& graph, Node* node, PassResult& result) {
    // Read through const: the mutable lookup would mark the node as possibly holding graphs.
    const Attribute* min = std::as_const(*node).findAttr("min");
    const Attribute* max = std::as_const(*node).findAttr("max");
    if (!min && !max) return;
    std::optional<int64_t> opset = model.opsetVersion("");
    if (!opset || *opset < 11) {
      result.missed(node->describe(), "kept: opsets before 11 only have the attribute form");
      return;
    }
    if (node->numInputs() > 1) {
      result.missed(node->describe(), "kept: it has both bound attributes and bound inputs");
      return;
    }
    const Value* data = node->input(0);
    if (!data || !data->type().isTensor() || !clipAcceptsType(data->type().elemType)) {
      result.missed(node->describe(), "kept: the input's floating point type is unknown");
      return;
    }
    if ((min && min->kind != AttrKind::Float) || (max && max->kind != AttrKind::Float)) {
      result.missed(node->describe(), "kept: min/max attributes are not floats");
      return;
    }
    DataType type = data->type().elemType;
    std::string base = !node->name().empty()          ? node->name()
                       : !node->output(0)->isAbsent() ? node->output(0)->name()
                                                      : std::string("clip");
    auto bound = [&](const Attribute* attr, const char* suffix) -> Value* {
      if (!attr) return nullptr;
      double value = attr->f;
      auto tensor = std::make_shared<Tensor>(Tensor::fromDoubles(type, {}, {&value, 1}));
      tensor->setName(model.uniqueValueName(base + suffix));
      return graph.addInitializer(std::move(tensor));
    };
    Value* minValue = bound(min, "_min");
    Value* maxValue = bound(max, "_max");
    node->setInput(1, minValue);
    if (maxValue) node->setInput(2, maxValue);
    node->removeAttr("min");
    node->removeAttr("max");
    result.statistics.add("clip-converted");
  }

  void liftConstant(Model& model, Graph& graph, Node* node, PassResult& result) {
    if (&graph != &model.graph()) {
      result.missed(node->describe(), "kept: it is inside a subgraph body");
      return;
    }
    if (node->numOutputs() != 1) return;
    // Before IR version 4 every initializer must also be a graph input; lifting would change the
    // model's interface.
    if (model.irVersion && *model.irVersion < 4) {
      result.missed(node->describe(), "kept: IR version < 4 would need a new graph input");
      return;
    }
    Value* out = node->output(0);
    if (out->isGraphOutput()) {
      result.missed(node->describe(), "kept: its output is a graph output");
      return;
    }
    std::string why;
    std::optional<Tensor> tensor = constantNodeTensor(*node, &why);
    if (!tensor) {
      result.missed(node->describe(), "kept: " + why);
      return;
    }
    graph.replaceByInitializer(out, std::make_shared<Tensor>(std::move(*tensor)));
    graph.eraseNode(node);
    result.statistics.add("constants-lifted");
  }

  Option<bool> clip_{*this, "clip", true, "Move Clip min/max attributes to inputs (opset >= 11)"};
  Option<bool> constants_{*this, "constants", true,
                          "Lift main-graph Constant nodes to initializers"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("canonicalize", QOPT_VERSION_STRING, qopt::CanonicalizePass)
