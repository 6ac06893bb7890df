// fold-constants: evaluates nodes whose inputs are all constant with the reference interpreter
// and replaces their outputs by initializers. Shape and Size of a value whose shape is static
// are constant too, and so is CastLike whatever its second input holds (only its type counts),
// which lets shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) and exporters'
// CastLike/Expand chains fold away.
//
// Left alone, each with a remark: nodes whose result would exceed the size caps (a folded
// ConstantOfShape must not blow up the model), QuantizeLinear/DequantizeLinear (quantized
// weights stay quantized for TensorRT; fold-quantization=true folds them), nondeterministic ops,
// nodes holding subgraphs, ops outside the default domain, and nodes the interpreter cannot run.
//
// An If whose condition is constant is replaced by the branch it takes (inlined: its nodes and
// constants move into the enclosing graph, the values of enclosing graphs it read are read as
// they are): what binding a sample rate or a mode flag (specialize) leaves to fold.
// A Loop known before it starts to run 0 times or once is replaced by its result the same way:
// exporters write a Loop over a dim that binding an input (specialize) makes 0 or 1.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <string_view>

#include "qopt/constants/ConstantValue.h"
#include "qopt/constants/NodeEvaluator.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/Inline.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

constexpr std::array<std::string_view, 6> kNondeterministicOps = {
    "RandomNormal",      "RandomNormalLike", "RandomUniform",
    "RandomUniformLike", "Multinomial",      "Bernoulli"};
constexpr std::array<std::string_view, 3> kQuantizationOps = {"QuantizeLinear", "DequantizeLinear",
                                                              "DynamicQuantizeLinear"};

bool contains(std::span<const std::string_view> list, std::string_view op) {
  return std::find(list.begin(), list.end(), op) != list.end();
}

// The one value of a constant of one element (absent and non-constant values have none).
std::optional<double> constantScalar(const Value* value) {
  if (value == nullptr) return std::nullopt;
  std::optional<Tensor> tensor = fold::constantOf(value);
  if (!tensor || tensor->numElements() != 1) return std::nullopt;
  return tensor->toDoubles()[0];
}

// As constantScalar for an integer constant, exact where a double would round (INT64_MAX, the
// trip count exporters write for "no limit").
std::optional<int64_t> constantInteger(const Value* value) {
  if (value == nullptr) return std::nullopt;
  std::optional<Tensor> tensor = fold::constantOf(value);
  if (!tensor || tensor->numElements() != 1 || !isInteger(tensor->dataType())) {
    return std::nullopt;
  }
  return tensor->toInt64s()[0];
}

// The dims of `value` when they are known: a constant's, or a static type's.
std::optional<std::vector<int64_t>> knownShape(const Value* value) {
  if (value == nullptr) return std::nullopt;
  if (fold::isConstantValue(value)) return fold::constantOf(value)->dims();
  return value->type().staticShape();
}

class FoldConstantsPass : public Pass {
 public:
  FoldConstantsPass()
      : Pass("fold-constants",
             "Evaluates nodes whose inputs are all constant and replaces them by initializers") {}

