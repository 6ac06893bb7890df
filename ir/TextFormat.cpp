#include "qopt/ir/TextFormat.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <onnx/defs/parser.h>

#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt {

namespace {

// ---------------------------------------------------------------------------------------------
// Parser messages

// "(line: L column: C)", as ONNX's parser writes positions, becomes "line L, column C".
std::string positionText(const std::string& position) {
  static const std::regex kPosition(R"(\(line: (\d+) column: (\d+)\))");
  std::smatch m;
  if (!std::regex_search(position, m, kPosition)) return position;
  return fmt::format("line {}, column {}", m[1].str(), m[2].str());
}

// ONNX's parser reports "[ParseError at position (line: L column: C)]\nError context: ...\nMSG".
Error parseError(std::string_view displayName, const std::string& message) {
  static const std::regex kPattern(
      R"(\[ParseError at position \(line: (\d+) column: (\d+)\)\]\nError context: ([^\n]*)\n([\s\S]*))");
  static const std::regex kUnhandledType(R"(Unhandled type: %d(\d+))");
  std::smatch m;
  if (!std::regex_match(message, m, kPattern)) {
    return Error(ErrorKind::Input, std::string(displayName), {}, message);
  }
  std::string cause = m[4].str();
  std::smatch type;
  if (std::regex_search(cause, type, kUnhandledType)) {
    auto dataType = dataTypeFromInt(std::stoll(type[1].str()));
    cause = fmt::format("tensor values of type {} cannot be written in ONNX 1.12's text syntax",
                        dataType ? dataTypeName(*dataType) : std::string_view("?"));
  }
  std::string context = m[3].str();
  size_t start = context.find_first_not_of(" \t");
  context = start == std::string::npos ? std::string() : context.substr(start);
  if (!context.empty()) cause += fmt::format(" (in: {})", context);
  return Error(ErrorKind::Input, std::string(displayName),
               fmt::format("line {}, column {}", m[1].str(), m[2].str()), cause);
}

// ---------------------------------------------------------------------------------------------
// Checks for what ONNX 1.12's parser accepts silently but gets wrong

class ParsedModelChecker {
 public:
  explicit ParsedModelChecker(std::string_view displayName) : displayName_(displayName) {}

  void check(const onnx::ModelProto& model) {
    checkGraph(model.graph());
    for (const auto& function : model.functions()) {
      for (const auto& node : function.node()) checkNode(node);
    }
  }

 private:
  [[noreturn]] void fail(std::string subject, std::string cause) const {
    throw Error(ErrorKind::Input, displayName_, std::move(subject), std::move(cause));
  }

  static std::string describe(const onnx::NodeProto& node) {
    std::string op = node.domain().empty() ? node.op_type() : node.domain() + "." + node.op_type();
    if (node.output_size() > 0 && !node.output(0).empty()) {
      return fmt::format("node producing '{}' ({})", node.output(0), op);
    }
    return fmt::format("node ({})", op);
  }

  void checkGraph(const onnx::GraphProto& graph) {
    for (const auto& tensor : graph.initializer()) {
      checkTensor(tensor, fmt::format("initializer '{}'", tensor.name()));
    }
    for (const auto& node : graph.node()) checkNode(node);
  }

  void checkNode(const onnx::NodeProto& node) {
    if (node.op_type().empty()) fail(describe(node), "the node has no operator name");
    for (const auto& attr : node.attribute()) checkAttribute(node, attr);
  }

