// The graph IR: Value, Node, Graph and Model.
//
// SSA: every Value has at most one producer (a node output), or is a graph input or an
// initializer; each Value knows its uses. Nodes sit in an intrusive list kept in a valid
// topological order (import sorts graphs that are not). Subgraphs (If/Loop/Scan bodies) are
// graph-valued attributes; their nodes may use values of enclosing graphs directly.
//
// Names are unique in a graph and the graphs it encloses (ONNX forbids shadowing; sibling
// subgraphs may repeat one), and names the IR makes are unique model-wide; the
// model's ValueIndex finds values by name and generates fresh names in amortised O(1). Changes that
// matter to bookkeeping (replace-all-uses, rename, erase) are announced to ModelObservers so that
// the pass manager can keep its name map without passes having to remember to.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "qopt/ir/Attribute.h"
#include "qopt/ir/InlineVector.h"
#include "qopt/ir/NameTable.h"
#include "qopt/ir/SlotArena.h"
#include "qopt/ir/Tensor.h"
#include "qopt/ir/Type.h"
#include "qopt/ir/ValueIndex.h"

namespace qopt {

class Graph;
class Model;
class Node;

/// What a ValueInfoProto says of a value beyond its name and type, kept for export.
struct ValueExtra {
  std::string docString;
  std::string valueInfoUnknownFields;  // fields qopt does not model, verbatim
  /// Graph inputs/outputs are ValueInfoProtos too; their own doc/unknown fields.
  std::string interfaceDocString;
  std::string interfaceUnknownFields;
};

/// The fields of a NodeProto that qopt carries through without interpreting them.
struct NodeExtra {
  std::string docString;
  std::vector<std::pair<std::string, std::string>> metadataProps;
  std::string unknownFields;
  /// The domain field exactly as the file wrote it (nullopt: the field was absent). Export
  /// writes it back while it still names domain(), so "ai.onnx" and an explicit "" survive.
  std::optional<std::string> writtenDomain;
};

struct Use {
  Node* user;
  uint32_t index;  // which input of `user`
  bool operator==(const Use&) const = default;
};

class Value {
 public:
  enum class Kind : uint8_t { GraphInput, Initializer, NodeOutput };

  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  const std::string& name() const { return name_; }
  /// Renames; the new name must be unused in the model. Announced to observers.
  void setName(std::string name);
  /// An omitted optional output (ONNX's empty name): a placeholder nothing can use.
  bool isAbsent() const { return name_.empty(); }

  Kind kind() const { return kind_; }
  bool isGraphInput() const;
  bool isInitializer() const { return kind_ == Kind::Initializer; }
  bool isGraphOutput() const { return outputRefs_ > 0; }
  Graph* graph() const { return graph_; }
  Node* producer() const { return producer_; }
  uint32_t outputIndex() const { return outputIndex_; }

  std::span<const Use> uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  /// Distinct consumer nodes, in use order.
  std::vector<Node*> users() const;

  const ValueType& type() const { return type_; }
  ValueType& mutableType() { return type_; }
  void setType(ValueType type) { type_ = std::move(type); }

  /// The tensor of an initializer (null for other values).
  const TensorPtr& initializer() const { return initializer_; }
  void setInitializer(TensorPtr tensor);

  /// Redirects every node use and graph-output reference of this value to `other`. When this
  /// value is a graph output and `other` is not an interface value, `other` takes this value's
  /// name so that the model's interface keeps its names. Announced to observers.
  void replaceAllUsesWith(Value* other);
  /// As replaceAllUsesWith, but leaves uses by `except` alone.
  void replaceAllUsesExcept(Value* other, const Node* except);

 private:
  friend class Graph;
  friend class Node;
  friend class Model;
  friend class SlotArena<Value>;
  Value(Graph* graph, Kind kind, std::string name);
  void addUse(Node* user, uint32_t index) { uses_.push_back({user, index}); }
  void removeUse(Node* user, uint32_t index);

