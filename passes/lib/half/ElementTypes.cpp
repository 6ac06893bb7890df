#include "qopt/half/ElementTypes.h"

#include <string_view>

namespace qopt::tofp16 {
namespace {

bool isAnyOf(std::string_view op, std::initializer_list<std::string_view> ops) {
  for (std::string_view o : ops) {
    if (o == op) return true;
  }
  return false;
}

DataType fromAttr(const Node& node, std::string_view name, DataType fallback) {
  if (!node.hasAttr(name)) return fallback;
  return dataTypeFromInt(node.attrInt(name, 0)).value_or(DataType::Undefined);
}

}  // namespace

ElementTypes::ElementTypes(const Model& model) {
  deriveGraph(model.graph());
}

DataType ElementTypes::of(const Value* value) const {
  if (value == nullptr) return DataType::Undefined;
  if (value->type().isTensor() && value->type().elemType != DataType::Undefined) {
    return value->type().elemType;
  }
  if (value->isInitializer() && value->initializer()) return value->initializer()->dataType();
  auto it = types_.find(value);
  return it == types_.end() ? DataType::Undefined : it->second;
}

void ElementTypes::deriveGraph(const Graph& graph) {
  for (Node* node : graph.nodes()) {
    // Bodies first: If, Loop and Scan return what their bodies return.
    for (Graph* body : node->subgraphs()) deriveGraph(*body);
    deriveNode(*node);
  }
}

void ElementTypes::deriveNode(const Node& node) {
  const std::string& op = node.opType();
  auto setOut = [&](size_t i, DataType t) {
    if (Value* out = node.output(i); out != nullptr && !out->isAbsent()) {
      if (of(out) == DataType::Undefined) types_[out] = t;
    }
  };
  const DataType first = of(node.input(0));
  if (!node.domain().empty()) {
    // Unknown semantics: only the common case of QuantizeLinear/DequantizeLinear is known.
    if (op == "DequantizeLinear") setOut(0, of(node.input(1)));
    return;
  }
  if (isAnyOf(op, {"Shape", "Size", "NonZero", "ArgMax", "ArgMin", "NonMaxSuppression"})) {
    setOut(0, DataType::Int64);
  } else if (isAnyOf(op, {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                          "Xor", "Not", "IsNaN", "IsInf"})) {
    setOut(0, DataType::Bool);
  } else if (op == "Cast") {
    setOut(0, fromAttr(node, "to", DataType::Undefined));
  } else if (op == "CastLike") {
    setOut(0, of(node.input(1)));
  } else if (op == "Constant") {
    const Attribute* value = node.findAttr("value");
    if (value != nullptr && value->t) {
      setOut(0, value->t->dataType());
    } else if (node.hasAttr("value_float") || node.hasAttr("value_floats")) {
      setOut(0, DataType::Float);
    } else if (node.hasAttr("value_int") || node.hasAttr("value_ints")) {
      setOut(0, DataType::Int64);
    }
  } else if (op == "ConstantOfShape") {
    const Attribute* value = node.findAttr("value");
    setOut(0, value != nullptr && value->t ? value->t->dataType() : DataType::Float);
  } else if (isAnyOf(op, {"RandomNormal", "RandomUniform"})) {
    setOut(0, fromAttr(node, "dtype", DataType::Float));
  } else if (isAnyOf(op, {"RandomNormalLike", "RandomUniformLike", "EyeLike"})) {
    setOut(0, fromAttr(node, "dtype", first));
  } else if (op == "QuantizeLinear") {
    DataType t = node.input(2) != nullptr ? of(node.input(2)) : DataType::UInt8;
    setOut(0, fromAttr(node, "output_dtype", t));
  } else if (op == "DequantizeLinear") {
    setOut(0, of(node.input(1)));
  } else if (op == "DynamicQuantizeLinear") {
    setOut(0, DataType::UInt8);
    setOut(1, DataType::Float);
    setOut(2, DataType::UInt8);
  } else if (op == "Where") {
    setOut(0, of(node.input(1)));
  } else if (op == "OneHot") {
    setOut(0, of(node.input(2)));
  } else if (op == "If") {
    const std::vector<Graph*> bodies = node.subgraphs();
    if (!bodies.empty()) {
      for (size_t i = 0; i < node.numOutputs() && i < bodies[0]->outputs().size(); ++i) {
        setOut(i, of(bodies[0]->outputs()[i]));
      }
    }
  } else if (op == "Loop" || op == "Scan") {
    // Outputs follow the body's outputs after its condition (Loop) output.
    const std::vector<Graph*> bodies = node.subgraphs();
    const size_t skip = op == "Loop" ? 1 : 0;
    if (!bodies.empty()) {
      for (size_t i = 0; i < node.numOutputs() && i + skip < bodies[0]->outputs().size(); ++i) {
        setOut(i, of(bodies[0]->outputs()[i + skip]));
      }
    }
  } else if (op == "Dropout") {
    setOut(0, first);
    setOut(1, DataType::Bool);
  } else if (isAnyOf(op, {"TopK", "MaxPool", "Unique"})) {
    setOut(0, first);
    for (size_t i = 1; i < node.numOutputs(); ++i) setOut(i, DataType::Int64);
  } else {
    // The common case: outputs of the first input's type (Conv, Add, Relu, Reshape, Concat...).
    for (size_t i = 0; i < node.numOutputs(); ++i) setOut(i, first);
  }
}

}  // namespace qopt::tofp16