  void checkAttribute(const onnx::NodeProto& node, const onnx::AttributeProto& attr) {
    std::string subject = fmt::format("attribute '{}' of {}", attr.name(), describe(node));
    if (!attr.ref_attr_name().empty()) return;
    using onnx::AttributeProto;
    switch (attr.type()) {
      case AttributeProto::UNDEFINED:
        fail(subject,
             "lists of tensors, graphs or references are not supported by ONNX 1.12's "
             "text syntax");
      case AttributeProto::FLOATS:
        if (attr.ints_size() > 0 || attr.strings_size() > 0) {
          fail(subject,
               "the list mixes integers and floats (write every float with a decimal "
               "point, e.g. 1.0)");
        }
        break;
      case AttributeProto::INTS:
        if (attr.strings_size() > 0) fail(subject, "the list mixes numbers and strings");
        break;
      case AttributeProto::STRINGS:
        if (attr.ints_size() > 0 || attr.floats_size() > 0) {
          fail(subject, "the list mixes numbers and strings");
        }
        break;
      case AttributeProto::TENSOR:
        checkTensor(attr.t(), subject);
        break;
      case AttributeProto::GRAPH:
        // The parser reads any bare identifier as a graph, so `alpha = inf` becomes an empty
        // graph named "inf" instead of an error.
        if (attr.g().output_size() == 0) {
          fail(subject, fmt::format("'{}' was read as a graph without outputs (a bare identifier "
                                    "is a graph in this syntax; inf and nan cannot be written)",
                                    attr.g().name()));
        }
        checkGraph(attr.g());
        break;
      default:
        break;
    }
  }

  template <class Field>
  static std::optional<int64_t> outOfRange(const Field& values, int64_t lo, int64_t hi) {
    for (auto v : values) {
      auto value = static_cast<int64_t>(v);
      if (value < lo || value > hi) return value;
    }
    return std::nullopt;
  }

  void checkTensor(const onnx::TensorProto& tensor, const std::string& subject) {
    uint64_t expected = 1;
    for (int64_t d : tensor.dims()) expected *= static_cast<uint64_t>(d);
    uint64_t given = static_cast<uint64_t>(tensor.float_data_size()) +
                     static_cast<uint64_t>(tensor.int32_data_size()) +
                     static_cast<uint64_t>(tensor.int64_data_size()) +
                     static_cast<uint64_t>(tensor.uint64_data_size()) +
                     static_cast<uint64_t>(tensor.double_data_size()) +
                     static_cast<uint64_t>(tensor.string_data_size());
    if (given != expected) {
      fail(subject, fmt::format("the tensor has {} values, its shape needs {}", given, expected));
    }
    // The parser stores small integer types in int32_data without checking their range.
    std::optional<int64_t> bad;
    switch (tensor.data_type()) {
      case onnx::TensorProto::INT8:
        bad = outOfRange(tensor.int32_data(), -128, 127);
        break;
      case onnx::TensorProto::UINT8:
        bad = outOfRange(tensor.int32_data(), 0, 255);
        break;
      case onnx::TensorProto::INT16:
        bad = outOfRange(tensor.int32_data(), -32768, 32767);
        break;
      case onnx::TensorProto::UINT16:
        bad = outOfRange(tensor.int32_data(), 0, 65535);
        break;
      case onnx::TensorProto::BOOL:
        bad = outOfRange(tensor.int32_data(), 0, 1);
        break;
      case onnx::TensorProto::UINT32:
        for (uint64_t v : tensor.uint64_data()) {
          if (v > std::numeric_limits<uint32_t>::max()) {
            fail(subject, fmt::format("value {} is out of range for UINT32", v));
          }
        }
        break;
      default:
        break;
    }
    if (bad) {
      auto type = dataTypeFromInt(tensor.data_type());
      fail(subject, fmt::format("value {} is out of range for {}", *bad,
                                type ? dataTypeName(*type) : std::string_view("?")));
    }
  }

  std::string displayName_;
};

// ---------------------------------------------------------------------------------------------
// Format detection

// Skips whitespace and `#` comments (to the end of the line), as ONNX's parser does.
size_t firstSignificantChar(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  return i;
}

std::string readFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorKind::Input, path.string(), {}, "is a directory, not a model file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Input, path.string(), {}, "cannot open the model file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::Input, path.string(), {}, "cannot read the model file");
  return std::move(bytes).str();
}

