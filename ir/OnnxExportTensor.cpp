// Tensor -> TensorProto: the same encoding the file had (raw_data, typed fields or external data)
// unless the placer moves the bytes to an external data file.
#include <cstring>

#include <fmt/format.h>

#include "ExternalData.h"
#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace {

// Below this, copying is cheaper than the bookkeeping of a loan.
constexpr size_t kMinLentBytes = 256;

template <class T, class Repeated>
void appendContiguous(std::span<const std::byte> bytes, Repeated& field) {
  size_t count = bytes.size() / sizeof(T);
  field.Resize(static_cast<int>(count), T{});
  if (count) std::memcpy(field.mutable_data(), bytes.data(), count * sizeof(T));
}

// Widens each `width`-byte element to the field's element type: sign-extended for signed types.
template <class T, class Repeated>
void appendWidened(std::span<const std::byte> bytes, size_t width, bool isSigned, Repeated& field) {
  size_t count = bytes.size() / width;
  field.Reserve(static_cast<int>(count));
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, bytes.data() + i * width, width);  // little-endian
    if (isSigned && width < 8) {
      unsigned shift = static_cast<unsigned>(64 - width * 8);
      bits = static_cast<uint64_t>(static_cast<int64_t>(bits << shift) >> shift);
    }
    field.Add(static_cast<T>(bits));
  }
}

void writeTyped(const Tensor& tensor, std::span<const std::byte> bytes, onnx::TensorProto& proto) {
  switch (tensor.dataType()) {
    case DataType::Float:
    case DataType::Complex64:
      appendContiguous<float>(bytes, *proto.mutable_float_data());
      return;
    case DataType::Double:
    case DataType::Complex128:
      appendContiguous<double>(bytes, *proto.mutable_double_data());
      return;
    case DataType::Int64:
      appendContiguous<int64_t>(bytes, *proto.mutable_int64_data());
      return;
    case DataType::UInt64:
      appendContiguous<uint64_t>(bytes, *proto.mutable_uint64_data());
      return;
    case DataType::UInt32:
      appendWidened<uint64_t>(bytes, 4, false, *proto.mutable_uint64_data());
      return;
    case DataType::Int32:
      appendContiguous<int32_t>(bytes, *proto.mutable_int32_data());
      return;
    case DataType::Undefined:
    case DataType::String:
      return;
    default: {
      // Narrow types widened to int32: one element per int32, 4-bit types one packed byte each.
      int bits = dataTypeBits(tensor.dataType());
      size_t width = bits <= 8 ? 1 : static_cast<size_t>(bits / 8);
      bool isSigned = tensor.dataType() == DataType::Int8 || tensor.dataType() == DataType::Int16;
      appendWidened<int32_t>(bytes, width, isSigned, *proto.mutable_int32_data());
      return;
    }
  }
}

}  // namespace

void ProtoLoan::setRawData(onnx::TensorProto& proto, std::shared_ptr<const Buffer> buffer) {
  if (!lend_ || buffer->size() < kMinLentBytes) {
    proto.set_raw_data(reinterpret_cast<const char*>(buffer->data()), buffer->size());
    return;
  }
  proto.clear_raw_data();
  lent_[&proto] = std::move(buffer);
}

const Buffer* ProtoLoan::lentTo(const onnx::TensorProto& proto) const {
  auto it = lent_.find(&proto);
  return it == lent_.end() ? nullptr : it->second.get();
}

void exportTensorProto(const Tensor& tensor, onnx::TensorProto& proto, ExportContext& context,
                       const std::string* name, const Subject* subject) {
  for (int64_t dim : tensor.dims()) proto.add_dims(dim);
  if (tensor.dataType() != DataType::Undefined) {
    proto.set_data_type(static_cast<int32_t>(tensor.dataType()));
  }
  if (tensor.segment) {
    proto.mutable_segment()->set_begin(tensor.segment->first);
    proto.mutable_segment()->set_end(tensor.segment->second);
  }
  const std::string& tensorName = name ? *name : tensor.name();
  if (!tensorName.empty() || tensor.emptyNamePresent) proto.set_name(tensorName);
  if (!tensor.docString().empty()) proto.set_doc_string(tensor.docString());
  restoreUnknownFields(proto, tensor.unknownFields, kTensorMetadataPropsField,
                       tensor.metadataProps());

  if (tensor.dataType() == DataType::String) {
    for (const std::string& s : tensor.strings()) proto.add_string_data(s);
    return;
  }
  Subject ownSubject("tensor", tensorName);
  if (auto entries = context.placer.place(tensor, subject ? *subject : ownSubject)) {
    for (auto& [key, value] : *entries) {
      onnx::StringStringEntryProto* entry = proto.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    proto.set_data_location(onnx::TensorProto::EXTERNAL);
    return;
  }
  std::shared_ptr<const Buffer> buffer = tensor.buffer();  // maps external data when needed
  if (!buffer) buffer = Buffer::fromString({});
  if (tensor.encoding() == TensorEncoding::Typed) {
    writeTyped(tensor, buffer->bytes(), proto);
  } else {
    context.loan.setRawData(proto, std::move(buffer));
  }
}

void exportTensorProto(const Tensor& tensor, onnx::TensorProto& proto) {
  ProtoLoan copying(/*lend=*/false);
  auto placer = makeInlinePlacer();
  ExportContext context{copying, *placer};
  exportTensorProto(tensor, proto, context);
}

}  // namespace qopt::detail
