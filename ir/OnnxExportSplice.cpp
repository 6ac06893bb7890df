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

namespace {

// Adds the growth of lent children to their parent's size.
template <class Child, class SizeFn>
void addChild(const Child& child, int number, SizeFn&& sizeOf, uint64_t& size, bool& holdsLent) {
  auto sized = sizeOf(child);
  if (!sized.holdsLent) return;
  size += fieldBytes(number, sized.size) - fieldBytes(number, cachedSize(child));
  holdsLent = true;
}

}  // namespace

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::AttributeProto& proto) {
  uint64_t size = cachedSize(proto);
  bool holdsLent = false;
  auto tensorSize = [this](const onnx::TensorProto& t) { return sizeOf(t); };
  auto graphSize = [this](const onnx::GraphProto& g) { return sizeOf(g); };
  if (proto.has_t()) addChild(proto.t(), 5, tensorSize, size, holdsLent);
  if (proto.has_g()) addChild(proto.g(), 6, graphSize, size, holdsLent);
  for (const auto& t : proto.tensors()) addChild(t, 10, tensorSize, size, holdsLent);
  for (const auto& g : proto.graphs()) addChild(g, 11, graphSize, size, holdsLent);
  if (holdsLent) spliced_[&proto] = size;
  return {size, holdsLent};
}

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::NodeProto& proto) {
  uint64_t size = cachedSize(proto);
  bool holdsLent = false;
  auto attrSize = [this](const onnx::AttributeProto& a) { return sizeOf(a); };
  for (const auto& a : proto.attribute()) addChild(a, 5, attrSize, size, holdsLent);
  if (holdsLent) spliced_[&proto] = size;
  return {size, holdsLent};
}

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::GraphProto& proto) {
  uint64_t size = cachedSize(proto);
  bool holdsLent = false;
  auto nodeSize = [this](const onnx::NodeProto& n) { return sizeOf(n); };
  auto tensorSize = [this](const onnx::TensorProto& t) { return sizeOf(t); };
  for (const auto& n : proto.node()) addChild(n, 1, nodeSize, size, holdsLent);
  for (const auto& t : proto.initializer()) addChild(t, 5, tensorSize, size, holdsLent);
  if (holdsLent) spliced_[&proto] = size;
  return {size, holdsLent};
}

SplicedSerializer::Sized SplicedSerializer::sizeOf(const onnx::ModelProto& proto) {
  uint64_t size = cachedSize(proto);
  bool holdsLent = false;
  auto graphSize = [this](const onnx::GraphProto& g) { return sizeOf(g); };
  if (proto.has_graph()) addChild(proto.graph(), 7, graphSize, size, holdsLent);
  if (holdsLent) spliced_[&proto] = size;
  return {size, holdsLent};
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