  void validateOptions() const override {
    if (*maxOutputElements_ < 0) failOption("max-output-elements", "must not be negative");
    if (*maxBytes_ < 0) failOption("max-bytes", "must not be negative");
  }

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    for (const char* name : {"nodes-folded", "initializers-added", "bytes-added", "nodes-kept"}) {
      result.statistics[name] = 0;
    }
    foldGraph(model.graph(), result);
    result.changed = result.statistics.get("nodes-folded") > 0 ||
                     result.statistics.get("if-inlined") > 0 ||
                     result.statistics.get("loop-folded") > 0;
    return result;
  }

 private:
  // What each input of `node` is, when all are known: its tensor, or an empty placeholder of
  // the right type for CastLike's type-only input. nullopt when some input is not constant.
  static std::optional<std::vector<std::optional<Tensor>>> constantInputs(const Node& node) {
    std::vector<std::optional<Tensor>> inputs;
    for (size_t i = 0; i < node.numInputs(); ++i) {
      const Value* v = node.input(i);
      if (v == nullptr) {
        inputs.emplace_back();
        continue;
      }
      if (fold::isConstantValue(v)) {
        inputs.push_back(fold::constantOf(v));
        continue;
      }
      bool typeOnly = node.is("CastLike") && i == 1 && v->type().isTensor() &&
                      v->type().elemType != DataType::Undefined;
      if (!typeOnly) return std::nullopt;
      inputs.push_back(Tensor(v->type().elemType, {0}));
    }
    return inputs;
  }

  // Shape and Size of a value with known dims, without touching its data.
  static std::optional<Tensor> shapeResult(const Node& node) {
    if (!node.is("Shape") && !node.is("Size")) return std::nullopt;
    std::optional<std::vector<int64_t>> dims = knownShape(node.input(0));
    if (!dims) return std::nullopt;
    if (node.is("Size")) {
      int64_t size = 1;
      for (int64_t d : *dims) size *= d;
      return Tensor::fromInt64s(DataType::Int64, {}, {&size, 1});
    }
    auto rank = static_cast<int64_t>(dims->size());
    auto clampAxis = [&](int64_t axis) {
      return std::clamp(axis < 0 ? axis + rank : axis, int64_t{0}, rank);
    };
    int64_t start = clampAxis(node.attrInt("start", 0));
    int64_t end = clampAxis(node.attrInt("end", rank));
    std::vector<int64_t> slice;
    for (int64_t i = start; i < end; ++i) slice.push_back((*dims)[static_cast<size_t>(i)]);
    return Tensor::fromInt64s(DataType::Int64, {static_cast<int64_t>(slice.size())}, slice);
  }

  // Why `node` is not evaluated although its inputs are constant, or "" when it may be.
  std::string whyKept(const Node& node, std::string& counter) const {
    if (!node.domain().empty()) {
      counter = "kept-domain";
      return fmt::format("ops of domain '{}' are not evaluated", node.domain());
    }
    if (!node.subgraphs().empty()) {
      counter = "kept-subgraph";
      return "it holds subgraphs";
    }
    if (contains(kNondeterministicOps, node.opType()) ||
        (node.is("Dropout") && node.input(2) != nullptr)) {
      counter = "kept-nondeterministic";
      return "its result is random";
    }
    if (contains(kQuantizationOps, node.opType()) && !*foldQuantization_) {
      counter = "kept-quantization";
      return "quantized weights stay quantized (fold-quantization=true folds them)";
    }
    for (const Value* out : node.outputs()) {
      if (out->isGraphOutput()) {
        counter = "kept-graph-output";
        return fmt::format("its output '{}' is a graph output", out->name());
      }
    }
    for (const Value* out : node.outputs()) {
      std::optional<std::vector<int64_t>> dims = out->type().staticShape();
      if (!dims) continue;
      uint64_t elements = 1;
      for (int64_t d : *dims) elements *= static_cast<uint64_t>(d);
      std::string why = sizeProblem(elements, out->type().elemType);
      if (!why.empty()) {
        counter = "kept-too-large";
        return why;
      }
    }
    return {};
  }

  // The element count of the result of the ops that make large tensors from small inputs,
  // known before evaluating them; nullopt for other ops.
  static std::optional<uint64_t> predictedElements(const Node& node,
                                                   const std::vector<std::optional<Tensor>>& in) {
    auto product = [](const std::vector<int64_t>& dims) -> std::optional<uint64_t> {
      uint64_t n = 1;
      for (int64_t d : dims) {
        if (d < 0) return std::nullopt;
        if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
          return std::numeric_limits<uint64_t>::max();
        }
        n *= static_cast<uint64_t>(d);
      }
      return n;
    };
    auto valuesOf = [&](size_t i) -> std::optional<std::vector<int64_t>> {
      if (i >= in.size() || !in[i] || !isInteger(in[i]->dataType())) return std::nullopt;
      return in[i]->toInt64s();
    };
    if (node.is("ConstantOfShape")) {
      if (auto shape = valuesOf(0)) return product(*shape);
    } else if (node.is("Expand") && in.size() >= 2 && in[0]) {
      // Broadcast of the input's dims with the requested shape.
      if (auto shape = valuesOf(1)) {
        std::vector<int64_t> a = in[0]->dims(), b = *shape;
        if (a.size() < b.size()) a.insert(a.begin(), b.size() - a.size(), 1);
        if (b.size() < a.size()) b.insert(b.begin(), a.size() - b.size(), 1);
        for (size_t i = 0; i < a.size(); ++i) a[i] = a[i] == 1 ? b[i] : a[i];
        return product(a);
      }
    } else if (node.is("Tile") && in.size() >= 2 && in[0]) {
      if (auto repeats = valuesOf(1); repeats && repeats->size() == in[0]->dims().size()) {
        std::vector<int64_t> dims = in[0]->dims();
        for (size_t i = 0; i < dims.size(); ++i) dims[i] *= (*repeats)[i];
        return product(dims);
      }
    }
    return std::nullopt;
  }

  std::string sizeProblem(uint64_t elements, DataType type) const {
    if (elements > static_cast<uint64_t>(*maxOutputElements_)) {
      return fmt::format("its result has {} elements, over max-output-elements={}", elements,
                         *maxOutputElements_);
    }
    std::optional<size_t> bytes = dataTypeStorageBytes(type, elements);
    if (type != DataType::Undefined && (!bytes || *bytes > static_cast<uint64_t>(*maxBytes_))) {
      return fmt::format("its result needs {} bytes, over max-bytes={}",
                         bytes ? std::to_string(*bytes) : std::string("too many"), *maxBytes_);
    }
    return {};
  }

  void keep(const Node& node, const std::string& counter, const std::string& why,
            PassResult& result) {
    result.statistics.add("nodes-kept");
    result.statistics.add(counter);
    result.missed(node.describe(), "kept: " + why);
  }

  // Replaces the outputs of `node` by initializers holding `values` and erases it, with the
  // constants only it read.
  void replaceByInitializers(Node& node, std::vector<Tensor> values, PassResult& result) {
    Graph& graph = *node.graph();
    std::vector<Value*> inputs;
    for (Value* in : node.inputs()) {
      if (in != nullptr && fold::isConstantValue(in)) inputs.push_back(in);
    }
    for (size_t i = 0; i < node.numOutputs(); ++i) {
      Value* out = node.output(i);
      if (out->isAbsent() || !out->hasUses()) continue;
      Tensor& tensor = values[i];
      result.statistics.add("initializers-added");
      result.statistics.add("bytes-added", static_cast<int64_t>(tensor.rawBytes().size()));
      // Never a graph output here (such nodes are kept): the initializer takes the name.
      graph.replaceByInitializer(out, std::make_shared<Tensor>(std::move(tensor)));
    }
    graph.eraseNode(&node);
    fold::eraseIfUnused(inputs);
  }

  // Inlines the branch an If with a constant condition takes; false when the condition is not
  // a constant of one element.
  bool foldIf(Node& node, PassResult& result) {
    std::optional<Tensor> cond = fold::constantOf(node.input(0));
    if (!cond || cond->numElements() != 1) return false;
    const bool taken = cond->toDoubles()[0] != 0;
    const Attribute* branch = node.findAttr(taken ? "then_branch" : "else_branch");
    if (branch == nullptr || branch->kind != AttrKind::Graph || !branch->g) {
      keep(node, "kept-subgraph",
           fmt::format("its {} is missing", taken ? "then_branch" : "else_branch"), result);
      return true;
    }
    const std::string subject = node.describe();
    const std::string name = branch->g->name;
    const size_t nodes = inlineBody(node, *branch->g).size();
    result.statistics.add("if-inlined");
    result.applied(subject, fmt::format("the condition is always {}: {} '{}' inlined ({} nodes)",
                                        taken ? "true" : "false",
                                        taken ? "then_branch" : "else_branch", name, nodes));
    return true;
  }

  // Replaces a Loop that runs 0 times or once, as its constant trip count and condition say
  // before it starts, by its result. False when they do not say so: the Loop is then treated as
  // any node holding a subgraph.
  bool foldLoop(Node& node, PassResult& result) {
    Attribute* bodyAttr = node.findAttr("body");
    if (bodyAttr == nullptr || bodyAttr->kind != AttrKind::Graph || !bodyAttr->g) return false;
    const std::optional<int64_t> trip = constantInteger(node.input(0));
    const std::optional<double> cond = constantScalar(node.input(1));
    // The condition is tested before the first iteration too: false means no iteration at all.
    const bool runsNever = (trip && *trip <= 0) || (cond && *cond == 0);
    if (!runsNever) {
      if (!trip || *trip != 1) return false;
      if (node.input(1) != nullptr && !cond) {
        keep(node, "kept-loop",
             fmt::format("its trip count is 1 but its condition '{}' is not constant: it runs 0 "
                         "times or once",
                         node.input(1)->name()),
             result);
        return true;
      }
    }
    Graph& body = *bodyAttr->g;
    const size_t carried = node.numInputs() > 2 ? node.numInputs() - 2 : 0;
    if (body.inputs().size() != carried + 2 || node.numOutputs() < carried ||
        body.outputs().size() != node.numOutputs() + 1) {
      keep(node, "kept-loop",
           fmt::format("its body '{}' has {} inputs and {} outputs for the node's {} loop-carried "
                       "values and {} outputs",
                       body.name, body.inputs().size(), body.outputs().size(), carried,
                       node.numOutputs()),
           result);
      return true;
    }
    for (size_t j = 0; j < carried; ++j) {
      if (node.input(2 + j) == nullptr) {
        keep(node, "kept-loop", fmt::format("its loop-carried input {} is omitted", j), result);
        return true;
      }
    }
    for (const Value* in : body.inputs()) {
      if (in->kind() != Value::Kind::GraphInput) {
        keep(node, "kept-loop",
             fmt::format("its body input '{}' is an initializer too", in->name()), result);
        return true;
      }
    }
    return runsNever ? foldLoopNeverRun(node, body, carried, result)
                     : inlineLoopOnce(node, body, carried, result);
  }

  // A Loop that runs 0 times: its carried outputs are its initial values, its scan outputs are
  // empty. The shape of an empty scan output is [0, <the body's per-iteration shape>], so the
  // body must declare that shape.
  bool foldLoopNeverRun(Node& node, Graph& body, size_t carried, PassResult& result) {
    Graph& graph = *node.graph();
    Model& model = graph.model();
    const size_t scans = node.numOutputs() - carried;
    std::vector<std::optional<Tensor>> empties(scans);
    for (size_t k = 0; k < scans; ++k) {
      const Value* out = node.output(carried + k);
      if (out->isAbsent() || (!out->hasUses() && !out->isGraphOutput())) continue;
      const Value* part = body.outputs()[1 + carried + k];
      std::optional<std::vector<int64_t>> dims = part->type().staticShape();
      DataType type = part->type().elemType;
      if (type == DataType::Undefined) type = out->type().elemType;
      if (!part->type().isTensor() || !dims || type == DataType::Undefined) {
        keep(node, "kept-loop",
             fmt::format("it runs 0 times, but the shape of its empty scan output '{}' is "
                         "unknown: the body does not declare a static shape for '{}'",
                         out->name(), part->name()),
             result);
        return true;
      }
      dims->insert(dims->begin(), 0);
      empties[k].emplace(type, std::move(*dims));
    }
    const std::string subject = node.describe();
    // A graph output keeps its name and its producer: it is computed by an Identity.
    auto identityOf = [&](Value* value, const Value* out) {
      Node* identity = graph.createNode("Identity", {value}, 1, &node);
      identity->output(0)->setType(out->type());
      return identity->output(0);
    };
    for (size_t j = 0; j < carried; ++j) {
      Value* out = node.output(j);
      if (out->isAbsent()) continue;
      Value* initial = node.input(2 + j);
      out->replaceAllUsesWith(out->isGraphOutput() ? identityOf(initial, out) : initial);
    }
    size_t emptyCount = 0;
    for (size_t k = 0; k < scans; ++k) {
      if (!empties[k]) continue;
      Value* out = node.output(carried + k);
      auto tensor = std::make_shared<Tensor>(std::move(*empties[k]));
      result.statistics.add("initializers-added");
      ++emptyCount;
      if (out->isGraphOutput()) {
        tensor->setName(model.uniqueValueName(out->name() + "_empty"));
        out->replaceAllUsesWith(identityOf(graph.addInitializer(std::move(tensor)), out));
      } else {
        graph.replaceByInitializer(out, std::move(tensor));
      }
    }
    std::vector<Value*> constants;
    for (Value* in : node.inputs()) {
      if (in != nullptr && fold::isConstantValue(in)) constants.push_back(in);
    }
    graph.eraseNode(&node);
    fold::eraseIfUnused(constants);
    result.statistics.add("loop-folded");
    result.applied(subject, fmt::format("it runs 0 times: its {} loop-carried outputs are the "
                                        "initial values, {} scan outputs are empty",
                                        carried, emptyCount));
    return true;
  }

  // A Loop that runs once: its body is inlined as an If branch is, with the iteration number
  // bound to 0, the condition to true and the loop-carried inputs to the initial values. The
  // body is rewritten in place first (the node goes with it): its inputs are replaced by those
  // values, its condition output dropped, and each scan output given the leading axis of
  // length 1 that stacking one iteration makes.
  bool inlineLoopOnce(Node& node, Graph& body, size_t carried, PassResult& result) {
    Graph& graph = *node.graph();
    Model& model = graph.model();
    const size_t scans = node.numOutputs() - carried;
    std::vector<std::string> inputNames;
    for (const Value* in : body.inputs()) inputNames.push_back(in->name());
    std::vector<Value*> bound(body.inputs().size(), nullptr);
    for (size_t j = 0; j < carried; ++j) bound[2 + j] = node.input(2 + j);
    auto binding = [&](size_t i) {
      if (bound[i] == nullptr) {
        const int64_t value = i == 0 ? 0 : 1;  // iteration number 0, condition true
        auto tensor = std::make_shared<Tensor>(
            Tensor::fromInt64s(i == 0 ? DataType::Int64 : DataType::Bool, {}, {&value, 1}));
        tensor->setName(model.uniqueValueName(inputNames[i]));
        bound[i] = body.addInitializer(std::move(tensor));
      }
      return bound[i];
    };
    auto resolve = [&](Value* value) {
      const std::vector<Value*>& inputs = body.inputs();
      auto it = std::find(inputs.begin(), inputs.end(), value);
      return it == inputs.end() ? value : binding(static_cast<size_t>(it - inputs.begin()));
    };

    std::vector<Value*> outputs;
    for (size_t j = 0; j < carried; ++j) outputs.push_back(resolve(body.outputs()[1 + j]));
    // Unsqueeze takes its axes as an attribute before opset 13 and as an input from 13.
    const bool axesInput = model.opsetVersion("").value_or(13) >= 13;
    Value* axes = nullptr;
    // The names of the values the body makes for the Loop's outputs, and the Loop output
    // names they take once the Loop is gone.
    std::vector<std::pair<std::string, std::string>> madeNames;
    for (size_t k = 0; k < scans; ++k) {
      const Value* out = node.output(carried + k);
      Value* part = resolve(body.outputs()[1 + carried + k]);
      if (out->isAbsent()) {
        outputs.push_back(part);
        continue;
      }
      Node* unsqueeze = body.createEmptyNode("Unsqueeze");
      unsqueeze->addInput(part);
      if (axesInput) {
        if (axes == nullptr) {
          const int64_t zero = 0;
          auto tensor =
              std::make_shared<Tensor>(Tensor::fromInt64s(DataType::Int64, {1}, {&zero, 1}));
          tensor->setName(model.uniqueValueName(out->name() + "_axes"));
          axes = body.addInitializer(std::move(tensor));
        }
        unsqueeze->addInput(axes);
      } else {
        unsqueeze->addAttr(Attribute::makeInts("axes", {0}));
      }
      std::string name = model.uniqueValueName(out->name());
      Value* stacked = unsqueeze->addOutput(name);
      ValueType type = part->type();
      if (type.isTensor() && type.shape) {
        type.shape->insert(type.shape->begin(), Dim::known(1));
      } else {
        type = out->type();
      }
      stacked->setType(std::move(type));
      outputs.push_back(stacked);
      madeNames.emplace_back(std::move(name), out->name());
    }
    Value* condOut = body.outputs()[0];
    while (!body.outputs().empty()) body.removeOutput(body.outputs().size() - 1);
    for (Value* out : outputs) body.addOutput(out);
    // One iteration never reads the condition it computes.
    if (condOut->graph() == &body) fold::eraseIfUnused(condOut);
    for (size_t i = body.inputs().size(); i-- > 0;) {
      Value* in = body.inputs()[i];
      if (in->hasUses()) in->replaceAllUsesWith(binding(i));
      body.removeInput(i);
    }
    // The constants standing for the iteration number and condition take the inputs' names.
    for (size_t i = 0; i < 2 && i < bound.size(); ++i) {
      if (bound[i] != nullptr && !model.isNameUsed(inputNames[i])) {
        bound[i]->setName(inputNames[i]);
      }
    }

    std::vector<Value*> constants;
    for (Value* in : node.inputs()) {
      if (in != nullptr && fold::isConstantValue(in)) constants.push_back(in);
    }
    const std::string subject = node.describe();
    const std::string name = body.name;
    const size_t nodes = inlineBody(node, body).size();
    fold::eraseIfUnused(constants);
    // The Loop's names are free now: the values made for its outputs take them.
    for (const auto& [made, original] : madeNames) {
      Value* value = graph.findValue(made);
      if (value != nullptr && !model.isNameUsed(original)) value->setName(original);
    }
    result.statistics.add("loop-folded");
    result.applied(subject,
                   fmt::format("it runs once: body '{}' inlined ({} nodes), the iteration number "
                               "is 0",
                               name, nodes));
    return true;
  }

  void foldGraph(Graph& graph, PassResult& result) {
    for (Node* node : graph.nodes()) {
      if (*subgraphs_) {
        for (Graph* body : node->subgraphs()) foldGraph(*body, result);
      }
      if (node->is("If") && *inlineIf_ && foldIf(*node, result)) continue;
      if (node->is("Loop") && *inlineLoop_ && foldLoop(*node, result)) continue;
      if (node->is("Constant") || node->numOutputs() == 0) continue;
      std::optional<Tensor> shape = shapeResult(*node);
      std::optional<std::vector<std::optional<Tensor>>> inputs;
      if (!shape) {
        inputs = constantInputs(*node);
        if (!inputs) continue;
      }
      std::string counter;
      std::string why = whyKept(*node, counter);
      if (!why.empty()) {
        keep(*node, counter, why, result);
        continue;
      }
      if (inputs) {
        if (std::optional<uint64_t> elements = predictedElements(*node, *inputs)) {
          DataType type = node->output(0)->type().elemType;
          if (node->is("Expand") || node->is("Tile")) type = (*inputs)[0]->dataType();
          why = sizeProblem(*elements, type);
          if (!why.empty()) {
            keep(*node, "kept-too-large", why, result);
            continue;
          }
        }
      }
      std::vector<Tensor> values;
      if (shape) {
        values.push_back(std::move(*shape));
      } else {
        try {
          values = fold::evaluateNode(*node, *inputs, static_cast<uint64_t>(*maxBytes_));
        } catch (const Error& e) {
          keep(*node, "kept-evaluation-failed", "evaluating it failed: " + e.cause(), result);
          continue;
        } catch (const std::bad_alloc&) {
          keep(*node, "kept-evaluation-failed", "evaluating it ran out of memory", result);
          continue;
        }
      }
      for (size_t i = 0; i < values.size() && why.empty(); ++i) {
        if (node->output(i)->hasUses()) {
          why = sizeProblem(values[i].numElements(), values[i].dataType());
        }
      }
      if (!why.empty()) {
        keep(*node, "kept-too-large", why, result);
        continue;
      }
      result.statistics.add("nodes-folded");
      result.statistics.add("folded-" + node->opType());
      replaceByInitializers(*node, std::move(values), result);
    }
  }

  Option<int64_t> maxOutputElements_{*this, "max-output-elements", int64_t{1} << 22,
                                     "Leave a node alone when one of its results has more "
                                     "elements than this"};
  Option<int64_t> maxBytes_{*this, "max-bytes", int64_t{16} << 20,
                            "Leave a node alone when one of its results (or any tensor its "
                            "evaluation allocates) needs more bytes than this"};
  Option<bool> foldQuantization_{*this, "fold-quantization", false,
                                 "Also fold QuantizeLinear/DequantizeLinear of constants "
                                 "(quantized weights become float)"};
  Option<bool> subgraphs_{*this, "subgraphs", true, "Also fold inside If/Loop/Scan bodies"};
  Option<bool> inlineIf_{*this, "inline-if", true,
                         "Replace an If whose condition is constant by the branch it takes"};
  Option<bool> inlineLoop_{*this, "inline-loop", true,
                           "Replace a Loop whose constant trip count and condition make it run "
                           "0 times or once by its result"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("fold-constants", QOPT_VERSION_STRING, qopt::FoldConstantsPass)
