#include "qopt/qdq/NodeParams.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Error.h"

namespace qopt::qdq {

namespace {

std::string lowerName(DataType type) {
  std::string name(dataTypeName(type));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

int64_t QuantParams::qmin() const {
  return quantizedIntegerRange(type).value_or(std::pair<int64_t, int64_t>{0, 0}).first;
}
int64_t QuantParams::qmax() const {
  return quantizedIntegerRange(type).value_or(std::pair<int64_t, int64_t>{0, 0}).second;
}

bool QuantParams::sameAs(const QuantParams& other) const {
  if (type != other.type || scales != other.scales || zeroPoints != other.zeroPoints) return false;
  return perTensor() || axis == other.axis;
}

std::string QuantParams::describe() const {
  if (perTensor()) {
    return fmt::format("{} scale {:g} zero point {}", lowerName(type), scale(), zeroPoint());
  }
  return fmt::format("{} per axis {} ({} scales)", lowerName(type), axis, scales.size());
}

QuantParams paramsForRange(double lo, double hi, DataType type, bool symmetric,
                           DataType scaleType) {
  QuantParams p;
  p.type = type;
  p.scaleType = scaleType;
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  double scale = 0;
  int64_t zp = 0;
  if (symmetric || lo == 0.0) {
    // Zero maps to zero point 0 (signed) or to the lowest code (unsigned, non-negative range).
    bool isSigned = p.qmin() < 0;
    double amax = isSigned ? std::max(-lo, hi) : hi;
    scale = amax / static_cast<double>(p.qmax());
  } else {
    scale = (hi - lo) / static_cast<double>(p.qmax() - p.qmin());
    double z = std::nearbyint(static_cast<double>(p.qmin()) - lo / scale);
    zp = std::clamp(static_cast<int64_t>(z), p.qmin(), p.qmax());
  }
  // A zero scale is invalid; a constant-zero tensor still needs a positive step.
  if (!(scale > 0)) scale = 1.0;
  // Stored as float32: keep the value the file will hold, so comparisons see the same number.
  p.scales = {static_cast<double>(static_cast<float>(scale))};
  p.zeroPoints = {zp};
  return p;
}

bool isQuantize(const Node* node) {
  return node != nullptr && node->is("QuantizeLinear");
}
bool isDequantize(const Node* node) {
  return node != nullptr && node->is("DequantizeLinear");
}

std::optional<QuantParams> readQuantParams(const Node& node, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<QuantParams> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (node.attrInt("block_size", 0) != 0) return fail("it is blocked quantization");
  std::optional<Tensor> scale = fold::constantThroughCasts(node.input(1));
  if (!scale) return fail("its scale is not a constant");
  if (!isFloatingPoint(scale->dataType())) return fail("its scale is not floating point");
  QuantParams p;
  p.scaleType = scale->dataType();
  p.scales = scale->toDoubles();
  p.scaleDims = scale->dims();
  if (p.scales.empty()) return fail("its scale is empty");
  p.axis = node.attrInt("axis", 1);
  if (const Value* zpValue = node.input(2)) {
    std::optional<Tensor> zp = fold::constantThroughCasts(zpValue);
    if (!zp) return fail("its zero point is not a constant");
    p.type = zp->dataType();
    p.zeroPoints = zp->toInt64s();
    if (p.zeroPoints.size() != p.scales.size()) {
      return fail("its zero point and scale differ in size");
    }
  } else {
    p.type = DataType::UInt8;
    if (const Attribute* dtype = node.findAttr("output_dtype")) {
      if (auto t = dataTypeFromInt(dtype->i)) p.type = *t;
    }
    p.zeroPoints.assign(p.scales.size(), 0);
  }
  if (p.qmin() == p.qmax()) {
    return fail(fmt::format("its integer type {} is not handled", dataTypeName(p.type)));
  }
  return p;
}

std::optional<std::vector<Node*>> dequantizersOf(const Node& q) {
  const Value* out = q.output(0);
  if (out == nullptr || out->isGraphOutput()) return std::nullopt;
  std::vector<Node*> dqs;
  for (Node* user : out->users()) {
    if (!isDequantize(user)) return std::nullopt;
    for (size_t i = 1; i < user->numInputs(); ++i) {
      if (user->input(i) == out) return std::nullopt;
    }
    dqs.push_back(user);
  }
  return dqs;
}

void writeQuantParams(std::span<Node* const> nodes, const QuantParams& params,
                      const std::string& baseName) {
  if (nodes.empty()) return;
  Graph& graph = *nodes.front()->graph();
  Model& model = graph.model();
  // A per-tensor scale keeps the shape it had ({} or {1}); more than one element is per axis.
  std::vector<int64_t> dims = params.scaleDims;
  if (params.perTensor() && dims.size() > 1) dims = {};
  if (!params.perTensor()) dims = {static_cast<int64_t>(params.scales.size())};
  auto scaleTensor =
      std::make_shared<Tensor>(Tensor::fromDoubles(params.scaleType, dims, params.scales));
  scaleTensor->setName(model.uniqueValueName(baseName + "_scale"));
  std::vector<double> zps(params.zeroPoints.begin(), params.zeroPoints.end());
  auto zpTensor = std::make_shared<Tensor>(Tensor::fromDoubles(params.type, dims, zps));
  zpTensor->setName(model.uniqueValueName(baseName + "_zero_point"));
  Value* scaleValue = graph.addInitializer(std::move(scaleTensor));
  Value* zpValue = graph.addInitializer(std::move(zpTensor));

  std::vector<Value*> old;
  for (Node* node : nodes) {
    while (node->numInputs() < 3) node->addInput(nullptr);
    for (size_t i = 1; i < 3; ++i) {
      if (node->input(i)) old.push_back(node->input(i));
    }
    node->setInput(1, scaleValue);
    node->setInput(2, zpValue);
    if (params.perTensor()) node->removeAttr("axis");
    if (Attribute* dtype = node->findAttr("output_dtype")) {
      dtype->i = static_cast<int64_t>(params.type);
    }
    Value* quantized = isQuantize(node) ? node->output(0) : node->input(0);
    if (quantized && quantized->type().isTensor()) {
      quantized->mutableType().elemType = params.type;
    }
  }
  fold::eraseIfUnused(old);
}

}  // namespace qopt::qdq
