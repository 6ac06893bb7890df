#include "qopt/half/QdqPrecision.h"

#include <cmath>

#include <fmt/format.h>

#include "qopt/constants/ConstantValue.h"

namespace qopt::tofp16 {

bool isQuantize(const Node& node) {
  return node.domain().empty() && node.opType() == "QuantizeLinear";
}

bool isDequantize(const Node& node) {
  return (node.domain().empty() || node.domain() == "com.microsoft") &&
         node.opType() == "DequantizeLinear";
}

bool isQdq(const Node& node) {
  return node.domain().empty() &&
         (node.opType() == "QuantizeLinear" || node.opType() == "DequantizeLinear");
}

std::optional<std::string> halfScaleProblem(const Node& node, DataType half) {
  if (!node.domain().empty()) {
    return fmt::format("{} of domain '{}' keeps float32 scales", node.opType(), node.domain());
  }
  const Value* scale = node.numInputs() > 1 ? node.input(1) : nullptr;
  if (scale == nullptr) return std::string("it has no scale input");
  std::optional<Tensor> tensor = fold::constantOf(scale);
  if (!tensor) return fmt::format("its scale '{}' is computed, not a constant", scale->name());
  if (tensor->dataType() != DataType::Float) return std::nullopt;  // already half (or other)
  // float16: 11 significant bits from 2^-14 up; below that the spacing is 2^-24 and a scale
  // loses digits unless it is a multiple of it. bfloat16 has float32's exponent range.
  const double minNormal = half == DataType::Float16 ? std::ldexp(1.0, -14) : 1.2e-38;
  const double maxFinite = half == DataType::Float16 ? 65504.0 : 3.3e38;
  const double subnormalStep = std::ldexp(1.0, -24);
  for (double v : tensor->toDoubles()) {
    if (!std::isfinite(v) || v <= 0) {
      return fmt::format("its scale '{}' holds {}, not a positive finite number", scale->name(), v);
    }
    const bool exactSubnormal =
        half == DataType::Float16 && std::fmod(v, subnormalStep) == 0.0 && v < minNormal;
    if ((v < minNormal && !exactSubnormal) || v > maxFinite) {
      return fmt::format("its scale '{}' holds {:.4g}, outside {}'s normal range", scale->name(), v,
                         half == DataType::Float16 ? "float16" : "bfloat16");
    }
  }
  return std::nullopt;
}

bool hasQdq(const Graph& graph) {
  for (const Node* node : graph.nodes()) {
    if (isQdq(*node)) return true;
    for (const Graph* body : node->subgraphs()) {
      if (hasQdq(*body)) return true;
    }
  }
  return false;
}

}  // namespace qopt::tofp16
