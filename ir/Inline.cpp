#include "qopt/ir/Inline.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "qopt/ir/Error.h"

namespace qopt {

std::vector<Node*> inlineBody(Node& node, const Graph& body) {
  Graph& graph = *node.graph();
  Model& model = graph.model();
  if (!body.inputs().empty()) {
    throw Error(ErrorKind::Internal, model.sourcePath, node.describe(),
                fmt::format("cannot inline body '{}': it takes {} inputs", body.name,
                            body.inputs().size()));
  }
  if (body.outputs().size() != node.numOutputs()) {
    throw Error(ErrorKind::Internal, model.sourcePath, node.describe(),
                fmt::format("cannot inline body '{}': {} outputs for the node's {}", body.name,
                            body.outputs().size(), node.numOutputs()));
  }
  // Value copies take fresh names while the body still holds the originals; they take the
  // originals back once the node and its bodies are gone.
  std::vector<std::tuple<Value*, std::string, std::string>> valueNames;  // copy, fresh, original
  ValueMap map;
  for (Value* init : body.initializers()) {
    auto tensor = std::make_shared<Tensor>(*init->initializer());
    tensor->setName(model.uniqueValueName(init->name()));
    Value* copy = graph.addInitializer(std::move(tensor));
    copy->setType(init->type());
    valueNames.emplace_back(copy, copy->name(), init->name());
    map[init] = copy;
  }
  std::vector<Node*> added;
  for (const Node* n : body.nodes()) {
    Node* c = graph.createEmptyNode(n->opType(), n->domain(), &node);
    c->setName(n->name());  // the body's node goes with `node`: its name moves to the copy
    for (Value* in : n->inputs()) {
      if (in == nullptr) {
        c->addInput(nullptr);
        continue;
      }
      auto it = map.find(in);
      c->addInput(it != map.end() ? it->second : in);  // else a value of an enclosing graph
    }
    for (const Value* out : n->outputs()) {
      if (out->isAbsent()) {
        c->addOutput({}, /*absent=*/true);
        continue;
      }
      Value* o = c->addOutput(model.uniqueValueName(out->name()));
      o->setType(out->type());
      valueNames.emplace_back(o, o->name(), out->name());
      map[out] = o;
    }
    for (const Attribute& a : n->attributes()) c->addAttr(a.clone(c, map));
    added.push_back(c);
  }
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    Value* result = node.output(i);
    if (result->isAbsent()) continue;
    const Value* bodyOut = body.outputs()[i];
    auto it = map.find(bodyOut);
    Value* inner = it != map.end() ? it->second : const_cast<Value*>(bodyOut);
    const bool producedHere = inner->producer() != nullptr && inner->graph() == &graph;
    if (!producedHere || inner->isGraphOutput()) {
      Node* identity = graph.createNode("Identity", {inner}, 1, &node);
      identity->output(0)->setType(result->type());
      added.push_back(identity);
      inner = identity->output(0);
    }
    result->replaceAllUsesWith(inner);
  }
  graph.eraseNode(&node);
  // A copy that took the name of an output of `node` (a graph output keeps its name) keeps it.
  for (auto& [value, fresh, name] : valueNames) {
    if (value->name() == fresh && fresh != name && !model.isNameUsed(name)) {
      value->setName(std::move(name));
    }
  }
  return added;
}

}  // namespace qopt
