#include "qopt/ir/Graph.h"

#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include "qopt/ir/Error.h"

namespace qopt {

// ---------------------------------------------------------------------------------------------
// Value

Value::Value(Graph* graph, Kind kind, std::string name)
    : graph_(graph), kind_(kind), name_(std::move(name)) {}

bool Value::isGraphInput() const {
  if (kind_ == Kind::GraphInput) return true;
  return kind_ == Kind::Initializer && alsoGraphInput_;
}

std::vector<Node*> Value::users() const {
  std::vector<Node*> result;
  for (const Use& use : uses_) {
    if (std::find(result.begin(), result.end(), use.user) == result.end()) {
      result.push_back(use.user);
    }
  }
  return result;
}

void Value::setName(std::string name) {
  if (name == name_) return;
  Model& model = graph_->model();
  if (!name.empty() && model.isNameUsed(name)) {
    throw Error(ErrorKind::Internal, model.sourcePath, fmt::format("value '{}'", name_),
                fmt::format("cannot rename to '{}': the name is already used", name));
  }
  std::string old = std::move(name_);
  graph_->unregisterNameOf(old, this);
  name_ = std::move(name);
  graph_->registerName(this);
  if (initializer_) initializer_->setName(name_);
  for (ModelObserver* o : model.observers_) o->valueRenamed(this, old);
}

// Values and nodes keep rarely set fields in an out-of-line record, made on first write.
template <class Extra>
static const Extra& extraOrNone(const std::unique_ptr<Extra>& extra) {
  static const Extra kNone;
  return extra ? *extra : kNone;
}

template <class Extra>
static Extra& extraMade(std::unique_ptr<Extra>& extra) {
  if (!extra) extra = std::make_unique<Extra>();
  return *extra;
}

const ValueExtra& Value::extra() const {
  return extraOrNone(extra_);
}

ValueExtra& Value::mutableExtra() {
  return extraMade(extra_);
}

void Value::setInitializer(TensorPtr tensor) {
  if (kind_ != Kind::Initializer) {
    throw Error(ErrorKind::Internal, "", fmt::format("value '{}'", name_),
                "setInitializer on a value that is not an initializer");
  }
  initializer_ = std::move(tensor);
  if (initializer_) initializer_->setName(name_);
}

void Value::removeUse(Node* user, uint32_t index) {
  const Use* it = std::find(uses_.begin(), uses_.end(), Use{user, index});
  if (it != uses_.end()) uses_.erase(static_cast<size_t>(it - uses_.begin()));
}

static bool isInterfaceValue(const Value* v) {
  return v->isGraphInput() || v->isGraphOutput() || v->isInitializer();
}

void Value::replaceAllUsesExcept(Value* other, const Node* except) {
  if (other == this) return;
  // Take the list whole: each redirected use would otherwise be searched for and erased from
  // it one at a time (quadratic in the number of uses). Uses by `except` go back in order.
  InlineVector<Use, 2> uses(std::move(uses_));
  for (const Use& use : uses) {
    if (use.user == except) {
      uses_.push_back(use);
      continue;
    }
    use.user->setInput(use.index, other);  // finds nothing left to remove here: cheap
  }
  if (outputRefs_ > 0) {
    Graph* g = graph_;
    std::string keptName = name_;
    bool transferName = !isInterfaceValue(other) && other->graph_ == g;
    for (size_t i = 0; i < g->outputs_.size(); ++i) {
      if (g->outputs_[i] == this) g->setOutput(i, other);
    }
    if (transferName) {
      // The interface keeps its names: the replacement takes the output's name.
      Model& model = g->model();
      std::string tmp = model.uniqueValueName(keptName + "_replaced");
      setName(tmp);
      other->setName(keptName);
      other->type_ = other->type_.kind == ValueType::Kind::Unknown ? type_ : other->type_;
    }
  }
  for (ModelObserver* o : graph_->model().observers_) o->valueReplaced(this, other);
}

void Value::replaceAllUsesWith(Value* other) {
  replaceAllUsesExcept(other, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Node

Node::Node(Graph* graph, std::string opType, std::string domain)
    : graph_(graph), opType_(std::move(opType)) {
  setDomain(std::move(domain));
}

Node::~Node() = default;

const NodeExtra& Node::extra() const {
  return extraOrNone(extra_);
}

NodeExtra& Node::mutableExtra() {
  return extraMade(extra_);
}

void Node::setDomain(std::string domain) {
  domain_ = domain == "ai.onnx" ? std::string() : std::move(domain);
}

void Node::setName(std::string name) {
  if (name == name_) return;
  if (!name.empty()) graph_->model().claimNodeName(name);
  name_ = std::move(name);
}

std::string Node::describe() const {
  std::string op = domain_.empty() ? opType_ : domain_ + "::" + opType_;
  if (!name_.empty()) return fmt::format("node '{}' ({})", name_, op);
  Value* first = output(0);
  if (first && !first->isAbsent())
    return fmt::format("node producing '{}' ({})", first->name(), op);
  return fmt::format("unnamed node ({})", op);
}

void Node::setInput(size_t i, Value* value) {
  if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
  if (inputs_[i] == value) return;
  if (inputs_[i]) inputs_[i]->removeUse(this, static_cast<uint32_t>(i));
  inputs_[i] = value;
  if (value) value->addUse(this, static_cast<uint32_t>(i));
}

void Node::addInput(Value* value) {
  inputs_.push_back(value);
  if (value) value->addUse(this, static_cast<uint32_t>(inputs_.size() - 1));
}

void Node::insertInput(size_t i, Value* value) {
  if (i >= inputs_.size()) {
    setInput(i, value);
    return;
  }
  for (size_t k = i; k < inputs_.size(); ++k) {
    if (inputs_[k]) inputs_[k]->removeUse(this, static_cast<uint32_t>(k));
  }
  inputs_.insert(i, value);
  for (size_t k = i; k < inputs_.size(); ++k) {
    if (inputs_[k]) inputs_[k]->addUse(this, static_cast<uint32_t>(k));
  }
}

void Node::removeInput(size_t i) {
  if (i >= inputs_.size()) return;
  for (size_t k = i; k < inputs_.size(); ++k) {
    if (inputs_[k]) inputs_[k]->removeUse(this, static_cast<uint32_t>(k));
  }
  inputs_.erase(i);
  for (size_t k = i; k < inputs_.size(); ++k) {
    if (inputs_[k]) inputs_[k]->addUse(this, static_cast<uint32_t>(k));
  }
}

void Node::removeAllInputs() {
  for (size_t k = 0; k < inputs_.size(); ++k) {
    if (inputs_[k]) inputs_[k]->removeUse(this, static_cast<uint32_t>(k));
  }
  inputs_.clear();
}

Value* Node::addOutput(std::string name, bool absent) {
  Model& model = graph_->model();
  if (absent) {
    name.clear();
  } else if (name.empty()) {
    name = model.uniqueValueName(opType_.empty() ? std::string("v") : opType_);
  }
  Value* value = graph_->allocateValue(Value::Kind::NodeOutput, std::move(name));
  value->producer_ = this;
  value->outputIndex_ = static_cast<uint32_t>(outputs_.size());
  outputs_.push_back(value);
  graph_->registerName(value);
  return value;
}

void Node::truncateOutputs(size_t count) {
  while (outputs_.size() > count) {
    Value* v = outputs_.back();
    if (v->hasUses() || v->isGraphOutput()) {
      throw Error(ErrorKind::Internal, graph_->model().sourcePath, describe(),
                  fmt::format("cannot remove output '{}': it is still used", v->name()));
    }
    graph_->unregisterName(v);
    outputs_.pop_back();
    graph_->valueArena_.destroy(v, v->slot_);
  }
}

const Attribute* Node::findAttr(std::string_view name) const {
  for (const Attribute& a : attributes_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Attribute* Node::findAttr(std::string_view name) {
  mayHaveSubgraphs_ = true;  // the caller may turn the attribute into a graph attribute
  for (Attribute& a : attributes_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// Subgraph nodes may use values of enclosing graphs, which outlive a subgraph dropped on its own
// (an attribute replaced or removed): take those uses back before the subgraph goes away.
static void dropSubgraphUses(const Attribute& attr) {
  auto drop = [](Graph* g) { g->walk([](Node* inner) { inner->removeAllInputs(); }); };
  if (attr.g) drop(attr.g.get());
  for (const auto& g : attr.graphs) drop(g.get());
}

void Node::setAttr(Attribute attr) {
  auto same = std::find_if(attributes_.begin(), attributes_.end(),
                           [&](const Attribute& a) { return a.name == attr.name; });
  const auto index = static_cast<size_t>(same - attributes_.begin());
  const bool replaces = same != attributes_.end();
  addAttr(std::move(attr));
  if (replaces) {  // the new attribute takes the old one's place
    dropSubgraphUses(attributes_[index]);
    attributes_[index] = std::move(attributes_.back());
    attributes_.pop_back();
  }
}

void Node::addAttr(Attribute attr) {
  if (attr.g) attr.g->parent_ = this;
  for (auto& g : attr.graphs) g->parent_ = this;
  if (attr.g || !attr.graphs.empty()) mayHaveSubgraphs_ = true;
  attributes_.push_back(std::move(attr));
}

bool Node::removeAttr(std::string_view name) {
  for (auto it = attributes_.begin(); it != attributes_.end(); ++it) {
    if (it->name == name) {
      dropSubgraphUses(*it);
      attributes_.erase(it);
      return true;
    }
  }
  return false;
}

int64_t Node::attrInt(std::string_view name, int64_t fallback) const {
  const Attribute* a = findAttr(name);
  return a && a->kind == AttrKind::Int ? a->i : fallback;
}

float Node::attrFloat(std::string_view name, float fallback) const {
  const Attribute* a = findAttr(name);
  return a && a->kind == AttrKind::Float ? a->f : fallback;
}

std::string Node::attrString(std::string_view name, std::string fallback) const {
  const Attribute* a = findAttr(name);
  return a && a->kind == AttrKind::String ? a->s : fallback;
}

std::vector<int64_t> Node::attrInts(std::string_view name, std::vector<int64_t> fallback) const {
  const Attribute* a = findAttr(name);
  return a && a->kind == AttrKind::Ints ? a->ints : fallback;
}

std::vector<float> Node::attrFloats(std::string_view name, std::vector<float> fallback) const {
  const Attribute* a = findAttr(name);
  return a && a->kind == AttrKind::Floats ? a->floats : fallback;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> result;
  if (!mayHaveSubgraphs_) return result;
  for (const Attribute& a : attributes_) {
    if (a.g) result.push_back(a.g.get());
    for (const auto& g : a.graphs) result.push_back(g.get());
  }
  return result;
}

void Node::moveBefore(Node* pos) {
  if (pos == this) return;
  graph_->unlinkNode(this);
  graph_->linkBefore(this, pos);
}

void Node::moveAfter(Node* pos) {
  if (pos == this) return;
  graph_->unlinkNode(this);
  graph_->linkBefore(this, pos ? pos->next_ : graph_->first_);
}

// ---------------------------------------------------------------------------------------------
// Graph

Graph::Graph(Model* model, Node* parent) : model_(model), parent_(parent) {
  if (model_ && parent_) ++model_->numSubgraphs_;
}

Graph::~Graph() {
  // A subgraph dropped on its own (its node erased, its attribute removed) gives its values'
  // names back to the model, which outlives it.
  // Its outputs may be values of enclosing graphs (a branch that returns an outer value): they
  // stop being outputs of this graph.
  if (model_ && !model_->destroying_) {
    valueArena_.forEach([&](Value* v) { unregisterName(v); });
    for (Value* v : outputs_) --v->outputRefs_;
  }
  if (model_ && parent_) --model_->numSubgraphs_;
  // Drop uses first so that destroying nodes in any order never touches freed values.
  nodeArena_.forEach([](Node* node) {
    node->inputs_.clear();
    for (Attribute& a : node->attributes_) {
      a.g.reset();
      a.graphs.clear();
    }
  });
  nodeArena_.destroyAll();
  valueArena_.destroyAll();
}

Graph* Graph::parentGraph() const {
  return parent_ ? parent_->graph() : nullptr;
}

int Graph::depth() const {
  int d = 0;
  for (Graph* g = parentGraph(); g; g = g->parentGraph()) ++d;
  return d;
}

void Graph::linkBefore(Node* node, Node* pos) {
  if (!pos) {
    node->prev_ = last_;
    node->next_ = nullptr;
    if (last_) last_->next_ = node;
    last_ = node;
    if (!first_) first_ = node;
    return;
  }
  node->next_ = pos;
  node->prev_ = pos->prev_;
  if (pos->prev_)
    pos->prev_->next_ = node;
  else
    first_ = node;
  pos->prev_ = node;
}

void Graph::unlinkNode(Node* node) {
  if (node->prev_)
    node->prev_->next_ = node->next_;
  else
    first_ = node->next_;
  if (node->next_)
    node->next_->prev_ = node->prev_;
  else
    last_ = node->prev_;
  node->prev_ = node->next_ = nullptr;
}

Node* Graph::createEmptyNode(std::string opType, std::string domain, Node* insertBefore) {
  uint32_t slot = 0;
  Node* node = nodeArena_.create(slot, this, std::move(opType), std::move(domain));
  node->slot_ = slot;
  node->serial_ = nextSerial_++;
  linkBefore(node, insertBefore);
  return node;
}

Node* Graph::createNode(std::string opType, std::span<Value* const> inputs, size_t numOutputs,
                        Node* insertBefore, std::string domain) {
  Node* node = createEmptyNode(std::move(opType), std::move(domain), insertBefore);
  for (Value* v : inputs) node->addInput(v);
  for (size_t i = 0; i < numOutputs; ++i) node->addOutput();
  return node;
}

void Graph::eraseNode(Node* node) {
  for (Value* out : node->outputs_) {
    if (out->hasUses() || out->isGraphOutput()) {
      throw Error(ErrorKind::Internal, model_->sourcePath, node->describe(),
                  fmt::format("cannot erase: output '{}' is still used", out->name()));
    }
  }
  for (ModelObserver* o : model_->observers_) o->nodeErased(node);
  node->removeAllInputs();
  // Subgraph nodes may use outer values: drop those uses before the subgraphs go away.
  for (Graph* g : node->subgraphs()) {
    g->walk([](Node* inner) { inner->removeAllInputs(); });
  }
  for (Value* out : node->outputs_) unregisterName(out);
  unlinkNode(node);
  // The node goes first (its subgraphs with it), then its outputs; both slots are kept for
  // the next node and values rather than freed.
  InlineVector<Value*, 2> outputs;
  for (Value* out : node->outputs_) outputs.push_back(out);
  nodeArena_.destroy(node, node->slot_);
  for (Value* out : outputs) valueArena_.destroy(out, out->slot_);
}

Value* Graph::allocateValue(Value::Kind kind, std::string name) {
  uint32_t slot = 0;
  Value* value = valueArena_.create(slot, this, kind, std::move(name));
  value->slot_ = slot;
  return value;
}

Value* Graph::newValue(Value::Kind kind, std::string name) {
  Value* value = allocateValue(kind, std::move(name));
  registerName(value);
  return value;
}

void Graph::destroyValue(Value* value) {
  unregisterName(value);
  valueArena_.destroy(value, value->slot_);
}

void Graph::registerName(Value* value) {
  if (value->name_.empty()) return;
  model_->values_.insert(value, hashName(value->name_));
}

void Graph::unregisterName(Value* value) {
  unregisterNameOf(value->name_, value);
}

void Graph::unregisterNameOf(const std::string& name, Value* value) {
  if (name.empty()) return;
  model_->values_.erase(value, hashName(name));
}

Value* Graph::addInput(std::string name, ValueType type) {
  if (name.empty()) name = model_->uniqueValueName("input");
  Value* v = newValue(Value::Kind::GraphInput, std::move(name));
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

void Graph::addInitializerAsInput(Value* initializer) {
  initializer->alsoGraphInput_ = true;
  inputs_.push_back(initializer);
}

void Graph::removeInput(size_t i) {
  Value* v = inputs_.at(i);
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
  if (v->kind_ == Value::Kind::Initializer) {
    v->alsoGraphInput_ = std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end();
    return;
  }
  if (std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end()) return;
  if (v->hasUses() || v->isGraphOutput()) {
    inputs_.insert(inputs_.begin() + static_cast<std::ptrdiff_t>(i), v);
    throw Error(ErrorKind::Internal, model_->sourcePath, fmt::format("graph input '{}'", v->name()),
                "cannot remove: still used");
  }
  destroyValue(v);
}

const std::vector<Value*>& Graph::initializers() const {
  if (initializersDirty_) {
    std::erase_if(initializers_, [](Value* v) { return v == nullptr; });
    for (size_t i = 0; i < initializers_.size(); ++i) initializers_[i]->initializerSlot_ = i;
    initializersDirty_ = false;
  }
  return initializers_;
}

Value* Graph::addInitializer(TensorPtr tensor) {
  std::string name = tensor->name();
  if (name.empty() || model_->isNameUsed(name)) {
    name = model_->uniqueValueName(name.empty() ? std::string("const") : name);
  }
  return appendInitializer(std::move(name), std::move(tensor));
}

// `name` must be free in the model.
Value* Graph::appendInitializer(std::string name, TensorPtr tensor) {
  tensor->setName(name);
  Value* v = newValue(Value::Kind::Initializer, std::move(name));
  v->type_ = ValueType::tensor(tensor->dataType(), tensor->dims());
  v->initializer_ = std::move(tensor);
  (void)initializers();  // compact before appending
  v->initializerSlot_ = initializers_.size();
  initializers_.push_back(v);
  return v;
}

Value* Graph::replaceByInitializer(Value* value, TensorPtr tensor) {
  if (value->graph_ != this || value->kind_ != Value::Kind::NodeOutput || value->isAbsent() ||
      value->isGraphOutput()) {
    throw Error(ErrorKind::Internal, model_->sourcePath, fmt::format("value '{}'", value->name_),
                "only a named node output of this graph that is not a graph output can be "
                "replaced by an initializer");
  }
  // The name moves from `value` to the initializer: free it first, so that the initializer
  // takes it with a single insert into the model's name index.
  unregisterNameOf(value->name_, value);
  Value* init = appendInitializer(value->name_, std::move(tensor));
  value->replaceAllUsesWith(init);  // announces the replacement under the shared name
  value->name_.clear();
  return init;
}

void Graph::eraseInitializer(Value* value) {
  if (value->hasUses() || value->isGraphOutput()) {
    throw Error(ErrorKind::Internal, model_->sourcePath,
                fmt::format("initializer '{}'", value->name()), "cannot erase: still used");
  }
  // The slot makes erasing many initializers linear; the search is only a safety net.
  size_t slot = value->initializerSlot_;
  auto it = slot < initializers_.size() && initializers_[slot] == value
                ? initializers_.begin() + static_cast<std::ptrdiff_t>(slot)
                : std::find(initializers_.begin(), initializers_.end(), value);
  if (it != initializers_.end()) {
    *it = nullptr;
    initializersDirty_ = true;
  }
  if (value->alsoGraphInput_) std::erase(inputs_, value);
  destroyValue(value);
}

void Graph::addOutput(Value* value) {
  outputs_.push_back(value);
  ++value->outputRefs_;
}

void Graph::setOutput(size_t i, Value* value) {
  Value*& slot = outputs_.at(i);
  if (slot == value) return;
  --slot->outputRefs_;
  slot = value;
  ++value->outputRefs_;
}

void Graph::removeOutput(size_t i) {
  Value* v = outputs_.at(i);
  --v->outputRefs_;
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(i));
}

Value* Graph::findValue(std::string_view name) const {
  return model_->values_.find(name, hashName(name), this);
}

std::vector<Value*> Model::valuesNamed(std::string_view name) const {
  std::vector<Value*> found;
  const uint64_t hash = hashName(name);
  if (Value* v = values_.find(name, hash, graph_.get())) found.push_back(v);
  if (numSubgraphs_ == 0) return found;
  graph_->walk([&](const Node* node) {
    for (const Graph* body : node->subgraphs()) {
      if (Value* v = values_.find(name, hash, body)) found.push_back(v);
    }
  });
  return found;
}

Value* Graph::lookupValue(std::string_view name) const {
  const uint64_t hash = hashName(name);
  for (const Graph* g = this; g; g = g->parentGraph()) {
    if (Value* v = model_->values_.find(name, hash, g)) return v;
  }
  return nullptr;
}

std::vector<Value*> Graph::implicitInputs(const Node* node) {
  std::vector<Value*> result;
  std::unordered_set<const Value*> seen;
  for (Graph* sub : node->subgraphs()) {
    sub->walk([&](Node* inner) {
      for (Value* v : inner->inputs()) {
        if (!v) continue;
        // A value is implicit when it is defined outside `node`'s subgraphs.
        bool inside = false;
        for (Graph* g = v->graph(); g; g = g->parentGraph()) {
          if (g->parentNode() == node) {
            inside = true;
            break;
          }
        }
        if (!inside && seen.insert(v).second) result.push_back(v);
      }
    });
  }
  return result;
}

// A value is "ready" inside this graph once it is not produced by a node of this graph that is
// still pending. Values of enclosing graphs and of subgraphs are ready by definition here.
static Node* producerIn(const Graph* graph, Value* v) {
  Node* p = v ? v->producer() : nullptr;
  return p && p->graph() == graph ? p : nullptr;
}

// Fills `deps` with the nodes of `graph` that `node` needs first (duplicates possible). Reuses
// the caller's vector: on a large graph a fresh vector per node is a heap allocation per node.
static void collectDependencies(const Graph* graph, const Node* node, std::vector<Node*>& deps) {
  deps.clear();
  for (Value* v : node->inputs()) {
    if (Node* p = producerIn(graph, v)) deps.push_back(p);
  }
  if (!node->subgraphs().empty()) {
    for (Value* v : Graph::implicitInputs(node)) {
      // Implicit inputs from this graph: walk up to the graph's own level.
      if (Node* p = producerIn(graph, v)) deps.push_back(p);
    }
  }
}

// Runs a few nodes ahead of a walk, loading each node and its input values into the cache
// before the walk reaches them.
class NodePrefetcher {
 public:
  explicit NodePrefetcher(Node* first) : ahead_(first) {
    for (int i = 0; i < kDistance && ahead_; ++i) advance();
  }
  void advance() {
    if (!ahead_) return;
    ahead_ = ahead_->next();
    if (!ahead_) return;
    __builtin_prefetch(ahead_);
    __builtin_prefetch(reinterpret_cast<const char*>(ahead_) + 64);
    for (Value* v : ahead_->inputs()) {
      if (v) __builtin_prefetch(v);
    }
  }

 private:
  static constexpr int kDistance = 4;
  Node* ahead_;
};

// Both checks below index per-node state by the node's arena slot (dense in [0, slotCount)): a
// vector walks memory in order where a hash set keyed by Node* would miss the cache per node.
bool Graph::isTopologicallySorted() const {
  std::vector<char> done(nodeArena_.slotCount(), 0);
  std::vector<Node*> deps;
  NodePrefetcher ahead(first_);
  for (Node* n : nodes()) {
    ahead.advance();
    collectDependencies(this, n, deps);
    for (Node* dep : deps) {
      if (!done[dep->slot_]) return false;
    }
    done[n->slot_] = 1;
  }
  return true;
}

void Graph::topologicalSort() {
  // Kahn's algorithm with a min-heap on the current position: nodes already in a valid order
  // keep it, and the result does not depend on pointer values (deterministic output).
  const size_t count = nodeArena_.slotCount();
  std::vector<size_t> position(count);
  size_t pos = 0;
  for (Node* n : nodes()) position[n->slot_] = pos++;
  // Dependents of each node, in node order, as one flat array (offsets in `firstDependent`).
  std::vector<uint32_t> pending(count, 0);
  std::vector<size_t> firstDependent(count + 1, 0);
  std::vector<std::pair<Node*, Node*>> edges;  // (dependency, dependent)
  edges.reserve(count);
  std::vector<Node*> deps;
  for (Node* n : nodes()) {
    collectDependencies(this, n, deps);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    pending[n->slot_] = static_cast<uint32_t>(deps.size());
    for (Node* d : deps) {
      ++firstDependent[d->slot_ + 1];
      edges.emplace_back(d, n);
    }
  }
  for (size_t i = 0; i < count; ++i) firstDependent[i + 1] += firstDependent[i];
  std::vector<Node*> dependents(edges.size());
  {
    std::vector<size_t> fill(firstDependent.begin(), firstDependent.end() - 1);
    for (auto [d, n] : edges) dependents[fill[d->slot_]++] = n;
  }
  std::vector<Node*> order;
  order.reserve(count);
  using Item = std::pair<size_t, Node*>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (Node* n : nodes()) {
    if (pending[n->slot_] == 0) ready.push({position[n->slot_], n});
  }
  while (!ready.empty()) {
    Node* n = ready.top().second;
    ready.pop();
    order.push_back(n);
    size_t i = n->slot_;
    for (size_t k = firstDependent[i]; k < firstDependent[i + 1]; ++k) {
      Node* d = dependents[k];
      if (--pending[d->slot_] == 0) ready.push({position[d->slot_], d});
    }
  }
  if (order.size() != nodeArena_.size()) {
    for (Node* n : nodes()) {
      if (pending[n->slot_] != 0) {
        throw Error(ErrorKind::Input, model_->sourcePath, n->describe(),
                    "the graph has a cycle through this node");
      }
    }
  }
  first_ = last_ = nullptr;
  for (Node* n : order) {
    n->prev_ = n->next_ = nullptr;
    linkBefore(n, nullptr);
  }
}

std::unique_ptr<Graph> Graph::clone(Model* model, Node* parent, ValueMap& valueMap) const {
  auto copy = std::make_unique<Graph>(model, parent);
  // Sizes are known: no table or pool grows (and rehashes) while copying.
  model->values_.reserve(model->values_.size() + valueArena_.size());
  valueMap.reserve(valueMap.size() + valueArena_.size());
  copy->name = name;
  copy->docString = docString;
  copy->metadataProps = metadataProps;
  copy->sparseInitializers = sparseInitializers;
  copy->quantizationAnnotations = quantizationAnnotations;
  copy->orphanValueInfos = orphanValueInfos;
  copy->valueInfoOrder = valueInfoOrder;
  copy->unknownFields = unknownFields;
  auto copyValueFields = [](const Value* from, Value* to) {
    to->type_ = from->type_;
    to->inValueInfo = from->inValueInfo;
    if (from->extra_) to->extra_ = std::make_unique<ValueExtra>(*from->extra_);
  };
  for (Value* init : initializers()) {
    Value* v = copy->newValue(Value::Kind::Initializer, init->name());
    v->initializer_ = std::make_shared<Tensor>(*init->initializer_);
    copyValueFields(init, v);
    v->initializerSlot_ = copy->initializers_.size();
    copy->initializers_.push_back(v);
    valueMap[init] = v;
  }
  for (Value* in : inputs_) {
    if (in->kind_ == Value::Kind::Initializer) {
      copy->addInitializerAsInput(valueMap.at(in));
      continue;
    }
    auto found = valueMap.find(in);
    if (found != valueMap.end() && found->second->graph_ == copy.get()) {
      copy->inputs_.push_back(found->second);
      continue;
    }
    Value* v = copy->newValue(Value::Kind::GraphInput, in->name());
    copyValueFields(in, v);
    copy->inputs_.push_back(v);
    valueMap[in] = v;
  }
  for (Node* n : nodes()) {
    Node* c = copy->createEmptyNode(n->opType_, n->domain_);
    c->name_ = n->name_;
    if (n->extra_) c->extra_ = std::make_unique<NodeExtra>(*n->extra_);
    for (Value* in : n->inputs_) {
      if (!in) {
        c->addInput(nullptr);
        continue;
      }
      auto it = valueMap.find(in);
      // Outer-scope values not copied (cloning a subgraph alone) are referenced as they are.
      c->addInput(it != valueMap.end() ? it->second : in);
    }
    for (Value* out : n->outputs_) {
      Value* o = c->addOutput(out->name(), out->isAbsent());
      copyValueFields(out, o);
      valueMap[out] = o;
    }
    for (const Attribute& a : n->attributes_) c->addAttr(a.clone(c, valueMap));
  }
  for (Value* out : outputs_) {
    auto it = valueMap.find(out);
    copy->addOutput(it != valueMap.end() ? it->second : out);
  }
  // Node names are copied verbatim: claim them in the copy's model.
  copy->walk([&](Node* n) {
    if (!n->name_.empty()) model->claimNodeName(n->name_);
  });
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Model

Model::Model() : graph_(std::make_unique<Graph>(this, nullptr)) {}

Model::~Model() {
  // The names die with the model: giving them back one by one would only cost time.
  destroying_ = true;
  graph_.reset();
}

std::optional<int64_t> Model::opsetVersion(std::string_view domain) const {
  std::string_view d = domain == "ai.onnx" ? std::string_view() : domain;
  for (const OpsetImport& o : opsetImports) {
    std::string_view od = o.domain == "ai.onnx" ? std::string_view() : std::string_view(o.domain);
    if (od == d) return o.version;
  }
  return std::nullopt;
}

void Model::setOpsetVersion(std::string_view domain, int64_t version) {
  std::string_view d = domain == "ai.onnx" ? std::string_view() : domain;
  for (OpsetImport& o : opsetImports) {
    std::string_view od = o.domain == "ai.onnx" ? std::string_view() : std::string_view(o.domain);
    if (od == d) {
      o.version = version;
      return;
    }
  }
  opsetImports.push_back({std::string(d), version});
}

bool Model::isNameUsed(std::string_view name) const {
  return values_.find(name, hashName(name), nullptr) != nullptr;
}

void Model::claimNodeName(std::string_view name) {
  ++usedNodeNames_[name];
}

// `base` when unused, else the first unused of base_N for N counting up from where the last
// call for `base` stopped (amortised O(1) per name, however many share the base).
template <class IsUsed>
static std::string freshName(IsUsed isUsed, NameTable<uint64_t>& counters, std::string_view base) {
  if (!isUsed(base)) return std::string(base);
  uint64_t& next = counters[base];
  std::string candidate;
  for (;;) {
    candidate.clear();
    fmt::format_to(std::back_inserter(candidate), "{}_{}", base, ++next);
    if (!isUsed(candidate)) return candidate;
  }
}

std::string Model::uniqueValueName(std::string_view base) {
  return freshName([&](std::string_view name) { return isNameUsed(name); }, nameCounters_, base);
}

std::string Model::uniqueNodeName(std::string_view base) {
  std::string name = freshName([&](std::string_view n) { return usedNodeNames_.contains(n); },
                               nodeNameCounters_, base);
  claimNodeName(name);
  return name;
}

void Model::addObserver(ModelObserver* observer) {
  observers_.push_back(observer);
}

void Model::removeObserver(ModelObserver* observer) {
  std::erase(observers_, observer);
}

std::unique_ptr<Model> Model::clone() const {
  auto copy = std::make_unique<Model>();
  copy->irVersion = irVersion;
  copy->opsetImports = opsetImports;
  copy->producerName = producerName;
  copy->producerVersion = producerVersion;
  copy->domain = domain;
  copy->modelVersion = modelVersion;
  copy->docString = docString;
  copy->metadataProps = metadataProps;
  copy->functions = functions;
  copy->trainingInfo = trainingInfo;
  copy->unknownFields = unknownFields;
  copy->sourcePath = sourcePath;
  copy->unrounded_ = unrounded_;
  copy->values_.reserve(values_.size());
  copy->usedNodeNames_.reserve(usedNodeNames_.size());
  ValueMap map;
  copy->graph_ = graph_->clone(copy.get(), nullptr, map);
  return copy;
}

void Model::recordUnrounded(const Tensor& rounded, TensorPtr original) {
  std::shared_ptr<const Buffer> buffer = rounded.buffer();
  if (buffer == nullptr || original == nullptr) return;
  const Buffer* key = buffer.get();
  unrounded_[key] = Unrounded{std::move(buffer), std::move(original)};
}

TensorPtr Model::unrounded(const Tensor& rounded) const {
  if (unrounded_.empty()) return nullptr;
  std::shared_ptr<const Buffer> buffer = rounded.buffer();
  auto it = unrounded_.find(buffer.get());
  return it == unrounded_.end() ? nullptr : it->second.original;
}

}  // namespace qopt
