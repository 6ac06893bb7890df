// Conversion between onnx::ModelProto and the IR. Private to libqopt: the public headers never
// expose protobuf types, so plugins need not compile against them.
//
// Fidelity rules shared by import and export:
// - Fields newer than the linked ONNX 1.12 arrive as protobuf unknown fields; they are kept per
//   message as serialized bytes and written back. The metadata_props of nodes (field 9), graphs
//   and tensors (field 16) are lifted out of them into the IR's metadataProps.
// - Optional fields keep their presence: what was absent stays absent.
// - Pieces qopt does not interpret (functions, training_info, sparse initializers, annotations)
//   stay serialized.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include "qopt/ir/Graph.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt::detail {

/// What a message is about, for error messages: formatted only when an error needs it (import
/// and export touch every tensor and attribute, and most models have no error).
class Subject {
 public:
  /// "initializer 'w'", "tensor 't'"; `name` must outlive the Subject.
  Subject(const char* kind, const std::string& name) : kind_(kind), name_(&name) {}
  /// "node 'conv1' (Conv) attribute 'value'".
  Subject(const Node& node, const std::string& attribute) : node_(&node), name_(&attribute) {}
  std::string str() const;

 private:
  const char* kind_ = nullptr;
  const Node* node_ = nullptr;
  const std::string* name_;
};

struct ImportContext {
  std::string displayName;        // file name for messages
  std::filesystem::path baseDir;  // external data is relative to this folder
  LoadOptions options;
};

/// Moves tensor bytes out of `proto` (no copies of raw data).
std::unique_ptr<Model> importModelProto(onnx::ModelProto&& proto, const ImportContext& context);
Tensor importTensorProto(onnx::TensorProto&& proto, const ImportContext& context);
/// As importTensorProto; `subject` names the tensor in messages.
Tensor importTensorProto(onnx::TensorProto&& proto, const ImportContext& context,
                         const Subject& subject);

/// Parses bytes into a ModelProto / TensorProto with the context's protobuf limits. A failure is
/// a qopt::Error that says why (empty, truncated, not protobuf, nested too deeply).
/// The message lives on `arena`: parsing and freeing are then much cheaper, and raw_data still
/// moves out without a copy.
onnx::ModelProto& parseModelBytes(std::string_view bytes, const ImportContext& context,
                                  google::protobuf::Arena& arena);
onnx::TensorProto& parseTensorBytes(std::string_view bytes, const ImportContext& context,
                                    google::protobuf::Arena& arena);

/// The value type a TypeProto describes. Anything the ValueType fields cannot say exactly (an
/// explicit empty field, unknown fields, sequence/map/optional types) keeps the whole TypeProto
/// in `opaque`. Throws qopt::Error (naming `subject`) for an unknown element type.
ValueType importValueType(const onnx::TypeProto& proto, const ImportContext& context,
                          const Subject& subject);
/// The inverse of importValueType: writes `opaque` back while the fields still match it.
void exportValueType(const ValueType& type, onnx::TypeProto& proto);

/// Tensor bytes that export leaves out of the protos (raw_data unset) and that
/// SplicedSerializer writes straight from their buffers: owned and memory-mapped bytes are never
/// copied into a proto. (Handing a buffer's string to protobuf with set_allocated_raw_data is
/// not an option: Debian's libprotobuf reallocates strings given to it.)
class ProtoLoan {
 public:
  /// With `lend` false every buffer is copied into raw_data (for protos used as they are).
  explicit ProtoLoan(bool lend = true) : lend_(lend) {}
  ProtoLoan(const ProtoLoan&) = delete;
  ProtoLoan& operator=(const ProtoLoan&) = delete;

  /// Gives `proto` the buffer's bytes as raw_data: lent (recorded here) or copied when small.
  void setRawData(onnx::TensorProto& proto, std::shared_ptr<const Buffer> buffer);
  /// The bytes lent to `proto`, or null.
  const Buffer* lentTo(const onnx::TensorProto& proto) const;
  bool empty() const { return lent_.empty(); }

 private:
  bool lend_;
  std::unordered_map<const onnx::TensorProto*, std::shared_ptr<const Buffer>> lent_;
};

/// Serializes a ModelProto with the loan's bytes spliced in as the raw_data they stand for.
/// Messages that hold no lent tensor are written by protobuf as usual; those that do write the
/// fields leading to lent tensors first, then the rest. Deterministic.
class SplicedSerializer {
 public:
  /// Computes every size; the proto must not change until the serializer is gone.
  SplicedSerializer(onnx::ModelProto& proto, const ProtoLoan& loan);
  uint64_t size() const { return size_; }
  /// Writes size() bytes. Returns false when the stream failed.
  bool write(google::protobuf::io::ZeroCopyOutputStream& stream);

