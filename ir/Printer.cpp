#include "qopt/ir/Printer.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/QuotedString.h"

namespace qopt {

namespace {

// ---------------------------------------------------------------------------------------------
// Scalars and names

std::string quotedText(std::string_view text) {
  std::string out;
  appendQuoted(out, text, /*backspaceAndFormFeed=*/false, [](std::string& o, unsigned char c) {
    if (c < 0x20 || c >= 0x7F) {
      o += fmt::format("\\x{:02x}", c);
    } else {
      o += static_cast<char>(c);
    }
  });
  return out;
}

bool isBareName(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    if (c <= 0x20 || c >= 0x7F || std::strchr("\"\\,()[]{}#=%", c) != nullptr) return false;
  }
  return true;
}

std::string nameText(std::string_view name) {
  return isBareName(name) ? std::string(name) : quotedText(name);
}

std::string valueRef(const Value* value) {
  if (!value) return "_";
  return "%" + nameText(value->name());
}

// Floats print in their shortest round-trip form, always with a point or an exponent so that an
// integer-valued float attribute cannot be mistaken for an int one.
std::string floatText(std::string text) {
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

std::string formatFloat(float value) {
  return floatText(fmt::format("{}", value));
}
std::string formatDouble(double value) {
  return floatText(fmt::format("{}", value));
}

template <class T, class Fn>
std::string joined(const std::vector<T>& items, Fn&& fn, std::string_view separator = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += fn(items[i]);
  }
  return out;
}

// Attribute lists print compactly, like shapes: kernel_shape=[3,3].
template <class T, class Fn>
std::string listText(const std::vector<T>& items, Fn&& fn) {
  return "[" + joined(items, std::forward<Fn>(fn), ",") + "]";
}

// ---------------------------------------------------------------------------------------------
// Types

std::string shapeText(const std::vector<Dim>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ',';
    const Dim& d = dims[i];
    if (d.value) {
      out += std::to_string(*d.value);
    } else if (!d.param.empty()) {
      out += nameText(d.param);
    } else {
      out += '?';
    }
  }
  return out + "]";
}

std::string elemTypeText(int32_t elemType) {
  auto type = dataTypeFromInt(elemType);
  return type ? std::string(dataTypeName(*type)) : fmt::format("TYPE{}", elemType);
}

std::string protoShapeText(const onnx::TensorShapeProto& shape) {
  std::vector<Dim> dims;
  for (const auto& d : shape.dim()) {
    if (d.has_dim_value()) {
      dims.push_back(Dim::known(d.dim_value()));
    } else {
      dims.push_back(Dim::symbolic(d.dim_param()));
    }
  }
  return shapeText(dims);
}

std::string typeProtoText(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto& t = type.tensor_type();
      return elemTypeText(t.elem_type()) + (t.has_shape() ? protoShapeText(t.shape()) : "");
    }
    case onnx::TypeProto::kSparseTensorType: {
      const auto& t = type.sparse_tensor_type();
      return "sparse_tensor(" + elemTypeText(t.elem_type()) +
             (t.has_shape() ? protoShapeText(t.shape()) : "") + ")";
    }
    case onnx::TypeProto::kSequenceType:
      return "seq(" + typeProtoText(type.sequence_type().elem_type()) + ")";
    case onnx::TypeProto::kMapType:
      return "map(" + elemTypeText(type.map_type().key_type()) + ", " +
             typeProtoText(type.map_type().value_type()) + ")";
    case onnx::TypeProto::kOptionalType:
      return "optional(" + typeProtoText(type.optional_type().elem_type()) + ")";
    default:
      return "?";
  }
}

std::string opaqueTypeText(const std::string& serialized) {
  onnx::TypeProto proto;
  if (!proto.ParseFromString(serialized)) return "<unparsable type>";
  return typeProtoText(proto);
}

