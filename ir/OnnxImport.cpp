// ModelProto -> IR. Each graph is read in two steps: first every node and its outputs (so that
// names used before they are defined, and names used from inside subgraphs, all resolve), then
// inputs, attributes and subgraphs. Graphs out of topological order are sorted afterwards.
#include <unordered_set>

#include <fmt/format.h>

#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace {

class Importer {
 public:
  Importer(const ImportContext& context, Model& model) : context_(context), model_(model) {}

  void importModel(onnx::ModelProto& proto) {
    model_.sourcePath = context_.displayName;
    if (proto.has_ir_version()) model_.irVersion = proto.ir_version();
    for (const onnx::OperatorSetIdProto& opset : proto.opset_import()) {
      OpsetImport entry{opset.domain(), opset.version()};
      entry.domainPresent = opset.has_domain();
      model_.opsetImports.push_back(std::move(entry));
    }
    if (proto.has_producer_name()) model_.producerName = proto.producer_name();
    if (proto.has_producer_version()) model_.producerVersion = proto.producer_version();
    if (proto.has_domain()) model_.domain = proto.domain();
    if (proto.has_model_version()) model_.modelVersion = proto.model_version();
    if (proto.has_doc_string()) model_.docString = proto.doc_string();
    for (const onnx::StringStringEntryProto& entry : proto.metadata_props()) {
      model_.metadataProps.emplace_back(entry.key(), entry.value());
    }
    for (const onnx::FunctionProto& function : proto.functions()) {
      model_.functions.push_back(serializeOpaque(function));
    }
    for (const onnx::TrainingInfoProto& info : proto.training_info()) {
      model_.trainingInfo.push_back(serializeOpaque(info));
    }
    model_.unknownFields = saveUnknownFields(proto);
    importGraph(*proto.mutable_graph(), model_.graph());
    checkOpsetImports();
  }

 private:
  [[noreturn]] void fail(const std::string& subject, const std::string& cause) const {
    throw Error(ErrorKind::Input, context_.displayName, subject, cause);
  }

  // What the verifier requires of every model: a domain is imported once, and imported wherever
  // a node uses it (ONNX needs the opset to know what an op means).
  void checkOpsetImports() const {
    std::unordered_set<std::string> imported;
    for (const OpsetImport& o : model_.opsetImports) {
      std::string domain = o.domain == "ai.onnx" ? std::string() : o.domain;
      if (!imported.insert(domain).second) {
        fail("opset_import", fmt::format("domain '{}' is imported twice", domain));
      }
    }
    model_.graph().walk([&](const Node* n) {
      if (imported.contains(n->domain())) return;
      fail(n->describe(),
           n->domain().empty()
               ? std::string("the model has no opset import for the default domain (ai.onnx)")
               : fmt::format("the model has no opset import for domain '{}'", n->domain()));
    });
  }

  // ONNX forbids a name defined twice in one scope or shadowing an enclosing scope's name.
  template <class SubjectLike>
  void checkNewName(const Graph& graph, const std::string& name, const SubjectLike& subject) const {
    if (graph.lookupValue(name)) {
      fail(subjectText(subject),
           fmt::format("the value name '{}' is defined more than once", name));
    }
  }
  static std::string subjectText(const std::string& text) { return text; }
  static std::string subjectText(const Subject& subject) { return subject.str(); }
  static std::string subjectText(const Node* node) { return node->describe(); }

  ValueType importType(const onnx::ValueInfoProto& info, const Subject& subject) const {
    if (!info.has_type()) return {};
    return importValueType(info.type(), context_, subject);
  }