 private:
  struct Sized {
    uint64_t size;
    bool holdsLent;
  };
  Sized sizeOf(const onnx::ModelProto& proto);
  Sized sizeOf(const onnx::GraphProto& proto);
  Sized sizeOf(const onnx::NodeProto& proto);
  Sized sizeOf(const onnx::AttributeProto& proto);
  Sized sizeOf(const onnx::TensorProto& proto);
  /// Adds the growth of `child` (field `number`) to its parent's `sized` when it holds lent bytes.
  template <class Child>
  void grow(Sized& sized, int number, const Child& child);
  /// Records a message's size when it holds lent bytes; returns `sized`.
  Sized record(const void* message, Sized sized);
  template <class Message>
  void writeField(int number, Message& message, google::protobuf::io::CodedOutputStream& out);
  void writeBody(onnx::ModelProto& proto, google::protobuf::io::CodedOutputStream& out);
  void writeBody(onnx::GraphProto& proto, google::protobuf::io::CodedOutputStream& out);
  void writeBody(onnx::NodeProto& proto, google::protobuf::io::CodedOutputStream& out);
  void writeBody(onnx::AttributeProto& proto, google::protobuf::io::CodedOutputStream& out);
  void writeBody(onnx::TensorProto& proto, google::protobuf::io::CodedOutputStream& out);

  onnx::ModelProto& proto_;
  const ProtoLoan& loan_;
  std::unordered_map<const void*, uint64_t> spliced_;  // size of each message holding lent bytes
  uint64_t size_ = 0;
};

/// Decides, tensor by tensor, whether export writes the bytes inline or to external data, and
/// writes the data files once the model is exported.
class TensorPlacer {
 public:
  virtual ~TensorPlacer() = default;
  /// The external_data entries to write for `tensor`, or nullopt to write its bytes inline.
  virtual std::optional<std::vector<std::pair<std::string, std::string>>> place(
      const Tensor& tensor, const Subject& subject) = 0;
  /// Writes the data files the placed tensors refer to (atomically, one by one).
  virtual void writeDataFiles() {}
  /// The data files (resolved paths) that the placed tensors refer to.
  virtual std::vector<std::filesystem::path> dataFiles() const { return {}; }
};

struct ExportContext {
  ProtoLoan& loan;
  TensorPlacer& placer;
};

/// Fills `proto`; with a context, large raw buffers are lent to the proto rather than copied and
/// the placer decides where tensor bytes go. Without one, everything is copied inline.
void exportModelProto(const Model& model, onnx::ModelProto& proto, ExportContext& context);
void exportModelProto(const Model& model, onnx::ModelProto& proto);
/// `name` overrides the tensor's own name (initializers take their value's name).
void exportTensorProto(const Tensor& tensor, onnx::TensorProto& proto, ExportContext& context,
                       const std::string* name = nullptr, const Subject* subject = nullptr);
void exportTensorProto(const Tensor& tensor, onnx::TensorProto& proto);

// ---------------------------------------------------------------------------------------------
// Unknown fields and other serialized pieces

/// Field numbers of metadata_props in ONNX versions newer than 1.12.
inline constexpr int kNodeMetadataPropsField = 9;
inline constexpr int kGraphMetadataPropsField = 16;
inline constexpr int kTensorMetadataPropsField = 16;

/// The message's unknown fields, serialized (empty when there are none).
std::string saveUnknownFields(const google::protobuf::Message& message);
/// Moves the `field` entries (StringStringEntryProto) out of `message`'s unknown fields into
/// `props`, when each one re-serializes to the same bytes; otherwise leaves all of them there.
void takeMetadataProps(google::protobuf::Message& message, int field,
                       std::vector<std::pair<std::string, std::string>>& props);
/// Restores `unknown` and appends `props` as `field` entries to `message`'s unknown fields.
void restoreUnknownFields(google::protobuf::Message& message, const std::string& unknown, int field,
                          const std::vector<std::pair<std::string, std::string>>& props);
void restoreUnknownFields(google::protobuf::Message& message, const std::string& unknown);

/// Serializes a message kept opaque in the IR.
std::string serializeOpaque(const google::protobuf::Message& message);
/// Parses an opaque piece back (no recursion limit beyond what import already enforced).
void parseOpaque(const std::string& bytes, google::protobuf::Message& message,
                 std::string_view what);

}  // namespace qopt::detail
