// Serializing a ModelProto whose large tensors are lent (see ProtoLoan): the bytes go from the
// tensors' buffers to the output stream, through protobuf's aliasing writes where the stream
// allows them, so saving never holds a second copy of the weights.
#include <google/protobuf/wire_format_lite.h>

#include "ProtoConvert.h"

namespace qopt::detail {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

uint64_t fieldBytes(int number, uint64_t length) {
  uint32_t tag = WireFormatLite::MakeTag(number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  return CodedOutputStream::VarintSize32(tag) + CodedOutputStream::VarintSize64(length) + length;
}

uint64_t cachedSize(const google::protobuf::MessageLite& message) {
  return static_cast<uint64_t>(message.GetCachedSize());
}

void writeLengthDelimitedTag(int number, uint64_t length, CodedOutputStream& out) {
  out.WriteTag(WireFormatLite::MakeTag(number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  out.WriteVarint64(length);
}

// Holds a repeated field's elements aside (an O(1) swap on the field's own arena, no copy)
// while protobuf writes the rest of the message.
template <class Element>
class Aside {
 public:
  explicit Aside(google::protobuf::RepeatedPtrField<Element>* field)
      : field_(field), held_(field->GetArena()) {
    held_.Swap(field_);
  }
  void putBack() { held_.Swap(field_); }

 private:
  google::protobuf::RepeatedPtrField<Element>* field_;
  google::protobuf::RepeatedPtrField<Element> held_;
};

}  // namespace

SplicedSerializer::SplicedSerializer(onnx::ModelProto& proto, const ProtoLoan& loan)
    : proto_(proto), loan_(loan) {
  proto_.ByteSizeLong();  // fills every message's cached size (lent bytes not counted)
  size_ = sizeOf(proto_).size;
}

// Each sizeOf returns the message's size with its lent bytes, and records it when it differs
// from protobuf's own (the message holds lent bytes somewhere below).
SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::TensorProto& proto) {
  uint64_t size = cachedSize(proto);
  const Buffer* lent = loan_.lentTo(proto);
  if (!lent) return {size, false};
  size += fieldBytes(onnx::TensorProto::kRawDataFieldNumber, lent->size());
  spliced_[&proto] = size;
  return {size, true};
}

template <class Child>
void SplicedSerializer::grow(Sized& sized, int number, const Child& child) {
  Sized grown = sizeOf(child);
  if (!grown.holdsLent) return;
  sized.size += fieldBytes(number, grown.size) - fieldBytes(number, cachedSize(child));
  sized.holdsLent = true;
}

SplicedSerializer::Sized SplicedSerializer::record(const void* message, Sized sized) {
  if (sized.holdsLent) spliced_[message] = sized.size;
  return sized;
}

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::AttributeProto& proto) {
  Sized sized{cachedSize(proto), false};
  if (proto.has_t()) grow(sized, 5, proto.t());
  if (proto.has_g()) grow(sized, 6, proto.g());
  for (const auto& t : proto.tensors()) grow(sized, 10, t);
  for (const auto& g : proto.graphs()) grow(sized, 11, g);
  return record(&proto, sized);
}

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::NodeProto& proto) {
  Sized sized{cachedSize(proto), false};
  for (const auto& a : proto.attribute()) grow(sized, 5, a);
  return record(&proto, sized);
}

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::GraphProto& proto) {
  Sized sized{cachedSize(proto), false};
  for (const auto& n : proto.node()) grow(sized, 1, n);
  for (const auto& t : proto.initializer()) grow(sized, 5, t);
  return record(&proto, sized);
}

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::ModelProto& proto) {
  Sized sized{cachedSize(proto), false};
  if (proto.has_graph()) grow(sized, 7, proto.graph());
  return record(&proto, sized);
}

template <class Message>
void SplicedSerializer::writeField(int number, Message& message, CodedOutputStream& out) {
  auto it = spliced_.find(&message);
  if (it == spliced_.end()) {
    writeLengthDelimitedTag(number, cachedSize(message), out);
    message.SerializeWithCachedSizes(&out);
    return;
  }
  writeLengthDelimitedTag(number, it->second, out);
  writeBody(message, out);
}

// A message holding lent bytes: the fields that lead to them first, then the others, written
// by protobuf while the first ones are moved aside (an O(1) swap, put back afterwards).
void SplicedSerializer::writeBody(onnx::TensorProto& proto, CodedOutputStream& out) {
  proto.SerializeWithCachedSizes(&out);
  const Buffer* lent = loan_.lentTo(proto);
  writeLengthDelimitedTag(onnx::TensorProto::kRawDataFieldNumber, lent->size(), out);
  out.WriteRawMaybeAliased(lent->data(), static_cast<int>(lent->size()));
}

void SplicedSerializer::writeBody(onnx::AttributeProto& proto, CodedOutputStream& out) {
  if (proto.has_t()) writeField(5, *proto.mutable_t(), out);
  if (proto.has_g()) writeField(6, *proto.mutable_g(), out);
  for (auto& t : *proto.mutable_tensors()) writeField(10, t, out);
  for (auto& g : *proto.mutable_graphs()) writeField(11, g, out);
  onnx::TensorProto* t = proto.has_t() ? proto.unsafe_arena_release_t() : nullptr;
  onnx::GraphProto* g = proto.has_g() ? proto.unsafe_arena_release_g() : nullptr;
  Aside<onnx::TensorProto> tensors(proto.mutable_tensors());
  Aside<onnx::GraphProto> graphs(proto.mutable_graphs());
  proto.SerializeWithCachedSizes(&out);
  tensors.putBack();
  graphs.putBack();
  if (t) proto.unsafe_arena_set_allocated_t(t);
  if (g) proto.unsafe_arena_set_allocated_g(g);
}

void SplicedSerializer::writeBody(onnx::NodeProto& proto, CodedOutputStream& out) {
  for (auto& a : *proto.mutable_attribute()) writeField(5, a, out);
  Aside<onnx::AttributeProto> attributes(proto.mutable_attribute());
  proto.SerializeWithCachedSizes(&out);
  attributes.putBack();
}

void SplicedSerializer::writeBody(onnx::GraphProto& proto, CodedOutputStream& out) {
  for (auto& n : *proto.mutable_node()) writeField(1, n, out);
  for (auto& t : *proto.mutable_initializer()) writeField(5, t, out);
  Aside<onnx::NodeProto> nodes(proto.mutable_node());
  Aside<onnx::TensorProto> initializers(proto.mutable_initializer());
  proto.SerializeWithCachedSizes(&out);
  nodes.putBack();
  initializers.putBack();
}

void SplicedSerializer::writeBody(onnx::ModelProto& proto, CodedOutputStream& out) {
  if (proto.has_graph()) writeField(7, *proto.mutable_graph(), out);
  onnx::GraphProto* graph = proto.has_graph() ? proto.unsafe_arena_release_graph() : nullptr;
  proto.SerializeWithCachedSizes(&out);
  if (graph) proto.unsafe_arena_set_allocated_graph(graph);
}

bool SplicedSerializer::write(google::protobuf::io::ZeroCopyOutputStream& stream) {
  CodedOutputStream out(&stream);
  out.EnableAliasing(true);
  if (spliced_.contains(&proto_)) {
    writeBody(proto_, out);
  } else {
    proto_.SerializeWithCachedSizes(&out);
  }
  out.Trim();
  return !out.HadError();
}

}  // namespace qopt::detail
