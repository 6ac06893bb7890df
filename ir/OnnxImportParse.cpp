// Bytes -> protobuf message under explicit limits. Protobuf only says "failed"; when it does, the
// bytes are scanned again to tell the user why (empty, truncated, not protobuf, nested too deep).
#include <climits>
#include <set>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>

#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace {

// Re-parsing with this limit tells "nested too deep" apart from other malformed data while
// staying far from the stack's end.
constexpr int kDiagnosticRecursionLimit = 4096;

bool parseWithLimit(std::string_view bytes, int recursionLimit,
                    google::protobuf::Message& message) {
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetRecursionLimit(recursionLimit);
  input.SetTotalBytesLimit(INT_MAX);
  return message.ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
}

struct WireProblem {
  std::string cause;  // empty: the top level is well formed
};

// Walks the top-level fields. `firstFields` (field number -> wire type) are those a file of the
// expected kind may start with; empty to accept anything.
WireProblem scanTopLevel(std::string_view bytes,
                         const std::set<std::pair<uint32_t, uint32_t>>& firstFields,
                         std::string_view kind) {
  size_t pos = 0;
  const size_t size = bytes.size();
  auto notProtobuf = [&](size_t at) {
    return WireProblem{
        fmt::format("not {}: the bytes at offset {} are not valid protobuf data", kind, at)};
  };
  auto truncated = [&](size_t at, uint64_t needed) {
    return WireProblem{
        fmt::format("the file is truncated: the field at byte offset {} needs {} "
                    "more bytes, but the file ends {} bytes later",
                    at, needed, size - pos)};
  };
  // 0: read, 1: ran out of bytes, 2: longer than 10 bytes.
  auto readVarint = [&](uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos >= size) return 1;
      auto byte = static_cast<uint8_t>(bytes[pos++]);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return 0;
    }
    return 2;
  };
  bool first = true;
  while (pos < size) {
    size_t start = pos;
    uint64_t tag = 0;
    int status = readVarint(tag);
    if (status == 1) return truncated(start, 1);
    if (status == 2) return notProtobuf(start);
    uint64_t field = tag >> 3;
    auto wireType = static_cast<uint32_t>(tag & 7);
    if (field == 0 || field > 536870911) return notProtobuf(start);
    if (first && !firstFields.empty() &&
        !firstFields.contains({static_cast<uint32_t>(field), wireType})) {
      return WireProblem{fmt::format("not {}: its first bytes do not start a field of one", kind)};
    }
    first = false;
    uint64_t value = 0;
    switch (wireType) {
      case 0:
        status = readVarint(value);
        if (status == 1) return truncated(start, 1);
        if (status == 2) return notProtobuf(start);
        break;
      case 1:
      case 5: {
        size_t width = wireType == 1 ? 8 : 4;
        if (size - pos < width) return truncated(start, width);
        pos += width;
        break;
      }
      case 2:
        status = readVarint(value);
        if (status == 1) return truncated(start, 1);
        if (status == 2) return notProtobuf(start);
        if (value > size - pos) return truncated(start, value);
        pos += static_cast<size_t>(value);
        break;
      default:  // groups (unused by ONNX) and invalid wire types
        return notProtobuf(start);
    }
  }
  return {};
}

template <class Message>
Message& parseOrExplain(std::string_view bytes, const ImportContext& context,
                        const std::set<std::pair<uint32_t, uint32_t>>& firstFields,
                        std::string_view kind, google::protobuf::Arena& arena) {
  auto fail = [&](const std::string& cause) {
    throw Error(ErrorKind::Input, context.displayName, {}, cause);
  };
  if (bytes.empty()) fail("the file is empty");
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    fail(
        fmt::format("the file has {} bytes, over protobuf's 2 GiB limit; large tensors must be "
                    "stored as external data",
                    bytes.size()));
  }
  auto* message = google::protobuf::Arena::CreateMessage<Message>(&arena);
  if (parseWithLimit(bytes, context.options.protobufRecursionLimit, *message)) return *message;
  WireProblem problem = scanTopLevel(bytes, firstFields, kind);
  if (!problem.cause.empty()) fail(problem.cause);
  Message deeper;
  if (context.options.protobufRecursionLimit < kDiagnosticRecursionLimit &&
      parseWithLimit(bytes, kDiagnosticRecursionLimit, deeper)) {
    fail(fmt::format("the protobuf messages nest deeper than the recursion limit ({})",
                     context.options.protobufRecursionLimit));
  }
  throw Error(ErrorKind::Input, context.displayName, {},
              fmt::format("not {}: it holds malformed protobuf data, or messages nested deeper "
                          "than {} levels",
                          kind, kDiagnosticRecursionLimit));
}

// Fields a ModelProto starts with (number, wire type), including those of newer ONNX versions.
const std::set<std::pair<uint32_t, uint32_t>> kModelFields = {{1, 0},  {2, 2},  {3, 2},  {4, 2},
                                                              {5, 0},  {6, 2},  {7, 2},  {8, 2},
                                                              {14, 2}, {20, 2}, {25, 2}, {26, 2}};

}  // namespace

onnx::ModelProto& parseModelBytes(std::string_view bytes, const ImportContext& context,
                                  google::protobuf::Arena& arena) {
  onnx::ModelProto& proto =
      parseOrExplain<onnx::ModelProto>(bytes, context, kModelFields, "an ONNX model", arena);
  if (!proto.has_graph()) {
    // Other protobuf messages often parse as a ModelProto full of unknown fields.
    throw Error(ErrorKind::Input, context.displayName, {},
                proto.has_ir_version()
                    ? "not an ONNX model: it has no graph"
                    : "not an ONNX model: it has neither an ir_version nor a graph");
  }
  return proto;
}

onnx::TensorProto& parseTensorBytes(std::string_view bytes, const ImportContext& context,
                                    google::protobuf::Arena& arena) {
  return parseOrExplain<onnx::TensorProto>(bytes, context, {}, "a TensorProto file", arena);
}

}  // namespace qopt::detail
