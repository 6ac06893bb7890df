#include "qopt/quant/GraphValues.h"

#include <memory>

namespace qopt::quant {

DataType floatTypeOf(const Value* value) {
  const ValueType& type = value->type();
  if (type.isTensor() &&
      (type.elemType == DataType::Float16 || type.elemType == DataType::BFloat16)) {
    return type.elemType;
  }
  return DataType::Float;
}

Value* addNamedInitializer(Graph& graph, const std::string& baseName, Tensor tensor) {
  tensor.setName(graph.model().uniqueValueName(baseName));
  auto shared = std::make_shared<Tensor>(std::move(tensor));
  Value* value = graph.addInitializer(shared);
  value->setType(ValueType::tensor(shared->dataType(), shared->dims()));
  return value;
}

Node* producerOfNumbers(const Value& value) {
  const Value* current = &value;
  for (int depth = 0; depth < 16 && current != nullptr; ++depth) {
    Node* producer = current->producer();
    if (producer == nullptr) return nullptr;
    bool moves = false;
    for (const char* op : {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
      moves = moves || producer->is(op);
    }
    if (!moves) return producer;
    current = producer->input(0);
  }
  return nullptr;
}

Value* preActivationOf(const Value& output) {
  Node* producer = producerOfNumbers(output);
  if (producer == nullptr || producer->numInputs() == 0) return nullptr;
  if (!producer->is("Softmax") && !producer->is("LogSoftmax") && !producer->is("Sigmoid")) {
    return nullptr;
  }
  return producer->input(0);
}

}  // namespace qopt::quant
