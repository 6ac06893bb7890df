#include "NodeRewriter.h"

#include <fmt/format.h>

#include <memory>
#include <utility>

#include "qopt/constants/ConstantValue.h"

namespace qopt::opset {

std::optional<int64_t> introducedIn(std::string_view op) {
  // From the ONNX operator changelog: the default-domain ops added after opset 7.
  static const std::pair<std::string_view, int64_t> kIntroduced[] = {
      {"Expand", 8},
      {"Scan", 8},
      {"Acosh", 9},
      {"Asinh", 9},
      {"Atanh", 9},
      {"Cosh", 9},
      {"Sinh", 9},
      {"Compress", 9},
      {"ConstantOfShape", 9},
      {"Erf", 9},
      {"EyeLike", 9},
      {"IsNaN", 9},
      {"MaxUnpool", 9},
      {"MeanVarianceNormalization", 9},
      {"NonZero", 9},
      {"OneHot", 9},
      {"Scatter", 9},
      {"Shrink", 9},
      {"Sign", 9},
      {"TfIdfVectorizer", 9},
      {"Where", 9},
      {"ConvInteger", 10},
      {"DequantizeLinear", 10},
      {"IsInf", 10},
      {"MatMulInteger", 10},
      {"Mod", 10},
      {"NonMaxSuppression", 10},
      {"QLinearConv", 10},
      {"QLinearMatMul", 10},
      {"QuantizeLinear", 10},
      {"Resize", 10},
      {"ReverseSequence", 10},
      {"RoiAlign", 10},
      {"StringNormalizer", 10},
      {"ThresholdedRelu", 10},
      {"BitShift", 11},
      {"ConcatFromSequence", 11},
      {"CumSum", 11},
      {"Det", 11},
      {"DynamicQuantizeLinear", 11},
      {"GatherElements", 11},
      {"GatherND", 11},
      {"Range", 11},
      {"Round", 11},
      {"ScatterElements", 11},
      {"ScatterND", 11},
      {"SequenceAt", 11},
      {"SequenceConstruct", 11},
      {"SequenceEmpty", 11},
      {"SequenceErase", 11},
      {"SequenceInsert", 11},
      {"SequenceLength", 11},
      {"SplitToSequence", 11},
      {"Unique", 11},
      {"Celu", 12},
      {"Einsum", 12},
      {"GreaterOrEqual", 12},
      {"LessOrEqual", 12},
      {"NegativeLogLikelihoodLoss", 12},
      {"SoftmaxCrossEntropyLoss", 12},
      {"HardSwish", 14},
      {"Trilu", 14},
      {"Bernoulli", 15},
      {"CastLike", 15},
      {"Optional", 15},
      {"OptionalGetElement", 15},
      {"OptionalHasElement", 15},
      {"GridSample", 16},
      {"BlackmanWindow", 17},
      {"DFT", 17},
      {"HammingWindow", 17},
      {"HannWindow", 17},
      {"LayerNormalization", 17},
      {"MelWeightMatrix", 17},
      {"STFT", 17},
      {"SequenceMap", 17},
      {"BitwiseAnd", 18},
      {"BitwiseNot", 18},
      {"BitwiseOr", 18},
      {"BitwiseXor", 18},
      {"CenterCropPad", 18},
      {"Col2Im", 18},
      {"GroupNormalization", 18},
      {"Mish", 18},
      {"DeformConv", 19},
      {"AffineGrid", 20},
      {"Gelu", 20},
      {"ImageDecoder", 20},
      {"RegexFullMatch", 20},
      {"StringConcat", 20},
      {"StringSplit", 20},
  };
  for (const auto& [name, version] : kIntroduced) {
    if (name == op) return version;
  }
  return std::nullopt;
}

std::optional<int64_t> rankOf(const Value* value) {
  if (value == nullptr || !value->type().isTensor() || !value->type().shape) return std::nullopt;
  return static_cast<int64_t>(value->type().shape->size());
}

DataType elementTypeOf(const Value* value) {
  return value != nullptr && value->type().isTensor() ? value->type().elemType
                                                      : DataType::Undefined;
}

DataType constantTypeFor(const Value* value) {
  const DataType type = elementTypeOf(value);
  return type == DataType::Undefined ? DataType::Float : type;
}

Value* NodeRewriter::constant(Node& at, const std::string& base, Tensor tensor) {
  tensor.setName(model_.uniqueValueName(base));
  auto shared = std::make_shared<Tensor>(std::move(tensor));
  Value* value = at.graph()->addInitializer(shared);
  value->setType(ValueType::tensor(shared->dataType(), shared->dims()));
  return value;
}

Value* NodeRewriter::int64s(Node& at, const std::string& base, const std::vector<int64_t>& values) {
  return constant(
      at, base, Tensor::fromInt64s(DataType::Int64, {static_cast<int64_t>(values.size())}, values));
}

Value* NodeRewriter::scalar(Node& at, const std::string& base, DataType type, double value) {
  const double values[] = {value};
  return constant(at, base, Tensor::fromDoubles(type, {}, values));
}

std::string NodeRewriter::baseName(const Node& node, std::string_view what) const {
  const std::string& stem = node.name().empty() ? node.output(0)->name() : node.name();
  return fmt::format("{}_{}", stem, what);
}

void NodeRewriter::note(const Node& node, std::string what) {
  rewrites.emplace_back(node.describe(), std::move(what));
}

bool NodeRewriter::attributeToInput(Node& node, const char* attr, size_t index) {
  if (!node.hasAttr(attr)) return false;
  Value* value = int64s(node, baseName(node, attr), node.attrInts(attr));
  node.removeAttr(attr);
  while (node.numInputs() < index) node.addInput(nullptr);
  if (node.numInputs() == index) {
    node.addInput(value);
  } else {
    node.setInput(index, value);
  }
  note(node, fmt::format("attribute '{}' moved to input {}", attr, index));
  return true;
}

bool NodeRewriter::hasInput(const Node& node, size_t index) {
  const Value* v = node.input(index);
  return v != nullptr && !v->isAbsent();
}

std::optional<std::vector<int64_t>> NodeRewriter::constantInts(const Node& node, size_t index) {
  if (!hasInput(node, index)) return std::nullopt;
  std::optional<Tensor> t = fold::constantOf(node.input(index));
  if (!t) return std::nullopt;
  return t->toInt64s();
}

std::optional<std::vector<double>> NodeRewriter::constantDoubles(const Node& node, size_t index) {
  if (!hasInput(node, index)) return std::nullopt;
  std::optional<Tensor> t = fold::constantOf(node.input(index));
  if (!t) return std::nullopt;
  return t->toDoubles();
}

void NodeRewriter::dropInput(Node& node, size_t index) {
  if (index >= node.numInputs()) return;
  Value* old = node.input(index);
  node.setInput(index, nullptr);
  while (node.numInputs() > 0 && !hasInput(node, node.numInputs() - 1)) {
    node.removeInput(node.numInputs() - 1);
  }
  if (old != nullptr && !old->isAbsent()) fold::eraseIfUnused(old);
}

void NodeRewriter::inputToAttribute(Node& node, size_t index, const char* attr) {
  if (!hasInput(node, index)) {
    dropInput(node, index);
    return;
  }
  std::vector<int64_t> values = *constantInts(node, index);  // refusal() checked it
  node.setAttr(Attribute::makeInts(attr, std::move(values)));
  dropInput(node, index);
  note(node, fmt::format("input {} moved to attribute '{}'", index, attr));
}

}  // namespace qopt::opset
