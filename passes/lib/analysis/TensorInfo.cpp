#include "qopt/analysis/TensorInfo.h"

#include <unordered_set>

#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {

namespace {

class ShapeRecorder : public interp::CaptureObserver {
 public:
  ShapeRecorder(const Graph& graph, TensorInfoMap& map) : map_(map) {
    add(graph);
    for (const Node* n : graph.allNodes()) {
      for (const Graph* body : n->subgraphs()) add(*body);
    }
  }
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void captured(const Value& value, const interp::Array& array) override {
    map_.record(&value, TensorInfo{array.dataType(), array.shape()});
  }

 private:
  void add(const Graph& graph) {
    for (const Value* v : graph.inputs()) wanted_.insert(v);
    for (const Value* v : graph.initializers()) wanted_.insert(v);
    for (const Node* n : graph.nodes()) {
      for (const Value* v : n->outputs()) {
        if (!v->isAbsent()) wanted_.insert(v);
      }
    }
  }

  TensorInfoMap& map_;
  std::unordered_set<const Value*> wanted_;
};

}  // namespace

TensorInfo TensorInfoMap::find(const Value* value) const {
  if (auto it = observed_.find(value); it != observed_.end()) return it->second;
  TensorInfo info;
  if (value == nullptr) return info;
  if (const TensorPtr& t = value->initializer()) {
    info.type = t->dataType();
    info.shape = t->dims();
    return info;
  }
  const ValueType& type = value->type();
  if (type.isTensor()) {
    info.type = type.elemType;
    info.shape = type.staticShape();
  }
  // Passes insert Casts without declaring their outputs' types; the Cast itself says the type.
  const Node* producer = value->producer();
  if (info.type == DataType::Undefined && producer != nullptr && producer->is("Cast")) {
    if (std::optional<DataType> to = dataTypeFromInt(producer->attrInt("to", 0))) info.type = *to;
  }
  return info;
}

TensorInfoMap observeTensorInfo(const Graph& graph, const Inputs& inputs, std::string* failure) {
  TensorInfoMap map;
  try {
    interp::Interpreter interpreter(graph);
    ShapeRecorder recorder(graph, map);
    interpreter.run(inputs, &recorder);
    map.setRanToEnd();
  } catch (const std::exception& e) {
    if (failure) *failure = e.what();
  }
  return map;
}

}  // namespace qopt::analysis
