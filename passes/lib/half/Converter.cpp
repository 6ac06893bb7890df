#include "qopt/half/Converter.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "qopt/constants/ConstantValue.h"
#include "qopt/half/OpPolicy.h"
#include "qopt/half/QdqPrecision.h"

namespace qopt::tofp16 {
namespace {

// float16's largest finite value.
constexpr double kHalfMax = 65504.0;

template <class Fn>
void forEachGraph(Graph& graph, Fn&& fn) {
  fn(graph);
  for (Node* node : graph.nodes()) {
    for (Graph* body : node->subgraphs()) forEachGraph(*body, fn);
  }
}

std::vector<Node*> nodeList(const Graph& graph) {
  std::vector<Node*> nodes;
  for (Node* node : graph.nodes()) nodes.push_back(node);
  return nodes;
}

const char* suffixFor(DataType type) {
  switch (type) {
    case DataType::Float16:
      return "_fp16";
    case DataType::BFloat16:
      return "_bf16";
    default:
      return "_fp32";
  }
}

}  // namespace

Converter::Converter(Model& model, ConversionOptions options, PassResult& result)
    : model_(model), options_(std::move(options)), result_(result), types_(model) {}

void Converter::run() {
  forEachGraph(model_.graph(), [&](Graph& graph) {
    auto note = [&](const Value* v) {
      if (types_.of(v) == DataType::Float) float32_.insert(v);
    };
    for (Value* v : graph.inputs()) note(v);
    for (Value* v : graph.initializers()) note(v);
    for (Node* node : graph.nodes()) {
      for (Value* out : node->outputs()) note(out);
    }
  });
  convertGraph(model_.graph(), /*isMain=*/true, /*parentConverted=*/false);
  eraseUnusedOriginals();
  removeRedundantCasts();
}

bool Converter::converts(const Node& node) const {
  if (isQdq(node)) {
    if (qdqReason(node)) return false;
    // A QuantizeLinear follows its input; a DequantizeLinear its readers.
    if (isQuantize(node)) return isHalf(node.input(0));
    return readersWantHalf(node.output(0));
  }
  if (!node.domain().empty() || node.opType() == "Constant" || alwaysFloat32(node)) return false;
  if (options_.blockedOps.count(node.opType()) > 0) return false;
  if (options_.blockedNodes) {
    // Unnamed nodes (common in exports) are known by their first output.
    const std::string& name =
        !node.name().empty() || node.numOutputs() == 0 ? node.name() : node.output(0)->name();
    if (!name.empty() && std::regex_search(name, *options_.blockedNodes)) return false;
  }
  return !rangeReason(node) && !qdqReason(node);
}

std::optional<std::string> Converter::qdqReason(const Node& node) const {
  if (isQdq(node)) {
    if (!options_.halfQdq) {
      return fmt::format("Q/DQ keep float32 scales before opset {} (half-qdq)", kHalfQdqOpset);
    }
    return halfScaleProblem(node, options_.half);
  }
  for (const Value* input : node.inputs()) {
    const Node* producer = input != nullptr ? input->producer() : nullptr;
    if (producer == nullptr || !isDequantize(*producer) || !isFloat32(input)) continue;
    std::optional<std::string> why =
        !isQdq(*producer) || !options_.halfQdq
            ? std::optional<std::string>(
                  fmt::format("Q/DQ keep float32 scales before opset {}", kHalfQdqOpset))
            : halfScaleProblem(*producer, options_.half);
    if (why) {
      return fmt::format(
          "it reads {}, which stays float32 ({}): a Cast after it would break the quantized "
          "layer's fusion",
          producer->describe(), *why);
    }
  }
  return std::nullopt;
}

bool Converter::readersWantHalf(const Value* value) const {
  for (const Use& use : value->uses()) {
    const Node& reader = *use.user;
    if (isQdq(reader)) {
      if (!qdqReason(reader)) return true;
    } else if (!inputTakesAnyType(reader, use.index) && converts(reader) &&
               !inputStaysFloat32(reader, use.index)) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> Converter::rangeReason(const Node& node) const {
  if (std::optional<std::string> why = outOfRangeConstant(node)) return why;
  return outOfRangeObserved(node);
}

std::optional<std::string> Converter::outOfRangeObserved(const Node& node) const {
  if (options_.half != DataType::Float16 || options_.observed.empty()) return std::nullopt;
  auto beyond = [&](const Value* v) -> std::optional<std::string> {
    if (!isFloat32(v)) return std::nullopt;
    auto it = options_.observed.find(v);
    if (it == options_.observed.end() || it->second * 2 <= kHalfMax) return std::nullopt;
    return fmt::format(
        "tensor '{}' reaches |x| = {:.4g} on the observed data, too close to or "
        "beyond float16's range ({})",
        v->name(), it->second, kHalfMax);
  };
  for (const Value* v : node.outputs()) {
    if (std::optional<std::string> why = beyond(v)) return why;
  }
  for (const Value* v : node.inputs()) {
    if (std::optional<std::string> why = beyond(v)) return why;
  }
  return std::nullopt;
}

std::optional<std::string> Converter::outOfRangeConstant(const Node& node) const {
  if (options_.half != DataType::Float16) return std::nullopt;
  for (const Value* input : node.inputs()) {
    if (!isFloat32(input)) continue;
    auto cached = constantMaxAbs_.find(input);
    if (cached == constantMaxAbs_.end()) {
      double maxAbs = 0.0;
      if (std::optional<Tensor> tensor = fold::constantOf(input)) {
        for (double v : tensor->toDoubles()) {
          if (std::isfinite(v)) maxAbs = std::max(maxAbs, std::abs(v));
        }
      }
      cached = constantMaxAbs_.emplace(input, maxAbs).first;
    }
    if (cached->second > kHalfMax) {
      return fmt::format("constant '{}' holds values beyond float16's range (|x| up to {:.4g})",
                         input->name(), cached->second);
    }
  }
  return std::nullopt;
}

void Converter::convertGraph(Graph& graph, bool isMain, bool parentConverted) {
  const bool halfInterface = isMain ? !options_.keepIoTypes : parentConverted;
  for (Value* input : graph.inputs()) {
    if (!input->isInitializer() && isFloat32(input) && halfInterface) makeHalf(input);
  }
  for (Node* node : nodeList(graph)) convertNode(*node);
  fixGraphOutputs(graph, halfInterface, isMain);
}

void Converter::convertNode(Node& node) {
  fixInputs(node);
  const bool convert = converts(node);
  for (Graph* body : node.subgraphs()) convertGraph(*body, /*isMain=*/false, convert);
  bool touchesFloat = false;
  for (const Value* v : node.inputs()) touchesFloat = touchesFloat || isFloat32(v);
  for (const Value* v : node.outputs()) touchesFloat = touchesFloat || isFloat32(v);
  if (!convert) {
    if (touchesFloat && node.opType() != "Constant") {
      std::optional<std::string> outOfRange = rangeReason(node);
      if (!outOfRange) outOfRange = qdqReason(node);
      if (isQdq(node) && !outOfRange) return;  // its neighbours are float32: nothing to say
      result_.missed(node.describe(), outOfRange ? fmt::format("kept in float32: {}", *outOfRange)
                                      : node.domain().empty()
                                          ? "kept in float32 (blocked op type or node name)"
                                          : "kept in float32 (an op outside the ONNX domain)");
      result_.statistics.add("nodes-kept-float32");
    }
    return;
  }
  const DataType half = options_.half;
  const std::string& op = node.opType();
  const bool floatOut = node.numOutputs() > 0 && isFloat32(node.output(0));
  if (op == "Cast" && node.attrInt("to", 0) == static_cast<int64_t>(DataType::Float)) {
    node.setAttr(Attribute::makeInt("to", static_cast<int64_t>(half)));
  }
  if ((op == "RandomNormal" || op == "RandomUniform") && floatOut &&
      node.attrInt("dtype", static_cast<int64_t>(DataType::Float)) ==
          static_cast<int64_t>(DataType::Float)) {
    node.setAttr(Attribute::makeInt("dtype", static_cast<int64_t>(half)));
  }
  if ((op == "RandomNormalLike" || op == "RandomUniformLike" || op == "EyeLike" ||
       op == "Bernoulli") &&
      node.attrInt("dtype", 0) == static_cast<int64_t>(DataType::Float)) {
    node.setAttr(Attribute::makeInt("dtype", static_cast<int64_t>(half)));
  }
  if (op == "ConstantOfShape" && floatOut && !node.hasAttr("value")) {
    // The default value is a float32 zero.
    const double zero = 0;
    auto t = std::make_shared<Tensor>(Tensor::fromDoubles(half, {1}, std::span(&zero, 1)));
    node.setAttr(Attribute::makeTensor("value", t));
  }
  for (Attribute& attr : node.mutableAttributes()) {
    if (attr.kind == AttrKind::Tensor && attr.t && attr.t->dataType() == DataType::Float) {
      attr.t = std::make_shared<Tensor>(toHalf(*attr.t, node.name() + "." + attr.name));
      result_.statistics.add("attribute-tensors-converted");
    }
  }
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    Value* out = node.output(i);
    if (isFloat32(out) && !outputStaysFloat32(node, i)) makeHalf(out);
  }
  if (touchesFloat) result_.statistics.add("nodes-converted");
}

void Converter::fixInputs(Node& node) {
  const bool convert = converts(node);
  for (size_t i = 0; i < node.numInputs(); ++i) {
    Value* v = node.input(i);
    if (!isFloat32(v) || inputTakesAnyType(node, i)) continue;
    Value* wanted = inPrecision(v, convert && !inputStaysFloat32(node, i));
    if (wanted != v) node.setInput(i, wanted);
  }
}

void Converter::fixGraphOutputs(Graph& graph, bool wantHalf, bool isMain) {
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    Value* v = graph.outputs()[i];
    if (!isFloat32(v) || isHalf(v) == wantHalf) continue;
    Value* wanted = inPrecision(v, wantHalf);
    if (wanted == v) continue;
    // The main graph's interface keeps its names: the Cast's output takes the output's name.
    if (isMain && v->producer() != nullptr && created_.count(wanted) > 0) {
      const std::string name = v->name();
      v->setName(model_.uniqueValueName(name + (isHalf(v) ? suffixFor(options_.half) : "_fp32")));
      wanted->setName(name);
    }
    graph.setOutput(i, wanted);
  }
}

Value* Converter::inPrecision(Value* value, bool half) {
  if (isHalf(value) == half) return value;
  if (half && fold::isConstantValue(value)) return halfConstant(value);
  return castOf(value, half ? options_.half : DataType::Float);
}

Value* Converter::castOf(Value* value, DataType to) {
  const auto key = std::make_pair(static_cast<const Value*>(value), to);
  if (auto it = casts_.find(key); it != casts_.end()) return it->second;
  if (Value* copy = dequantizeCopy(value, to)) {
    casts_[key] = copy;
    return copy;
  }
  Graph& graph = *value->graph();
  Node* before = value->producer() != nullptr ? value->producer()->next() : graph.firstNode();
  Node* cast = graph.createEmptyNode("Cast", "", before);
  cast->setName(model_.uniqueNodeName(value->name() + "_to" + suffixFor(to)));
  cast->addInput(value);
  cast->setAttr(Attribute::makeInt("to", static_cast<int64_t>(to)));
  Value* out = addOutputIn(*cast, *value, to);
  casts_[key] = out;
  result_.statistics.add("casts-inserted");
  return out;
}

Value* Converter::addOutputIn(Node& node, const Value& value, DataType to) {
  Value* out = node.addOutput(model_.uniqueValueName(value.name() + suffixFor(to)));
  // An untyped value gives an untyped output: ONNX infers both.
  if (value.type().isTensor()) {
    ValueType type = value.type();
    type.elemType = to;
    out->setType(type);
  }
  types_.set(out, to);
  if (to == options_.half) half_.insert(out);
  created_.insert(out);
  return out;
}

Value* Converter::dequantizeCopy(Value* value, DataType to) {
  Node* dq = value->producer();
  if (dq == nullptr || !isQdq(*dq) || !isDequantize(*dq) || value != dq->output(0)) {
    return nullptr;
  }
  const bool toHalf = to == options_.half;
  Value* scale = dq->input(1);
  if (toHalf) {
    if (qdqReason(*dq)) return nullptr;
    scale = inPrecision(scale, /*half=*/true);
  } else if (auto original = originalConstants_.find(scale); original != originalConstants_.end()) {
    scale = original->second;
  }
  if (scale == nullptr || types_.of(scale) != to) return nullptr;
  Graph& graph = *value->graph();
  Node* copy = graph.createEmptyNode("DequantizeLinear", dq->domain(), dq->next());
  copy->setName(
      model_.uniqueNodeName((dq->name().empty() ? value->name() : dq->name()) + suffixFor(to)));
  for (size_t i = 0; i < dq->numInputs(); ++i) copy->addInput(i == 1 ? scale : dq->input(i));
  ValueMap none;
  for (const Attribute& attr : dq->attributes()) copy->setAttr(attr.clone(copy, none));
  Value* out = addOutputIn(*copy, *value, to);
  result_.statistics.add("dequantize-copies");
  result_.applied(dq->describe(),
                  fmt::format("copied as '{}' for readers in {}: a Cast after it would break "
                              "their fusion",
                              copy->name(), dataTypeName(to)));
  return out;
}

Value* Converter::halfConstant(Value* value) {
  if (auto it = halfConstants_.find(value); it != halfConstants_.end()) return it->second;
  Value* half = nullptr;
  const std::string name = model_.uniqueValueName(value->name() + suffixFor(options_.half));
  if (value->isInitializer()) {
    Tensor t = toHalf(*value->initializer(), value->name());
    t.setName(name);
    half = value->graph()->addInitializer(std::make_shared<Tensor>(std::move(t)));
    result_.statistics.add("initializers-converted");
  } else {
    Node* constant = value->producer();
    std::optional<Tensor> original = fold::constantNodeTensor(*constant);
    Tensor t = toHalf(*original, value->name());
    Node* copy = value->graph()->createEmptyNode("Constant", "", constant->next());
    copy->setName(model_.uniqueNodeName(constant->name().empty() ? name : constant->name()));
    copy->setAttr(Attribute::makeTensor("value", std::make_shared<Tensor>(std::move(t))));
    half = copy->addOutput(name);
    ValueType type = value->type();
    if (type.isTensor()) type.elemType = options_.half;
    half->setType(type);
    result_.statistics.add("constants-converted");
  }
  types_.set(half, options_.half);
  half_.insert(half);
  halfConstants_[value] = half;
  originalConstants_[half] = value;
  replacedConstants_.push_back(value);
  return half;
}

Tensor Converter::toHalf(const Tensor& tensor, const std::string& name) {
  std::vector<double> values = tensor.toDoubles();
  int64_t clampedCount = 0;
  if (options_.half == DataType::Float16) {
    for (double& v : values) {
      if (std::isfinite(v) && std::abs(v) > kHalfMax) {
        v = std::copysign(kHalfMax, v);
        ++clampedCount;
      }
    }
  }
  if (clampedCount > 0) {
    clamped_.emplace_back(name, clampedCount);
    result_.note(
        fmt::format("tensor '{}'", name),
        fmt::format("{} value(s) beyond float16's range clamped to +-65504", clampedCount));
    result_.statistics.add("values-clamped", clampedCount);
  }
  Tensor out = Tensor::fromDoubles(options_.half, tensor.dims(), values);
  out.setName(tensor.name());
  return out;
}

void Converter::makeHalf(Value* value) {
  if (value->type().isTensor()) value->mutableType().elemType = options_.half;
  types_.set(value, options_.half);
  half_.insert(value);
  result_.statistics.add("tensors-converted");
}

void Converter::removeRedundantCasts() {
  std::vector<Node*> casts;
  model_.graph().walk([&](Node* node) {
    if (node->is("Cast")) casts.push_back(node);
  });
  auto isFloatType = [](DataType t) { return isFloatingPoint(t); };
  for (Node* cast : casts) {
    Value* in = cast->input(0);
    Value* out = cast->output(0);
    if (in == nullptr || out == nullptr) continue;
    const auto to = static_cast<DataType>(cast->attrInt("to", 0));
    Value* replacement = nullptr;
    const char* what = nullptr;
    if (types_.of(in) == to) {
      replacement = in;
      what = "identity-casts-removed";
    } else if (Node* first = in->producer();
               first != nullptr && first->is("Cast") && first->input(0) != nullptr) {
      Value* source = first->input(0);
      const auto mid = static_cast<DataType>(first->attrInt("to", 0));
      if (types_.of(source) == to && isFloatType(to) && isFloatType(mid)) {
        replacement = source;
        what = "cast-pairs-removed";
      }
    }
    if (replacement == nullptr) continue;
    // A graph output read straight from an input, a constant or another output would lose its
    // name.
    if (out->isGraphOutput() &&
        (replacement->producer() == nullptr || replacement->isGraphOutput())) {
      continue;
    }
    out->replaceAllUsesWith(replacement);
    if (out->hasUses() || out->isGraphOutput()) continue;
    cast->graph()->eraseNode(cast);
    fold::eraseIfUnused(in);
    result_.statistics.add(what);
  }
}

void Converter::eraseUnusedOriginals() {
  for (Value* original : replacedConstants_) {
    if (original->hasUses() || original->isGraphOutput()) continue;
    const std::string name = original->name();
    Value* half = halfConstants_[original];
    if (original->isInitializer() && original->isGraphInput()) continue;
    fold::eraseIfUnused(original);
    if (!model_.isNameUsed(name)) half->setName(name);
  }
}

}  // namespace qopt::tofp16