// ONNX's parser recurses once per bracket level (subgraph bodies, nested types such as
// seq(seq(...)), tensor literals) and overflows the stack on deep nesting (10,000 If bodies
// crash it). Brackets are counted first, skipping strings and comments: a subgraph level needs one
// '{', so the nesting limit plus a few levels for the model's own brackets is enough.
void checkBracketDepth(std::string_view text, std::string_view displayName,
                       const LoadOptions& options) {
  const int limit = std::max(options.maxNestingDepth, 0) + 8;
  int depth = 0;
  size_t line = 1, col = 1;
  for (size_t i = 0; i < text.size(); ++i, ++col) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      col = 0;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"') {
      while (i + 1 < text.size() && text[i + 1] != '"') {
        if (text[++i] == '\n') ++line, col = 0;
      }
      ++i;
    } else if (c == '{' || c == '(' || c == '[') {
      if (++depth > limit) {
        throw Error(ErrorKind::Input, std::string(displayName),
                    fmt::format("line {}, column {}", line, col),
                    fmt::format("brackets nest deeper than {} levels (subgraphs may nest {} "
                                "levels: --max-nesting-depth)",
                                limit, options.maxNestingDepth));
      }
    } else if (c == '}' || c == ')' || c == ']') {
      --depth;
    }
  }
}

std::unique_ptr<Model> parseText(std::string_view text, std::string_view displayName,
                                 const std::filesystem::path& baseDir, const LoadOptions& options) {
  checkBracketDepth(text, displayName, options);
  // The parser reads a C string: a NUL byte would silently end the model early.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw Error(ErrorKind::Input, std::string(displayName), {},
                fmt::format("the text holds a NUL byte at offset {}", nul));
  }
  if (firstSignificantChar(text) == text.size()) {
    throw Error(ErrorKind::Input, std::string(displayName), {},
                "holds no model (only whitespace and comments)");
  }
  std::string source(text);
  onnx::ModelProto proto;
  onnx::OnnxParser parser(source.c_str());
  onnx::Common::Status status;
  try {
    status = parser.Parse(proto);
  } catch (const std::exception& e) {
    // std::stol/std::stof inside the parser throw on numbers out of range.
    throw Error(ErrorKind::Input, std::string(displayName), positionText(parser.GetCurrentPos()),
                fmt::format("a number is malformed or out of range ({})", e.what()));
  }
  if (!status.IsOK()) throw parseError(displayName, status.ErrorMessage());
  ParsedModelChecker(displayName).check(proto);

  detail::ImportContext context;
  context.displayName = std::string(displayName);
  context.baseDir = baseDir;
  context.options = options;
  try {
    return detail::importModelProto(std::move(proto), context);
  } catch (const Error& e) {
    throw e.withFile(std::string(displayName));
  }
}

}  // namespace

bool looksLikeModelText(std::string_view bytes) {
  size_t first = firstSignificantChar(bytes);
  if (first >= bytes.size()) return false;
  auto c = static_cast<unsigned char>(bytes[first]);
  if (c != '<' && c != '_' && !std::isalpha(c)) return false;
  std::string_view prefix = bytes.substr(0, 1024);
  for (unsigned char b : prefix) {
    if (b < 0x20 && b != '\n' && b != '\r' && b != '\t' && b != '\f' && b != '\v') return false;
  }
  return true;
}

std::unique_ptr<Model> parseModelText(std::string_view text, std::string_view displayName,
                                      const LoadOptions& options) {
  return parseText(text, displayName, {}, options);
}

std::unique_ptr<Model> loadModelAnyFormat(const std::filesystem::path& path,
                                          const LoadOptions& options) {
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (!ec && options.maxFileBytes != 0 && size > options.maxFileBytes) {
    throw Error(ErrorKind::Input, path.string(), {},
                fmt::format("the file holds {} bytes, over the limit of {} (--max-model-bytes)",
                            size, options.maxFileBytes));
  }
  std::string bytes = readFile(path);
  std::filesystem::path baseDir = path.parent_path();
  std::unique_ptr<Model> model;
  if (looksLikeModelText(bytes)) {
    model = parseText(bytes, path.string(), baseDir, options);
  } else {
    model = loadModelFromBytes(bytes, path.string(), baseDir, options);
  }
  model->sourcePath = path.string();
  return model;
}

}  // namespace qopt
