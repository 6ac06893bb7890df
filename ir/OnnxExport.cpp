// IR -> ModelProto. Writes back exactly what import read (presence of optional fields, unknown
// fields, opaque pieces) and derives the rest in a fixed order, so the same model always gives
// the same bytes.
#include <fmt/format.h>

#include <unordered_set>

#include "ExternalData.h"
#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace {

class Exporter {
 public:
  explicit Exporter(ExportContext& context) : context_(context) {}

  void exportModel(const Model& model, onnx::ModelProto& proto) {
    if (model.irVersion) proto.set_ir_version(*model.irVersion);
    for (const OpsetImport& opset : model.opsetImports) {
      onnx::OperatorSetIdProto* entry = proto.add_opset_import();
      if (opset.domainPresent || !opset.domain.empty()) entry->set_domain(opset.domain);
      entry->set_version(opset.version);
    }
    if (model.producerName) proto.set_producer_name(*model.producerName);
    if (model.producerVersion) proto.set_producer_version(*model.producerVersion);
    if (model.domain) proto.set_domain(*model.domain);
    if (model.modelVersion) proto.set_model_version(*model.modelVersion);
    if (model.docString) proto.set_doc_string(*model.docString);
    exportGraph(model.graph(), *proto.mutable_graph());
    for (const auto& [key, value] : model.metadataProps) {
      onnx::StringStringEntryProto* entry = proto.add_metadata_props();
      entry->set_key(key);
      entry->set_value(value);
    }
    for (size_t i = 0; i < model.trainingInfo.size(); ++i) {
      parseOpaque(model.trainingInfo[i], *proto.add_training_info(),
                  fmt::format("training_info #{}", i));
    }
    for (size_t i = 0; i < model.functions.size(); ++i) {
      parseOpaque(model.functions[i], *proto.add_functions(), fmt::format("function #{}", i));
    }
    restoreUnknownFields(proto, model.unknownFields);
  }

 private:
  static void exportValueInfo(const std::string& name, const ValueType& type,
                              const std::string& doc, const std::string& unknown,
                              onnx::ValueInfoProto& proto) {
    proto.set_name(name);
    if (type.kind != ValueType::Kind::Unknown) exportValueType(type, *proto.mutable_type());
    if (!doc.empty()) proto.set_doc_string(doc);
    restoreUnknownFields(proto, unknown);
  }

  static void exportInterface(const Value& value, onnx::ValueInfoProto& proto) {
    exportValueInfo(value.name(), value.type(), value.extra().interfaceDocString,
                    value.extra().interfaceUnknownFields, proto);
  }

  static void exportValueInfoEntry(const Value& value, onnx::GraphProto& proto) {
    if (!value.inValueInfo) return;
    exportValueInfo(value.name(), value.type(), value.extra().docString,
                    value.extra().valueInfoUnknownFields, *proto.add_value_info());
  }

  // value_info in the order the file had, orphans in their places; then what passes typed since:
  // graph inputs, initializers, node outputs in node order.
  static void exportValueInfos(const Graph& graph, onnx::GraphProto& proto) {
    std::unordered_set<const Value*> written;
    size_t orphan = 0;
    auto writeOrphan = [&] {
      parseOpaque(graph.orphanValueInfos[orphan], *proto.add_value_info(),
                  fmt::format("value_info #{}", orphan));
      ++orphan;
    };
    auto write = [&](const Value* value) {
      if (value->inValueInfo && written.insert(value).second) exportValueInfoEntry(*value, proto);
    };
    for (const std::string& name : graph.valueInfoOrder) {
      if (name.empty()) {
        if (orphan < graph.orphanValueInfos.size()) writeOrphan();
        continue;
      }
      const Value* value = graph.findValue(name);
      if (value != nullptr && value->graph() == &graph) write(value);
    }
    for (Value* value : graph.inputs()) {
      if (!value->isInitializer()) write(value);
    }
    for (Value* value : graph.initializers()) write(value);
    for (Node* node : graph.nodes()) {
      for (Value* value : node->outputs()) write(value);
    }
    while (orphan < graph.orphanValueInfos.size()) writeOrphan();
  }