  void importGraph(onnx::GraphProto& proto, Graph& graph) {
    graph.name = proto.name();
    if (proto.has_doc_string()) graph.docString = proto.doc_string();
    takeMetadataProps(proto, kGraphMetadataPropsField, graph.metadataProps);
    graph.unknownFields = saveUnknownFields(proto);

    std::unordered_set<std::string> sparseNames;
    for (const onnx::SparseTensorProto& sparse : proto.sparse_initializer()) {
      graph.sparseInitializers.push_back(serializeOpaque(sparse));
      sparseNames.insert(sparse.values().name());
    }
    for (const onnx::TensorAnnotation& annotation : proto.quantization_annotation()) {
      graph.quantizationAnnotations.push_back(serializeOpaque(annotation));
    }

    importInitializers(proto, graph);
    importInputs(proto, graph);

    std::vector<Node*> nodes;
    nodes.reserve(static_cast<size_t>(proto.node_size()));
    for (onnx::NodeProto& nodeProto : *proto.mutable_node()) {
      nodes.push_back(createNode(nodeProto, graph));
    }
    for (int i = 0; i < proto.node_size(); ++i) {
      connectNode(*proto.mutable_node(i), nodes[static_cast<size_t>(i)], graph, sparseNames);
    }

    importOutputs(proto, graph);
    importValueInfos(proto, graph);

    if (context_.options.sortNodes && !graph.isTopologicallySorted()) {
      try {
        graph.topologicalSort();
      } catch (const Error& e) {
        throw e.withFile(context_.displayName);
      }
    }
  }

  void importInitializers(onnx::GraphProto& proto, Graph& graph) {
    for (int i = 0; i < proto.initializer_size(); ++i) {
      onnx::TensorProto& tensorProto = *proto.mutable_initializer(i);
      std::string name = tensorProto.name();
      if (name.empty()) fail(fmt::format("initializer #{}", i), "has no name");
      Subject subject("initializer", name);
      checkNewName(graph, name, subject);
      auto tensor =
          std::make_shared<Tensor>(importTensorProto(std::move(tensorProto), context_, subject));
      Value* value = graph.addInitializer(std::move(tensor));
      if (value->name() != name) {
        // The IR keeps initializer names unique across the whole model, so that passes never
        // create shadowing names; sibling subgraphs reusing one are the only way here.
        fail(subject.str(),
             "the name is also used by an initializer or value of another subgraph; "
             "qopt needs initializer names unique across the model");
      }
    }
  }

  void importInputs(onnx::GraphProto& proto, Graph& graph) {
    for (int i = 0; i < proto.input_size(); ++i) {
      onnx::ValueInfoProto& info = *proto.mutable_input(i);
      const std::string& name = info.name();
      if (name.empty()) fail(fmt::format("graph input #{}", i), "has no name");
      Subject subject("graph input", name);
      ValueType type = importType(info, subject);
      Value* value = graph.findValue(name);
      if (value && value->isInitializer() && !value->isGraphInput()) {
        graph.addInitializerAsInput(value);  // IR < 4 style, or an overridable initializer
        value->setType(std::move(type));
      } else {
        checkNewName(graph, name, subject);
        value = graph.addInput(name, std::move(type));
      }
      keepInterfaceFields(value, info);
    }
  }

  // A graph input's or output's own doc string and unknown fields (most files have none: the
  // value then gets no out-of-line record).
  static void keepInterfaceFields(Value* value, const onnx::ValueInfoProto& info) {
    std::string unknown = saveUnknownFields(info);
    if (info.doc_string().empty() && unknown.empty()) return;
    ValueExtra& extra = value->mutableExtra();
    extra.interfaceDocString = info.doc_string();
    extra.interfaceUnknownFields = std::move(unknown);
  }

  // The NodeProto fields carried through unread, when the file has any.
  static void keepNodeFields(Node* node, onnx::NodeProto& proto) {
    std::vector<std::pair<std::string, std::string>> metadata;
    takeMetadataProps(proto, kNodeMetadataPropsField, metadata);
    std::string unknown = saveUnknownFields(proto);
    if (!proto.has_domain() && proto.doc_string().empty() && metadata.empty() && unknown.empty())
      return;
    NodeExtra& extra = node->mutableExtra();
    if (proto.has_domain()) extra.writtenDomain = proto.domain();
    extra.docString = proto.doc_string();
    extra.metadataProps = std::move(metadata);
    extra.unknownFields = std::move(unknown);
  }

