#include "qopt/pass/Pass.h"

#include "qopt/ir/Graph.h"
#include "qopt/pass/EnumNames.h"

namespace qopt {

int64_t& Statistics::operator[](std::string_view name) {
  for (auto& [key, value] : counters_) {
    if (key == name) return value;
  }
  counters_.emplace_back(std::string(name), 0);
  return counters_.back().second;
}

int64_t Statistics::get(std::string_view name) const {
  for (const auto& [key, value] : counters_) {
    if (key == name) return value;
  }
  return 0;
}

void Statistics::merge(const Statistics& other) {
  for (const auto& [key, value] : other.counters_) (*this)[key] += value;
}

std::string_view remarkKindName(Remark::Kind kind) {
  constexpr EnumName<Remark::Kind> kNames[] = {{Remark::Kind::Applied, "applied"},
                                               {Remark::Kind::Missed, "missed"},
                                               {Remark::Kind::Note, "note"}};
  return enumName(kNames, kind, "note");
}

namespace {

void mergeResult(PassResult& into, PassResult&& part) {
  into.changed = into.changed || part.changed;
  into.statistics.merge(part.statistics);
  for (Remark& remark : part.remarks) into.remarks.push_back(std::move(remark));
}

void runNested(GraphPass& pass, Graph& graph, PassContext& context, PassResult& result) {
  mergeResult(result, pass.runOnGraph(graph, context));
  for (Node* node : graph.nodes()) {
    for (Graph* body : node->subgraphs()) runNested(pass, *body, context, result);
  }
}

}  // namespace

PassResult GraphPass::run(Model& model, PassContext& context) {
  PassResult result = prepare(model, context);
  runNested(*this, model.graph(), context, result);
  return result;
}

std::string Pass::printPipelineItem() const {
  if (optionList().empty()) return name_;
  return name_ + "{" + printOptions() + "}";
}

}  // namespace qopt

namespace qopt {

std::string_view modelPropertyName(ModelProperty property) {
  switch (property) {
    case ModelProperty::Quantized:
      return "a quantized model (QuantizeLinear/DequantizeLinear or integer layers)";
  }
  return "?";
}

namespace {

bool isQuantizedOp(const Node& node) {
  const std::string& op = node.opType();
  return op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear" ||
         op.starts_with("QLinear") || op == "MatMulInteger" || op == "ConvInteger" ||
         op == "MatMulNBits";
}

}  // namespace

bool modelHas(const Model& model, ModelProperty property) {
  switch (property) {
    case ModelProperty::Quantized: {
      bool found = false;
      model.graph().walk([&](const Node* node) { found = found || isQuantizedOp(*node); });
      return found;
    }
  }
  return false;
}

}  // namespace qopt
