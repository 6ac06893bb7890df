#include "ValueProtoFiles.h"

#include <fmt/format.h>

#include <climits>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt {
namespace {

namespace fs = std::filesystem;
using interp::Array;

[[noreturn]] void fail(const fs::path& file, const std::string& cause) {
  throw Error(ErrorKind::Input, file.string(), {}, cause);
}

void parseFile(const fs::path& file, google::protobuf::Message& message, const char* what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open the file");
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) fail(file, "cannot read the file");
  if (!message.ParseFromString(bytes.str())) fail(file, fmt::format("not a {}", what));
}

Array tensorOf(const onnx::TensorProto& proto, const fs::path& file) {
  return Array::fromTensor(
      loadTensorProtoFromBytes(proto.SerializeAsString(), file.string(), file.parent_path()));
}

// `declared` is the sequence's own TypeProto: its element type is the one an empty sequence has.
Array sequenceOf(const onnx::SequenceProto& proto, const onnx::TypeProto& declared,
                 const fs::path& file) {
  const onnx::TypeProto& elem = declared.sequence_type().elem_type();
  if (!elem.has_tensor_type() || proto.sparse_tensor_values_size() > 0 ||
      proto.sequence_values_size() > 0 || proto.map_values_size() > 0 ||
      proto.optional_values_size() > 0) {
    fail(file, "only sequences of tensors are supported");
  }
  std::vector<Array> items;
  for (const onnx::TensorProto& t : proto.tensor_values()) items.push_back(tensorOf(t, file));
  DataType elemType = dataTypeFromInt(elem.tensor_type().elem_type()).value_or(DataType::Undefined);
  if (elemType == DataType::Undefined && !items.empty()) elemType = items.front().dataType();
  try {
    return Array::sequence(elemType, std::move(items));
  } catch (const Error& e) {
    throw e.withFile(file.string());
  }
}

void fillTensor(const Array& tensor, onnx::TensorProto& proto) {
  Tensor t = tensor.toTensor();
  proto.set_data_type(static_cast<int32_t>(t.dataType()));
  for (int64_t d : t.dims()) proto.add_dims(d);
  if (t.dataType() == DataType::String) {
    for (const std::string& s : t.strings()) proto.add_string_data(s);
  } else {
    std::span<const std::byte> bytes = t.rawBytes();
    proto.set_raw_data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

void fillSequence(const Array& sequence, onnx::SequenceProto& proto) {
  proto.set_elem_type(onnx::SequenceProto::TENSOR);
  for (const Array& item : sequence.items()) fillTensor(item, *proto.add_tensor_values());
}

std::string serialize(const google::protobuf::Message& proto, const fs::path& file) {
  if (proto.ByteSizeLong() > static_cast<size_t>(INT_MAX))
    fail(file, "over protobuf's 2 GiB limit");
  return proto.SerializeAsString();
}

}  // namespace

Array readValueProtoFile(const fs::path& file, const ValueType& declared) {
  onnx::TypeProto type;
  if (declared.kind != ValueType::Kind::Other || !type.ParseFromString(declared.opaque)) {
    fail(file, "the graph input's declared type is not a sequence or optional type");
  }
  if (type.has_sequence_type()) {
    onnx::SequenceProto proto;
    parseFile(file, proto, "SequenceProto");
    return sequenceOf(proto, type, file);
  }
  if (type.has_optional_type()) {
    onnx::OptionalProto proto;
    parseFile(file, proto, "OptionalProto");
    const onnx::TypeProto& elem = type.optional_type().elem_type();
    if (proto.has_tensor_value()) return Array::optional(tensorOf(proto.tensor_value(), file));
    if (proto.has_sequence_value()) {
      if (!elem.has_sequence_type()) fail(file, "holds a sequence where a tensor is declared");
      return Array::optional(sequenceOf(proto.sequence_value(), elem, file));
    }
    if (proto.has_sparse_tensor_value() || proto.has_map_value() || proto.has_optional_value()) {
      fail(file, "only optionals of tensors and sequences are supported");
    }
    return Array::none();
  }
  fail(file, "only tensor, sequence and optional inputs are supported");
}

void writeValueProtoFile(const fs::path& file, const Array& value) {
  if (value.isSequence()) {
    onnx::SequenceProto proto;
    fillSequence(value, proto);
    writeFileAtomically(file, serialize(proto, file));
  } else if (value.isOptional()) {
    onnx::OptionalProto proto;
    proto.set_elem_type(onnx::OptionalProto::UNDEFINED);
    if (value.hasValue() && value.value().isSequence()) {
      proto.set_elem_type(onnx::OptionalProto::SEQUENCE);
      fillSequence(value.value(), *proto.mutable_sequence_value());
    } else if (value.hasValue()) {
      proto.set_elem_type(onnx::OptionalProto::TENSOR);
      fillTensor(value.value(), *proto.mutable_tensor_value());
    }
    writeFileAtomically(file, serialize(proto, file));
  } else {
    onnx::TensorProto proto;
    fillTensor(value, proto);
    writeFileAtomically(file, serialize(proto, file));
  }
}

}  // namespace qopt