  // What passes read for every value they visit comes first: on a model too large for the
  // caches a visit then costs one cache line, and a walk streams few bytes per value. Most
  // values have one or two uses, kept inline (no heap block to allocate, free or miss on).
  // What only import and export read lives out of line (ValueExtra).
  Graph* graph_;
  Node* producer_ = nullptr;
  InlineVector<Use, 2> uses_;
  uint32_t outputIndex_ = 0;
  uint32_t outputRefs_ = 0;  // times listed in the graph's outputs
  uint32_t slot_ = 0;        // slot in the graph's value arena
  Kind kind_;
  bool alsoGraphInput_ = false;  // an initializer also listed as a graph input (IR < 4 style)
  std::string name_;
  TensorPtr initializer_;
  size_t initializerSlot_ = 0;  // position in the graph's initializer list (O(1) erase)
  ValueType type_;
  std::unique_ptr<ValueExtra> extra_;

 public:
  /// ValueInfoProto bookkeeping: whether the model lists this value in value_info.
  bool inValueInfo = false;
  /// The value's ValueInfoProto fields beyond name and type (empty unless a file had them).
  const ValueExtra& extra() const;
  ValueExtra& mutableExtra();
};

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();

  const std::string& opType() const { return opType_; }
  void setOpType(std::string op) { opType_ = std::move(op); }
  /// "" for the default ONNX domain ("ai.onnx" is normalised to "").
  const std::string& domain() const { return domain_; }
  void setDomain(std::string domain);
  bool is(std::string_view op, std::string_view domain = "") const {
    return opType_ == op && domain_ == domain;
  }
  const std::string& name() const { return name_; }
  void setName(std::string name);
  /// "node 'conv1' (Conv)" or "node #12 (Conv)" when unnamed: for messages.
  std::string describe() const;

  // Inputs: nullptr stands for an omitted optional input (ONNX's "").
  std::span<Value* const> inputs() const { return inputs_; }
  size_t numInputs() const { return inputs_.size(); }
  /// nullptr when `i` is past the end or the input is omitted.
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  void setInput(size_t i, Value* value);
  void addInput(Value* value);
  void insertInput(size_t i, Value* value);
  void removeInput(size_t i);
  void removeAllInputs();

  std::span<Value* const> outputs() const { return outputs_; }
  size_t numOutputs() const { return outputs_.size(); }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  /// Adds an output named `name` (a fresh name from the model when empty and !absent).
  Value* addOutput(std::string name = {}, bool absent = false);
  /// Removes the last outputs down to `count`; they must have no uses.
  void truncateOutputs(size_t count);

  const std::vector<Attribute>& attributes() const { return attributes_; }
  std::vector<Attribute>& mutableAttributes() {
    mayHaveSubgraphs_ = true;  // the caller may add or fill a graph attribute
    return attributes_;
  }
  const Attribute* findAttr(std::string_view name) const;
  Attribute* findAttr(std::string_view name);
  bool hasAttr(std::string_view name) const { return findAttr(name) != nullptr; }
  /// Replaces the attribute of the same name or appends.
  void setAttr(Attribute attr);
  /// Appends, even when an attribute of the same name exists (import keeps what the file says).
  void addAttr(Attribute attr);
  bool removeAttr(std::string_view name);
  int64_t attrInt(std::string_view name, int64_t fallback) const;
  float attrFloat(std::string_view name, float fallback) const;
  std::string attrString(std::string_view name, std::string fallback = {}) const;
  std::vector<int64_t> attrInts(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attrFloats(std::string_view name, std::vector<float> fallback = {}) const;
  /// Subgraphs held by graph attributes, in attribute order.
  std::vector<Graph*> subgraphs() const;

  Graph* graph() const { return graph_; }
  /// Neighbours in the graph's node order (nullptr at the ends).
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }
  void moveBefore(Node* pos);
  void moveAfter(Node* pos);

