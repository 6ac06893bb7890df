// Unknown fields (what ONNX versions newer than the linked 1.12 added) and the serialized pieces
// the IR keeps opaque. Both must come back byte for byte, so that a model written by a newer
// exporter survives a pass through qopt.
#include <climits>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <fmt/format.h>

#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace pb = google::protobuf;

namespace {

// Opaque pieces were parsed once at import under the caller's recursion limit; this bound only
// keeps a corrupted piece set by a plugin from exhausting the stack.
constexpr int kOpaqueRecursionLimit = 10000;

}  // namespace

std::string saveUnknownFields(const pb::Message& message) {
  const pb::UnknownFieldSet& unknown = message.GetReflection()->GetUnknownFields(message);
  if (unknown.empty()) return {};
  std::string bytes;
  unknown.SerializeToString(&bytes);
  return bytes;
}

void takeMetadataProps(pb::Message& message, int field,
                       std::vector<std::pair<std::string, std::string>>& props) {
  // Mutable access would allocate an unknown field set for every message: look first.
  if (message.GetReflection()->GetUnknownFields(message).empty()) return;
  pb::UnknownFieldSet* unknown = message.GetReflection()->MutableUnknownFields(&message);
  std::vector<std::pair<std::string, std::string>> found;
  for (int i = 0; i < unknown->field_count(); ++i) {
    const pb::UnknownField& entryField = unknown->field(i);
    if (entryField.number() != field) continue;
    // Lift only entries that come back as the same bytes; anything unusual stays unknown (all
    // entries together, so their order is kept).
    if (entryField.type() != pb::UnknownField::TYPE_LENGTH_DELIMITED) return;
    onnx::StringStringEntryProto entry;
    if (!entry.ParseFromString(entryField.length_delimited()) || !entry.has_key() ||
        !entry.has_value() || !entry.unknown_fields().empty() ||
        entry.SerializeAsString() != entryField.length_delimited()) {
      return;
    }
    found.emplace_back(entry.key(), entry.value());
  }
  if (found.empty()) return;
  unknown->DeleteByNumber(field);
  props.insert(props.end(), std::make_move_iterator(found.begin()),
               std::make_move_iterator(found.end()));
}

void restoreUnknownFields(pb::Message& message, const std::string& unknown, int field,
                          const std::vector<std::pair<std::string, std::string>>& props) {
  if (unknown.empty() && props.empty()) return;
  pb::UnknownFieldSet* set = message.GetReflection()->MutableUnknownFields(&message);
  if (!unknown.empty() && !set->ParseFromString(unknown)) {
    throw Error(ErrorKind::Internal, {}, message.GetTypeName(),
                "the kept unknown fields are not valid protobuf data");
  }
  for (const auto& [key, value] : props) {
    onnx::StringStringEntryProto entry;
    entry.set_key(key);
    entry.set_value(value);
    set->AddLengthDelimited(field, entry.SerializeAsString());
  }
}

void restoreUnknownFields(pb::Message& message, const std::string& unknown) {
  restoreUnknownFields(message, unknown, 0, {});
}

std::string Subject::str() const {
  if (node_) return fmt::format("{} attribute '{}'", node_->describe(), *name_);
  return fmt::format("{} '{}'", kind_, *name_);
}

std::string serializeOpaque(const pb::Message& message) {
  return message.SerializeAsString();
}

void parseOpaque(const std::string& bytes, pb::Message& message, std::string_view what) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    throw Error(ErrorKind::Internal, {}, std::string(what), "is larger than 2 GiB");
  }
  pb::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                 static_cast<int>(bytes.size()));
  input.SetRecursionLimit(kOpaqueRecursionLimit);
  if (!message.ParseFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
    throw Error(ErrorKind::Internal, {}, std::string(what),
                "holds malformed protobuf data (it was changed after import)");
  }
}

}  // namespace qopt::detail
