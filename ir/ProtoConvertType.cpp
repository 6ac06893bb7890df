// TypeProto <-> ValueType. Tensor types become fields passes can read; whatever those fields
// cannot say exactly (sequence/map/optional types, explicit empty fields, unknown fields) keeps
// the whole TypeProto in ValueType::opaque, which export writes back while the fields agree.
#include <fmt/format.h>

#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace {

bool isPlainShape(const onnx::TensorShapeProto& shape) {
  if (!shape.unknown_fields().empty()) return false;
  for (const auto& dim : shape.dim()) {
    if (!dim.unknown_fields().empty()) return false;
    if (dim.value_case() == onnx::TensorShapeProto_Dimension::kDimParam &&
        dim.dim_param().empty()) {
      return false;
    }
    if (dim.has_denotation() && dim.denotation().empty()) return false;
  }
  return true;
}

template <class TensorTypeProto>
bool isPlainTensorType(const TensorTypeProto& tensor) {
  if (!tensor.unknown_fields().empty()) return false;
  // Export writes elem_type only when it is defined, so an explicit 0 is not plain.
  if (tensor.has_elem_type() && tensor.elem_type() == 0) return false;
  return !tensor.has_shape() || isPlainShape(tensor.shape());
}

// Fills kind, elemType, shape and denotation. Returns the element type number when it is not one
// qopt knows (the caller decides whether that is an error).
template <class TensorTypeProto>
std::optional<int32_t> fillTensorFields(const TensorTypeProto& tensor, ValueType& type) {
  std::optional<int32_t> unknownElemType;
  if (tensor.has_elem_type()) {
    if (auto elem = dataTypeFromInt(tensor.elem_type())) {
      type.elemType = *elem;
    } else {
      unknownElemType = tensor.elem_type();
    }
  }
  if (tensor.has_shape()) {
    std::vector<Dim>& dims = type.shape.emplace();
    dims.reserve(static_cast<size_t>(tensor.shape().dim_size()));
    for (const auto& protoDim : tensor.shape().dim()) {
      Dim dim;
      if (protoDim.has_dim_value()) {
        dim.value = protoDim.dim_value();
      } else if (protoDim.has_dim_param()) {
        dim.param = protoDim.dim_param();
      }
      dim.denotation = protoDim.denotation();
      dims.push_back(std::move(dim));
    }
  }
  return unknownElemType;
}

std::optional<int32_t> fillFields(const onnx::TypeProto& proto, ValueType& type) {
  std::optional<int32_t> unknownElemType;
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType:
      type.kind = ValueType::Kind::Tensor;
      unknownElemType = fillTensorFields(proto.tensor_type(), type);
      break;
    case onnx::TypeProto::kSparseTensorType:
      type.kind = ValueType::Kind::SparseTensor;
      unknownElemType = fillTensorFields(proto.sparse_tensor_type(), type);
      break;
    default:
      type.kind = ValueType::Kind::Other;
      break;
  }
  type.denotation = proto.denotation();
  return unknownElemType;
}

bool isPlain(const onnx::TypeProto& proto) {
  if (!proto.unknown_fields().empty()) return false;
  if (proto.has_denotation() && proto.denotation().empty()) return false;
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType:
      return isPlainTensorType(proto.tensor_type());
    case onnx::TypeProto::kSparseTensorType:
      return isPlainTensorType(proto.sparse_tensor_type());
    default:
      return false;
  }
}

bool sameFields(const ValueType& a, const ValueType& b) {
  return a.kind == b.kind && a.elemType == b.elemType && a.shape == b.shape &&
         a.denotation == b.denotation;
}

template <class TensorTypeProto>
void writeTensorFields(const ValueType& type, TensorTypeProto& tensor) {
  if (type.elemType != DataType::Undefined)
    tensor.set_elem_type(static_cast<int32_t>(type.elemType));
  if (!type.shape) return;
  onnx::TensorShapeProto* shape = tensor.mutable_shape();
  for (const Dim& dim : *type.shape) {
    onnx::TensorShapeProto_Dimension* protoDim = shape->add_dim();
    if (dim.value) {
      protoDim->set_dim_value(*dim.value);
    } else if (!dim.param.empty()) {
      protoDim->set_dim_param(dim.param);
    }
    if (!dim.denotation.empty()) protoDim->set_denotation(dim.denotation);
  }
}

}  // namespace

ValueType importValueType(const onnx::TypeProto& proto, const ImportContext& context,
                          const Subject& subject) {
  ValueType type;
  if (auto unknown = fillFields(proto, type)) {
    throw Error(
        ErrorKind::Input, context.displayName, subject.str(),
        fmt::format("unknown element type {} (qopt knows 0 to {})", *unknown, kMaxKnownDataType));
  }
  if (!isPlain(proto)) type.opaque = serializeOpaque(proto);
  return type;
}

void exportValueType(const ValueType& type, onnx::TypeProto& proto) {
  if (type.kind == ValueType::Kind::Other) {
    parseOpaque(type.opaque, proto, "value type");
    return;
  }
  if (!type.opaque.empty()) {
    onnx::TypeProto kept;
    parseOpaque(type.opaque, kept, "value type");
    ValueType keptFields;
    if (!fillFields(kept, keptFields) && sameFields(keptFields, type)) {
      proto = std::move(kept);
      return;
    }
  }
  if (type.kind == ValueType::Kind::Tensor) {
    writeTensorFields(type, *proto.mutable_tensor_type());
  } else if (type.kind == ValueType::Kind::SparseTensor) {
    writeTensorFields(type, *proto.mutable_sparse_tensor_type());
  }
  if (!type.denotation.empty()) proto.set_denotation(type.denotation);
}

}  // namespace qopt::detail