 private:
  friend class Graph;
  friend class SlotArena<Node>;
  Node(Graph* graph, std::string opType, std::string domain);
  void unlink();

  // Hot fields first (see Value): the list links and outputs (all a backward dead-code walk
  // reads) in the first cache line, then inputs, op type and domain. Inputs and outputs are
  // inline for the common counts; the output values live in the graph's arena. What only
  // import and export read lives out of line (NodeExtra).
  Graph* graph_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  uint32_t slot_ = 0;  // slot in the graph's node arena
  // False while no attribute can hold a graph: subgraphs(), which every pass asks of every node,
  // then answers without reading the attributes (a cache miss per node on a large model). Set
  // by whatever adds a graph attribute or hands out mutable attributes; never cleared.
  bool mayHaveSubgraphs_ = false;
  InlineVector<Value*, 1> outputs_;
  InlineVector<Value*, 3> inputs_;
  std::string opType_;
  std::string domain_;
  std::vector<Attribute> attributes_;
  std::string name_;
  uint64_t serial_ = 0;  // creation order, for stable tie-breaking in sorts
  std::unique_ptr<NodeExtra> extra_;

 public:
  /// The NodeProto fields qopt only carries through (empty unless a file had them).
  const NodeExtra& extra() const;
  NodeExtra& mutableExtra();
};

/// Iterates the graph's nodes in order. Erasing the current node while iterating is allowed.
class NodeIterator {
 public:
  using value_type = Node*;
  using difference_type = std::ptrdiff_t;
  explicit NodeIterator(Node* node) : node_(node), next_(node ? node->next() : nullptr) {}
  Node* operator*() const { return node_; }
  NodeIterator& operator++() {
    node_ = next_;
    next_ = node_ ? node_->next() : nullptr;
    return *this;
  }
  bool operator==(const NodeIterator& o) const { return node_ == o.node_; }

 private:
  Node* node_;
  Node* next_;
};

struct NodeRange {
  Node* first;
  NodeIterator begin() const { return NodeIterator(first); }
  NodeIterator end() const { return NodeIterator(nullptr); }
};

class Graph {
 public:
  Graph(Model* model, Node* parent);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  Model& model() const { return *model_; }
  /// The node whose attribute holds this graph (nullptr for the main graph).
  Node* parentNode() const { return parent_; }
  Graph* parentGraph() const;
  /// 0 for the main graph, 1 for a subgraph of it, ...
  int depth() const;

  std::string name;
  /// Absent and empty differ in the file (proto2 presence): both survive a round trip.
  std::optional<std::string> docString;
  std::vector<std::pair<std::string, std::string>> metadataProps;
  /// Pieces qopt does not interpret, kept serialized in file order and written back.
  std::vector<std::string> sparseInitializers;       // SparseTensorProto
  std::vector<std::string> quantizationAnnotations;  // TensorAnnotation
  std::vector<std::string> orphanValueInfos;         // ValueInfoProto naming no value
  /// The value_info entries' names in file order ("" where an orphan stood): export writes
  /// them back in that order, then entries passes added.
  std::vector<std::string> valueInfoOrder;
  std::string unknownFields;

  // Nodes
  NodeRange nodes() const { return {first_}; }
  Node* firstNode() const { return first_; }
  Node* lastNode() const { return last_; }
  size_t numNodes() const { return nodeArena_.size(); }
  /// Creates a node with `numOutputs` fresh outputs (named after `opType`), inserted before
  /// `insertBefore` (appended when null).
  Node* createNode(std::string opType, std::span<Value* const> inputs, size_t numOutputs,
                   Node* insertBefore = nullptr, std::string domain = {});
  Node* createNode(std::string opType, std::initializer_list<Value*> inputs, size_t numOutputs,
                   Node* insertBefore = nullptr, std::string domain = {}) {
    return createNode(std::move(opType), std::span<Value* const>(inputs.begin(), inputs.size()),
                      numOutputs, insertBefore, std::move(domain));
  }
  /// Creates a node without outputs (callers add named outputs), appended or inserted.
  Node* createEmptyNode(std::string opType, std::string domain = {}, Node* insertBefore = nullptr);
  /// Erases a node; its outputs must have no uses and not be graph outputs.
  void eraseNode(Node* node);

