#include "qopt/constants/ConstantValue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_set>

namespace qopt::fold {
namespace {

bool isPlainFloat(DataType type) {
  return type == DataType::Float || type == DataType::Double || type == DataType::Float16 ||
         type == DataType::BFloat16;
}

// ONNX Cast of `input` to `to`, when the result does not depend on how a runtime rounds or
// saturates (see constantThroughCasts); nullopt otherwise.
std::optional<Tensor> exactCast(const Tensor& input, DataType to) {
  DataType from = input.dataType();
  if (from == to) return input;
  bool fromNumber = isPlainFloat(from) || isInteger(from);
  if (!fromNumber || !(isPlainFloat(to) || isInteger(to))) return std::nullopt;
  if (isPlainFloat(from) && isPlainFloat(to)) {
    std::vector<double> values = input.toDoubles();
    return Tensor::fromDoubles(to, input.dims(), values);
  }
  // Integers, or floats holding integers: the cast is exact when the values survive the trip.
  if (isInteger(from) && isInteger(to)) {
    std::vector<int64_t> values = input.toInt64s();
    Tensor out = Tensor::fromInt64s(to, input.dims(), values);
    if (out.toInt64s() != values) return std::nullopt;
    return out;
  }
  std::vector<double> values = input.toDoubles();
  for (double v : values) {
    if (!std::isfinite(v) || (isInteger(to) && v != std::trunc(v))) return std::nullopt;
  }
  Tensor out = Tensor::fromDoubles(to, input.dims(), values);
  if (out.toDoubles() != values) return std::nullopt;
  return out;
}

// The graph among those of `uses` that encloses all the others (where a new constant read by
// all of them must live).
Graph* enclosingGraph(const std::vector<Use>& uses) {
  auto encloses = [](const Graph* outer, const Graph* inner) {
    for (const Graph* g = inner; g != nullptr; g = g->parentGraph()) {
      if (g == outer) return true;
    }
    return false;
  };
  Graph* best = uses.front().user->graph();
  for (const Use& use : uses) {
    while (!encloses(best, use.user->graph())) best = best->parentGraph();
  }
  return best;
}

}  // namespace

bool isConstantValue(const Value* value) {
  if (value == nullptr) return false;
  if (value->isInitializer()) return !value->isGraphInput() && value->initializer() != nullptr;
  const Node* producer = value->producer();
  if (producer == nullptr || !producer->is("Constant") || producer->numOutputs() != 1) {
    return false;
  }
  if (producer->attributes().size() != 1) return false;
  const Attribute& attr = producer->attributes()[0];
  if (!attr.refAttrName.empty()) return false;
  return (attr.name == "value" && attr.kind == AttrKind::Tensor && attr.t) ||
         (attr.name == "value_float" && attr.kind == AttrKind::Float) ||
         (attr.name == "value_floats" && attr.kind == AttrKind::Floats) ||
         (attr.name == "value_int" && attr.kind == AttrKind::Int) ||
         (attr.name == "value_ints" && attr.kind == AttrKind::Ints);
}

std::optional<Tensor> constantOf(const Value* value) {
  if (!isConstantValue(value)) return std::nullopt;
  if (value->isInitializer()) return *value->initializer();
  return constantNodeTensor(*value->producer());
}

TensorPtr sharedConstantOf(const Value* value) {
  if (!isConstantValue(value)) return nullptr;
  if (value->isInitializer()) return value->initializer();
  std::optional<Tensor> tensor = constantNodeTensor(*value->producer());
  return tensor ? std::make_shared<Tensor>(std::move(*tensor)) : nullptr;
}

std::optional<Tensor> constantThroughCasts(const Value* value) {
  // Bounded: exporters wrap a constant in one or two casts, never in long chains.
  constexpr int kMaxDepth = 8;
  for (int depth = 0; value != nullptr && depth <= kMaxDepth; ++depth) {
    if (std::optional<Tensor> direct = constantOf(value)) return direct;
    const Node* producer = value->producer();
    if (producer == nullptr || !producer->domain().empty() || producer->numInputs() != 1) {
      return std::nullopt;
    }
    if (producer->is("Identity")) {
      value = producer->input(0);
      continue;
    }
    if (!producer->is("Cast")) return std::nullopt;
    std::optional<Tensor> source = constantThroughCasts(producer->input(0));
    if (!source) return std::nullopt;
    const Attribute* to = producer->findAttr("to");
    if (to == nullptr || to->kind != AttrKind::Int) return std::nullopt;
    std::optional<DataType> target = dataTypeFromInt(to->i);
    if (!target) return std::nullopt;
    return exactCast(*source, *target);
  }
  return std::nullopt;
}

bool readsOnlyShapeAndType(const Use& use) {
  const Node* user = use.user;
  if (!user->domain().empty()) return false;
  return ((user->opType() == "Shape" || user->opType() == "Size") && use.index == 0) ||
         (user->opType() == "CastLike" && use.index == 1);
}

Value* installConstant(const std::vector<Use>& uses, Tensor tensor,
                       std::string_view preferredName) {
  Graph& graph = *enclosingGraph(uses);
  Model& model = graph.model();
  std::vector<Value*> old;
  for (const Use& use : uses) {
    Value* v = use.user->input(use.index);
    if (v != nullptr && std::find(old.begin(), old.end(), v) == old.end()) old.push_back(v);
  }
  auto onlyReadBySlots = [&](const Value* v) {
    bool sameShapeAndType = v->type().isTensor() && v->type().elemType == tensor.dataType() &&
                            v->type().staticShape() == tensor.dims();
    return std::all_of(v->uses().begin(), v->uses().end(), [&](const Use& u) {
      return std::find(uses.begin(), uses.end(), u) != uses.end() ||
             (sameShapeAndType && readsOnlyShapeAndType(u));
    });
  };
  if (old.size() == 1 && onlyReadBySlots(old[0]) && !old[0]->isGraphOutput() &&
      !old[0]->isGraphInput()) {
    Value* v = old[0];
    if (v->isInitializer()) {
      auto shared = std::make_shared<Tensor>(std::move(tensor));
      v->setType(ValueType::tensor(shared->dataType(), shared->dims()));
      v->setInitializer(std::move(shared));
      return v;
    }
    Node* producer = v->producer();
    if (producer != nullptr && producer->is("Constant") && producer->numOutputs() == 1 &&
        producer->subgraphs().empty()) {
      // Becomes an initializer of the Constant's graph, under the Constant's output name.
      Graph& home = *producer->graph();
      Value* init = home.replaceByInitializer(v, std::make_shared<Tensor>(std::move(tensor)));
      home.eraseNode(producer);
      return init;
    }
  }
  tensor.setName(model.uniqueValueName(preferredName.empty() ? "const" : preferredName));
  Value* init = graph.addInitializer(std::make_shared<Tensor>(std::move(tensor)));
  for (const Use& use : uses) use.user->setInput(use.index, init);
  eraseIfUnused(old);
  return init;
}

void eraseIfUnused(std::span<Value* const> values) {
  // Values are destroyed as they go: `erased` keeps a pointer from being read after that.
  std::vector<Value*> work(values.rbegin(), values.rend());
  std::unordered_set<const Value*> erased;
  while (!work.empty()) {
    Value* v = work.back();
    work.pop_back();
    if (v == nullptr || erased.contains(v) || v->hasUses() || v->isGraphOutput()) continue;
    if (v->isInitializer()) {
      if (v->isGraphInput()) continue;
      erased.insert(v);
      v->graph()->eraseInitializer(v);
      continue;
    }
    Node* producer = v->producer();
    if (producer == nullptr || !producer->subgraphs().empty()) continue;
    bool dead =
        std::none_of(producer->outputs().begin(), producer->outputs().end(),
                     [](const Value* out) { return out->hasUses() || out->isGraphOutput(); });
    if (!dead) continue;
    std::vector<Value*> inputs;
    for (Value* in : producer->inputs()) {
      if (in != nullptr && std::find(inputs.begin(), inputs.end(), in) == inputs.end()) {
        inputs.push_back(in);
      }
    }
    for (const Value* out : producer->outputs()) erased.insert(out);
    producer->graph()->eraseNode(producer);
    work.insert(work.end(), inputs.begin(), inputs.end());
  }
}

std::string describeValue(const Value* value) {
  return fmt::format("tensor '{}'", value ? value->name() : std::string("<absent>"));
}

}  // namespace qopt::fold