std::string typedValue(const Value* value) {
  std::string out = valueRef(value);
  if (value && value->type().kind != ValueType::Kind::Unknown) {
    out += ':' + printType(value->type());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tensors

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string tensorTypeText(const Tensor& tensor) {
  std::string out(dataTypeName(tensor.dataType()));
  out += '[';
  for (size_t i = 0; i < tensor.dims().size(); ++i) {
    if (i) out += ',';
    out += std::to_string(tensor.dims()[i]);
  }
  return out + "]";
}

template <class T>
T loadElement(std::span<const std::byte> bytes, uint64_t index) {
  T v;
  std::memcpy(&v, bytes.data() + index * sizeof(T), sizeof(T));
  return v;
}

std::string elementText(const Tensor& tensor, std::span<const std::byte> bytes, uint64_t i) {
  DataType type = tensor.dataType();
  switch (type) {
    case DataType::Float:
      return formatFloat(loadElement<float>(bytes, i));
    case DataType::Double:
      return formatDouble(loadElement<double>(bytes, i));
    case DataType::Int64:
      return std::to_string(loadElement<int64_t>(bytes, i));
    case DataType::UInt64:
      return std::to_string(loadElement<uint64_t>(bytes, i));
    case DataType::Bool:
      return loadElement<uint8_t>(bytes, i) != 0 ? "true" : "false";
    default:
      break;
  }
  double v = tensor.doubleAt(i);
  // Every value of the narrower float types is exactly a float: print it as one.
  if (isFloatingPoint(type)) return formatFloat(static_cast<float>(v));
  return std::to_string(static_cast<int64_t>(v));
}

std::string tensorValuesText(const Tensor& tensor, const PrintOptions& options) {
  DataType type = tensor.dataType();
  uint64_t count = tensor.numElements();
  bool complex = type == DataType::Complex64 || type == DataType::Complex128;
  bool inlineValues = count <= options.maxInlineElements && !complex &&
                      type != DataType::Undefined &&
                      static_cast<int32_t>(type) <= kMaxKnownDataType;
  if (!inlineValues) return fmt::format("#{:016x}", tensor.contentHash());
  if (type == DataType::String) {
    const auto& strings = tensor.strings();
    if (strings.size() != count) {
      return fmt::format("<unreadable: holds {} strings, its shape needs {}>", strings.size(),
                         count);
    }
    return "{" + joined(strings, [](const std::string& s) { return quotedText(s); }) + "}";
  }
  auto bytes = tensor.rawBytes();
  auto needed = dataTypeStorageBytes(type, count);
  if (!needed || bytes.size() != *needed) {
    return fmt::format("<unreadable: holds {} bytes, its shape needs {}>", bytes.size(),
                       needed.value_or(0));
  }
  std::string out = "{";
  for (uint64_t i = 0; i < count; ++i) {
    if (i) out += ", ";
    out += elementText(tensor, bytes, i);
  }
  return out + "}";
}

std::string externalText(const Tensor& tensor) {
  const auto& ext = tensor.externalData();
  if (!ext) return {};
  std::string out = " external(" + quotedText(ext->location);
  if (ext->offset) out += fmt::format(", offset={}", *ext->offset);
  if (ext->length) out += fmt::format(", length={}", *ext->length);
  return out + ")";
}

// ---------------------------------------------------------------------------------------------
// Attributes

std::string sparseTensorText(const std::string& serialized) {
  return fmt::format("sparse_tensor(<{} bytes> #{:016x})", serialized.size(), fnv1a(serialized));
}

std::string attributeValueText(const Attribute& a, const PrintOptions& options) {
  if (!a.refAttrName.empty()) return "@" + nameText(a.refAttrName);
  switch (a.kind) {
    case AttrKind::Float:
      return formatFloat(a.f);
    case AttrKind::Int:
      return std::to_string(a.i);
    case AttrKind::String:
      return quotedText(a.s);
    case AttrKind::Tensor:
      return a.t ? printTensor(*a.t, options) : "<missing tensor>";
    case AttrKind::Floats:
      return listText(a.floats, formatFloat);
    case AttrKind::Ints:
      return listText(a.ints, [](int64_t v) { return std::to_string(v); });
    case AttrKind::Strings:
      return listText(a.strings, [](const std::string& s) { return quotedText(s); });
    case AttrKind::Tensors:
      return listText(a.tensors, [&](const TensorPtr& t) {
        return t ? printTensor(*t, options) : std::string("<missing tensor>");
      });
    case AttrKind::SparseTensor:
      return sparseTensorText(a.opaqueSingle);
    case AttrKind::SparseTensors:
      return listText(a.opaqueList, sparseTensorText);
    case AttrKind::TypeProto:
      return opaqueTypeText(a.opaqueSingle);
    case AttrKind::TypeProtos:
      return listText(a.opaqueList, opaqueTypeText);
    case AttrKind::Graph:
      return a.g ? "<graph>" : "<missing graph>";
    case AttrKind::Graphs:
      return "[]";  // non-empty lists print as blocks
    case AttrKind::Undefined:
      break;
  }
  return "<undefined>";
}

// Graph attributes print as indented blocks after the node's line instead of inline.
bool printsAsBlock(const Attribute& a) {
  if (!a.refAttrName.empty()) return false;
  return (a.kind == AttrKind::Graph && a.g) || (a.kind == AttrKind::Graphs && !a.graphs.empty());
}

std::vector<const Attribute*> sortedAttributes(const Node& node) {
  std::vector<const Attribute*> attrs;
  for (const Attribute& a : node.attributes()) attrs.push_back(&a);
  std::stable_sort(attrs.begin(), attrs.end(),
                   [](const Attribute* x, const Attribute* y) { return x->name < y->name; });
  return attrs;
}

// ---------------------------------------------------------------------------------------------
// Graphs

class GraphPrinter {
 public:
  GraphPrinter(std::string& out, const PrintOptions& options) : out_(out), options_(options) {}

  void graph(const Graph& g, int indent, std::string_view label) {
    line(indent, fmt::format("{}graph{}{} {{", label, g.name.empty() ? "" : " ",
                             g.name.empty() ? "" : nameText(g.name)));
    for (const Value* in : g.inputs()) line(indent + 2, "input " + typedValue(in));
    for (const Value* init : g.initializers()) {
      line(indent + 2, "initializer " + valueRef(init) + " = " +
                           (init->initializer() ? printTensor(*init->initializer(), options_)
                                                : std::string("<missing tensor>")));
    }
    for (const Node* n : g.nodes()) node(*n, indent + 2);
    for (const Value* o : g.outputs()) line(indent + 2, "output " + typedValue(o));
    line(indent, "}");
  }

  void node(const Node& n, int indent) {
    line(indent, printNode(n, options_));
    for (const Attribute* a : sortedAttributes(n)) {
      if (!printsAsBlock(*a)) continue;
      if (a->kind == AttrKind::Graph) {
        graph(*a->g, indent + 2, nameText(a->name) + ": ");
        continue;
      }
      for (size_t i = 0; i < a->graphs.size(); ++i) {
        graph(*a->graphs[i], indent + 2, fmt::format("{}[{}]: ", nameText(a->name), i));
      }
    }
  }

 private:
  void line(int indent, std::string_view text) {
    out_.append(static_cast<size_t>(indent), ' ');
    out_ += text;
    out_ += '\n';
  }

  std::string& out_;
  const PrintOptions& options_;
};

std::string modelHeader(const Model& model) {
  std::vector<std::string> fields;
  if (model.irVersion) fields.push_back(fmt::format("ir_version={}", *model.irVersion));
  if (model.producerName) fields.push_back("producer_name=" + quotedText(*model.producerName));
  if (model.producerVersion) {
    fields.push_back("producer_version=" + quotedText(*model.producerVersion));
  }
  if (model.domain) fields.push_back("domain=" + quotedText(*model.domain));
  if (model.modelVersion) fields.push_back(fmt::format("model_version={}", *model.modelVersion));
  if (model.docString) fields.push_back("doc_string=" + quotedText(*model.docString));
  return "model {" + joined(fields, [](const std::string& s) { return s; }) + "}\n";
}

std::string opsetLine(const Model& model) {
  std::vector<OpsetImport> opsets = model.opsetImports;
  std::stable_sort(opsets.begin(), opsets.end(),
                   [](const OpsetImport& a, const OpsetImport& b) { return a.domain < b.domain; });
  return "opset_import {" +
         joined(opsets,
                [](const OpsetImport& o) {
                  return fmt::format("{}: {}", quotedText(o.domain), o.version);
                }) +
         "}\n";
}

std::string functionLine(const std::string& serialized) {
  onnx::FunctionProto proto;
  if (!proto.ParseFromString(serialized)) {
    return fmt::format("function <unparsable {} bytes>\n", serialized.size());
  }
  std::string domain = proto.domain().empty() ? "" : nameText(proto.domain()) + "::";
  return "function " + domain + nameText(proto.name()) + "\n";
}

}  // namespace

std::string printType(const ValueType& type) {
  switch (type.kind) {
    case ValueType::Kind::Unknown:
      return "?";
    case ValueType::Kind::Tensor:
      return std::string(dataTypeName(type.elemType)) + (type.shape ? shapeText(*type.shape) : "");
    case ValueType::Kind::SparseTensor:
      return "sparse_tensor(" + std::string(dataTypeName(type.elemType)) +
             (type.shape ? shapeText(*type.shape) : "") + ")";
    case ValueType::Kind::Other:
      return opaqueTypeText(type.opaque);
  }
  return "?";
}

std::string printTensor(const Tensor& tensor, const PrintOptions& options) {
  std::string head = tensorTypeText(tensor);
  std::string body;
  try {
    body = tensorValuesText(tensor, options);
  } catch (const Error& e) {
    body = "<unreadable: " + e.cause() + ">";
  }
  return head + " " + body + externalText(tensor);
}

std::string printNode(const Node& node, const PrintOptions& options) {
  std::string out;
  if (node.numOutputs() > 0) {
    std::vector<const Value*> outputs(node.outputs().begin(), node.outputs().end());
    out += joined(outputs,
                  [](const Value* v) { return v->isAbsent() ? std::string("_") : typedValue(v); });
    out += " = ";
  }
  if (!node.domain().empty()) out += nameText(node.domain()) + "::";
  out += nameText(node.opType());
  std::vector<const Value*> inputs(node.inputs().begin(), node.inputs().end());
  out += "(" + joined(inputs, valueRef) + ")";
  std::vector<std::string> attrs;
  for (const Attribute* a : sortedAttributes(node)) {
    if (printsAsBlock(*a)) continue;
    attrs.push_back(nameText(a->name) + "=" + attributeValueText(*a, options));
  }
  if (!attrs.empty()) out += " {" + joined(attrs, [](const std::string& s) { return s; }) + "}";
  if (!node.name().empty()) out += "  # name: " + nameText(node.name());
  return out;
}

std::string printGraph(const Graph& graph, const PrintOptions& options) {
  std::string out;
  GraphPrinter(out, options).graph(graph, 0, "");
  return out;
}

std::string printModel(const Model& model, const PrintOptions& options) {
  std::string out = modelHeader(model) + opsetLine(model);
  if (!model.metadataProps.empty()) {
    out += "metadata {" +
           joined(model.metadataProps,
                  [](const std::pair<std::string, std::string>& kv) {
                    return quotedText(kv.first) + ": " + quotedText(kv.second);
                  }) +
           "}\n";
  }
  for (const std::string& f : model.functions) out += functionLine(f);
  GraphPrinter(out, options).graph(model.graph(), 0, "");
  return out;
}

void printModel(const Model& model, std::ostream& out, const PrintOptions& options) {
  out << printModel(model, options);
}

}  // namespace qopt