  // Graph inputs (may include initializers listed as inputs, IR < 4 style)
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* addInput(std::string name, ValueType type);
  /// Lists an existing initializer as a graph input too.
  void addInitializerAsInput(Value* initializer);
  /// Removes input `i`; the value must have no uses (initializers stay initializers).
  void removeInput(size_t i);

  // Initializers, in file order
  const std::vector<Value*>& initializers() const;
  /// Adds an initializer named tensor->name() (a fresh name when empty or taken).
  Value* addInitializer(TensorPtr tensor);
  /// Removes an initializer that has no uses and is not a graph output.
  void eraseInitializer(Value* value);
  /// Puts an initializer holding `tensor` in the place of `value`, a node output of this graph
  /// that is not a graph output: the initializer takes every use and the name (the tensor's name
  /// is set to it), and `value` is left unnamed and unused, so that its node can be erased. For
  /// observers, `value` is replaced by a value of the same name. Unlike addInitializer,
  /// replaceAllUsesWith and a rename, it makes up no temporary name: one name-index insert.
  Value* replaceByInitializer(Value* value, TensorPtr tensor);

  // Outputs
  const std::vector<Value*>& outputs() const { return outputs_; }
  void addOutput(Value* value);
  void setOutput(size_t i, Value* value);
  void removeOutput(size_t i);

  /// The value named `name` defined in this graph, or null.
  Value* findValue(std::string_view name) const;
  /// Looks in this graph, then the enclosing graphs.
  Value* lookupValue(std::string_view name) const;

  /// Reorders nodes topologically (stable: keeps the current order where it is valid). Throws
  /// qopt::Error naming a node on the cycle when there is one.
  void topologicalSort();
  bool isTopologicallySorted() const;
  /// Values from enclosing graphs used inside `node`'s subgraphs (recursively).
  static std::vector<Value*> implicitInputs(const Node* node);

  /// Calls fn on every node of this graph and of its subgraphs (pre-order).
  template <class Fn>
  void walk(Fn&& fn) const {
    for (Node* n : nodes()) {
      fn(n);
      for (Graph* g : n->subgraphs()) g->walk(fn);
    }
  }

  /// Every node of this graph and of its subgraphs, in walk() order. A clone lists its nodes
  /// in the same order, so that a position names the same node in both.
  std::vector<Node*> allNodes() const {
    std::vector<Node*> all;
    walk([&](Node* n) { all.push_back(n); });
    return all;
  }

  /// Deep copy into `parent`; `valueMap` maps outer values already copied.
  std::unique_ptr<Graph> clone(Model* model, Node* parent, ValueMap& valueMap) const;

 private:
  friend class Node;
  friend class Value;
  friend class Model;
  Value* appendInitializer(std::string name, TensorPtr tensor);
  Value* allocateValue(Value::Kind kind, std::string name);
  Value* newValue(Value::Kind kind, std::string name);
  void destroyValue(Value* value);
  void registerName(Value* value);
  void unregisterName(Value* value);
  void unregisterNameOf(const std::string& name, Value* value);
  void linkBefore(Node* node, Node* pos);
  void unlinkNode(Node* node);

  Model* model_;
  Node* parent_;
  Node* first_ = nullptr;
  Node* last_ = nullptr;
  // Every node and value of this graph (node outputs, graph inputs, initializers) lives here.
  SlotArena<Node> nodeArena_;
  SlotArena<Value> valueArena_;
  std::vector<Value*> inputs_;
  mutable std::vector<Value*> initializers_;
  mutable bool initializersDirty_ = false;
  std::vector<Value*> outputs_;
  uint64_t nextSerial_ = 0;
};

