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

}  // namespace qopt::quant