  Node* createNode(onnx::NodeProto& proto, Graph& graph) {
    // op_type is required by ONNX; without it a node means nothing (a file of a million empty
    // nodes is a protobuf bomb, not a model).
    if (proto.op_type().empty()) {
      fail(proto.name().empty() ? fmt::format("node #{}", graph.numNodes())
                                : fmt::format("node '{}'", proto.name()),
           "the node has no op_type");
    }
    Node* node = graph.createEmptyNode(proto.op_type(), proto.domain());
    node->setName(proto.name());
    keepNodeFields(node, proto);
    for (const std::string& output : proto.output()) {
      if (output.empty()) {
        node->addOutput("", /*absent=*/true);
        continue;
      }
      checkNewName(graph, output, static_cast<const Node*>(node));
      node->addOutput(output);
    }
    return node;
  }

  void connectNode(onnx::NodeProto& proto, Node* node, Graph& graph,
                   const std::unordered_set<std::string>& sparseNames) {
    for (int i = 0; i < proto.input_size(); ++i) {
      const std::string& name = proto.input(i);
      if (name.empty()) {
        node->addInput(nullptr);  // an omitted optional input
        continue;
      }
      Value* value = graph.lookupValue(name);
      if (!value) {
        fail(node->describe(),
             sparseNames.contains(name)
                 ? fmt::format("input {} '{}' names a sparse initializer, which qopt cannot use "
                               "as a node input",
                               i, name)
                 : fmt::format("input {} '{}' is not defined", i, name));
      }
      node->addInput(value);
    }
    for (onnx::AttributeProto& attrProto : *proto.mutable_attribute()) {
      node->addAttr(importAttribute(attrProto, node));
    }
  }

  std::unique_ptr<Graph> importSubgraph(onnx::GraphProto& proto, Node* node,
                                        const std::string& attrName) {
    auto graph = std::make_unique<Graph>(&model_, node);
    if (graph->depth() > context_.options.maxNestingDepth) {
      fail(node->describe(), fmt::format("attribute '{}': subgraphs nest deeper than {} levels",
                                         attrName, context_.options.maxNestingDepth));
    }
    importGraph(proto, *graph);
    return graph;
  }

  Attribute importAttribute(onnx::AttributeProto& proto, Node* node) {
    Attribute attr;
    attr.name = proto.name();
    Subject subject(*node, attr.name);
    if (proto.has_type()) attr.kind = static_cast<AttrKind>(proto.type());
    attr.docString = proto.doc_string();
    attr.refAttrName = proto.ref_attr_name();
    if (proto.has_f()) {
      attr.f = proto.f();
      attr.presentFields |= 1;
    }
    if (proto.has_i()) {
      attr.i = proto.i();
      attr.presentFields |= 2;
    }
    if (proto.has_s()) {
      attr.s = std::move(*proto.mutable_s());
      attr.presentFields |= 4;
    }
    if (proto.has_t()) {
      attr.t = std::make_shared<Tensor>(
          importTensorProto(std::move(*proto.mutable_t()), context_, subject));
      attr.presentFields |= 8;
    }
    if (proto.has_g()) {
      attr.g = importSubgraph(*proto.mutable_g(), node, attr.name);
      attr.presentFields |= 16;
    }
    if (proto.has_sparse_tensor() && proto.has_tp()) {
      fail(subject.str(), "carries both sparse_tensor and tp");
    }
    if (proto.has_sparse_tensor()) {
      attr.opaqueSingle = serializeOpaque(proto.sparse_tensor());
      attr.presentFields |= 32;
    }
    if (proto.has_tp()) {
      attr.opaqueSingle = serializeOpaque(proto.tp());
      attr.presentFields |= 64;
    }
    attr.floats.assign(proto.floats().begin(), proto.floats().end());
    attr.ints.assign(proto.ints().begin(), proto.ints().end());
    for (std::string& s : *proto.mutable_strings()) attr.strings.push_back(std::move(s));
    for (onnx::TensorProto& tensor : *proto.mutable_tensors()) {
      attr.tensors.push_back(
          std::make_shared<Tensor>(importTensorProto(std::move(tensor), context_, subject)));
    }
    for (onnx::GraphProto& graph : *proto.mutable_graphs()) {
      attr.graphs.push_back(importSubgraph(graph, node, attr.name));
    }
    // One opaque list: which field it came from is told by the attribute's type.
    if (!proto.sparse_tensors().empty()) {
      if (attr.kind != AttrKind::SparseTensors || !proto.type_protos().empty()) {
        fail(subject.str(), "carries sparse_tensors but is not of type SPARSE_TENSORS");
      }
      for (const auto& sparse : proto.sparse_tensors()) {
        attr.opaqueList.push_back(serializeOpaque(sparse));
      }
    }
    if (!proto.type_protos().empty()) {
      if (attr.kind != AttrKind::TypeProtos) {
        fail(subject.str(), "carries type_protos but is not of type TYPE_PROTOS");
      }
      for (const auto& tp : proto.type_protos()) attr.opaqueList.push_back(serializeOpaque(tp));
    }
    attr.unknownFields = saveUnknownFields(proto);
    return attr;
  }