struct OpsetImport {
  std::string domain;  // "" for ai.onnx
  int64_t version = 0;
  /// False when the file left the domain field out (it means "" too); export keeps that.
  bool domainPresent = true;
  bool operator==(const OpsetImport&) const = default;
};

/// Hears about IR changes that matter for bookkeeping across passes.
class ModelObserver {
 public:
  virtual ~ModelObserver() = default;
  virtual void valueReplaced(Value* /*from*/, Value* /*to*/) {}
  virtual void valueRenamed(Value* /*value*/, const std::string& /*oldName*/) {}
  virtual void nodeErased(Node* /*node*/) {}
};

class Model {
 public:
  Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ~Model();

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }

  std::optional<int64_t> irVersion;
  std::vector<OpsetImport> opsetImports;
  std::optional<std::string> producerName;
  std::optional<std::string> producerVersion;
  std::optional<std::string> domain;
  std::optional<int64_t> modelVersion;
  std::optional<std::string> docString;
  std::vector<std::pair<std::string, std::string>> metadataProps;
  /// Kept serialized, written back unchanged: FunctionProto, TrainingInfoProto.
  std::vector<std::string> functions;
  std::vector<std::string> trainingInfo;
  std::string unknownFields;

  /// Where the model was read from (for messages and external data), empty when built in memory.
  std::string sourcePath;

  /// Opset version imported for `domain` ("" and "ai.onnx" are the same), or nullopt.
  std::optional<int64_t> opsetVersion(std::string_view domain = "") const;
  /// Sets (or adds) the opset import for `domain`.
  void setOpsetVersion(std::string_view domain, int64_t version);

  /// A name not used by any value of the model: `base`, else `base_1`, `base_2`, ...
  std::string uniqueValueName(std::string_view base);
  /// A node name not used yet, same scheme.
  std::string uniqueNodeName(std::string_view base);
  bool isNameUsed(std::string_view name) const;
  /// The values named `name` in every graph (the main graph first, then bodies in pre-order).
  /// Usually one: names are unique model-wide, except as imported where two bodies reuse one.
  std::vector<Value*> valuesNamed(std::string_view name) const;

  /// Graphs held by node attributes, at any depth: 0 means that no walk needs to look for
  /// bodies.
  size_t numSubgraphs() const { return numSubgraphs_; }

  void addObserver(ModelObserver* observer);
  void removeObserver(ModelObserver* observer);

  /// Deep copy; tensors share their immutable buffers with the original.
  std::unique_ptr<Model> clone() const;

  /// Records the values a constant had before a pass rounded it (a weight quantized to codes):
  /// a pass that returns a layer to float installs these rather than the codes dequantized.
  /// Keyed by the rounded tensor's buffer, which is immutable and shared by clone(): a pass
  /// that changes the codes installs a new buffer, which has no entry. Not written to files.
  void recordUnrounded(const Tensor& rounded, TensorPtr original);
  /// What `rounded` held before it was rounded, or null.
  TensorPtr unrounded(const Tensor& rounded) const;

 private:
  friend class Graph;
  friend class Value;
  friend class Node;
  void claimNodeName(std::string_view name);

  std::unique_ptr<Graph> graph_;
  ValueIndex values_;  // every named value of every graph
  NameTable<uint64_t> nameCounters_;
  NameTable<uint32_t> usedNodeNames_;
  NameTable<uint64_t> nodeNameCounters_;
  std::vector<ModelObserver*> observers_;
  bool destroying_ = false;  // set by ~Model: graphs going away need not give names back
  size_t numSubgraphs_ = 0;
  struct Unrounded {
    std::shared_ptr<const Buffer> rounded;  // held, so that its address is never reused
    TensorPtr original;
  };
  std::unordered_map<const Buffer*, Unrounded> unrounded_;
};

}  // namespace qopt