  void exportGraph(const Graph& graph, onnx::GraphProto& proto) {
    for (Node* node : graph.nodes()) exportNode(*node, *proto.add_node());
    if (!graph.name.empty()) proto.set_name(graph.name);
    for (Value* value : graph.initializers()) {
      Subject subject("initializer", value->name());
      exportTensorProto(*value->initializer(), *proto.add_initializer(), context_, &value->name(),
                        &subject);
    }
    for (size_t i = 0; i < graph.sparseInitializers.size(); ++i) {
      parseOpaque(graph.sparseInitializers[i], *proto.add_sparse_initializer(),
                  fmt::format("sparse initializer #{}", i));
    }
    if (graph.docString) proto.set_doc_string(*graph.docString);
    for (Value* value : graph.inputs()) exportInterface(*value, *proto.add_input());
    for (Value* value : graph.outputs()) exportInterface(*value, *proto.add_output());

    exportValueInfos(graph, proto);

    for (size_t i = 0; i < graph.quantizationAnnotations.size(); ++i) {
      parseOpaque(graph.quantizationAnnotations[i], *proto.add_quantization_annotation(),
                  fmt::format("quantization annotation #{}", i));
    }
    restoreUnknownFields(proto, graph.unknownFields, kGraphMetadataPropsField, graph.metadataProps);
  }

  static void exportDomain(const Node& node, onnx::NodeProto& proto) {
    const std::string& domain = node.domain();
    if (const std::optional<std::string>& writtenDomain = node.extra().writtenDomain) {
      const std::string& written = *writtenDomain;
      bool stillNamesIt = written == domain || (written == "ai.onnx" && domain.empty());
      if (stillNamesIt) {
        proto.set_domain(written);
        return;
      }
    }
    if (!domain.empty()) proto.set_domain(domain);
  }

  void exportNode(const Node& node, onnx::NodeProto& proto) {
    for (Value* input : node.inputs()) proto.add_input(input ? input->name() : std::string());
    for (Value* output : node.outputs()) proto.add_output(output->name());
    if (!node.name().empty()) proto.set_name(node.name());
    if (!node.opType().empty()) proto.set_op_type(node.opType());
    exportDomain(node, proto);
    for (const Attribute& attr : node.attributes()) {
      exportAttribute(attr, node, *proto.add_attribute());
    }
    const NodeExtra& extra = node.extra();
    if (!extra.docString.empty()) proto.set_doc_string(extra.docString);
    restoreUnknownFields(proto, extra.unknownFields, kNodeMetadataPropsField, extra.metadataProps);
  }

  void exportAttribute(const Attribute& attr, const Node& node, onnx::AttributeProto& proto) {
    Subject subject(node, attr.name);
    std::string_view what = attr.name;  // names opaque pieces in (internal) parse errors
    proto.set_name(attr.name);
    if (!attr.refAttrName.empty()) proto.set_ref_attr_name(attr.refAttrName);
    if (!attr.docString.empty()) proto.set_doc_string(attr.docString);
    if (attr.kind != AttrKind::Undefined) {
      proto.set_type(static_cast<onnx::AttributeProto_AttributeType>(attr.kind));
    }
    uint32_t present = attr.presentFields;
    if (present & 1) proto.set_f(attr.f);
    if (present & 2) proto.set_i(attr.i);
    if (present & 4) proto.set_s(attr.s);
    if ((present & 8) && attr.t) {
      exportTensorProto(*attr.t, *proto.mutable_t(), context_, nullptr, &subject);
    }
    if ((present & 16) && attr.g) exportGraph(*attr.g, *proto.mutable_g());
    if (present & 32) parseOpaque(attr.opaqueSingle, *proto.mutable_sparse_tensor(), what);
    if (present & 64) parseOpaque(attr.opaqueSingle, *proto.mutable_tp(), what);
    proto.mutable_floats()->Add(attr.floats.begin(), attr.floats.end());
    proto.mutable_ints()->Add(attr.ints.begin(), attr.ints.end());
    for (const std::string& s : attr.strings) proto.add_strings(s);
    for (const TensorPtr& tensor : attr.tensors) {
      exportTensorProto(*tensor, *proto.add_tensors(), context_, nullptr, &subject);
    }
    for (const auto& graph : attr.graphs) exportGraph(*graph, *proto.add_graphs());
    for (const std::string& item : attr.opaqueList) {
      if (attr.kind == AttrKind::SparseTensors) {
        parseOpaque(item, *proto.add_sparse_tensors(), what);
      } else if (attr.kind == AttrKind::TypeProtos) {
        parseOpaque(item, *proto.add_type_protos(), what);
      }
    }
    restoreUnknownFields(proto, attr.unknownFields);
  }

  ExportContext& context_;
};

}  // namespace

void exportModelProto(const Model& model, onnx::ModelProto& proto, ExportContext& context) {
  try {
    Exporter(context).exportModel(model, proto);
  } catch (const Error& e) {
    throw e.withFile(model.sourcePath);
  }
}

void exportModelProto(const Model& model, onnx::ModelProto& proto) {
  ProtoLoan copying(/*lend=*/false);  // `proto` outlives this call: copy every byte
  auto placer = makeInlinePlacer();
  ExportContext context{copying, *placer};
  exportModelProto(model, proto, context);
}

}  // namespace qopt::detail