  void importOutputs(onnx::GraphProto& proto, Graph& graph) {
    for (int i = 0; i < proto.output_size(); ++i) {
      const onnx::ValueInfoProto& info = proto.output(i);
      const std::string& name = info.name();
      if (name.empty()) fail(fmt::format("graph output #{}", i), "has no name");
      Subject subject("graph output", name);
      Value* value = graph.lookupValue(name);
      if (!value) fail(subject.str(), "is not defined by any node, input or initializer");
      // The IR holds one type per value: a graph input, or a value listed as output before,
      // keeps the type read first. An initializer's type is only derived from its tensor, so
      // the output states it. Values of enclosing graphs keep their own.
      bool firstTyping = !value->isGraphInput() && !value->isGraphOutput();
      graph.addOutput(value);
      if (!firstTyping || value->graph() != &graph) continue;
      value->setType(importType(info, subject));
      keepInterfaceFields(value, info);
    }
  }

  void importValueInfos(onnx::GraphProto& proto, Graph& graph) {
    for (int i = 0; i < proto.value_info_size(); ++i) {
      const onnx::ValueInfoProto& info = proto.value_info(i);
      Value* value = info.name().empty() ? nullptr : graph.findValue(info.name());
      if (!value || value->inValueInfo || value->graph() != &graph) {
        graph.orphanValueInfos.push_back(serializeOpaque(info));
        graph.valueInfoOrder.emplace_back();
        continue;
      }
      ValueType type = importType(info, Subject("value_info", info.name()));
      bool typedElsewhere =
          value->isGraphInput() || value->isGraphOutput() || value->isInitializer();
      if (typedElsewhere && !(type == value->type())) {
        // The interface or the tensor already states another type: keep this entry as it was.
        graph.orphanValueInfos.push_back(serializeOpaque(info));
        graph.valueInfoOrder.emplace_back();
        continue;
      }
      graph.valueInfoOrder.push_back(info.name());
      value->setType(std::move(type));
      value->inValueInfo = true;
      std::string unknown = saveUnknownFields(info);
      if (!info.doc_string().empty() || !unknown.empty()) {
        ValueExtra& extra = value->mutableExtra();
        extra.docString = info.doc_string();
        extra.valueInfoUnknownFields = std::move(unknown);
      }
    }
  }

  const ImportContext& context_;
  Model& model_;
};

}  // namespace

std::unique_ptr<Model> importModelProto(onnx::ModelProto&& proto, const ImportContext& context) {
  auto model = std::make_unique<Model>();
  Importer(context, *model).importModel(proto);
  return model;
}

}  // namespace qopt::detail
