#include "ValueBounds.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "qopt/constants/ConstantValue.h"

namespace qopt::stripqdq {
namespace {

// Producers are followed this many steps at most: bounds far upstream rarely survive anyway.
constexpr int kMaxDepth = 16;

std::optional<double> scalarConstant(const Value* value) {
  if (value == nullptr) return std::nullopt;
  std::optional<Tensor> t = fold::constantThroughCasts(value);
  if (!t || t->numElements() != 1) return std::nullopt;
  return t->doubleAt(0);
}

// Ops whose output values are a subset (or average, for pooling) of their first input's values.
bool keepsInputBounds(std::string_view op) {
  static constexpr std::string_view kOps[] = {
      "Reshape",   "Flatten",   "Transpose",     "Squeeze",      "Unsqueeze",
      "Identity",  "MaxPool",   "GlobalMaxPool", "AveragePool",  "GlobalAveragePool",
      "Slice",     "Gather",    "Expand",        "DepthToSpace", "SpaceToDepth",
      "ReduceMax", "ReduceMin", "ReduceMean",    "Tile",         "Dropout"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

Bounds boundsAt(const Value* value, int depth) {
  Bounds unknown;
  const Node* node = value->producer();
  if (node == nullptr || depth > kMaxDepth || !node->domain().empty()) return unknown;
  const std::string& op = node->opType();
  if (op == "Relu") {
    Bounds in = boundsAt(node->input(0), depth + 1);
    return {0.0, std::max(0.0, in.hi)};
  }
  if (op == "Clip") {
    Bounds in = boundsAt(node->input(0), depth + 1);
    std::optional<double> lo, hi;
    if (node->hasAttr("min") || node->hasAttr("max")) {  // opset < 11
      if (node->hasAttr("min")) lo = node->attrFloat("min", 0);
      if (node->hasAttr("max")) hi = node->attrFloat("max", 0);
    } else {
      lo = scalarConstant(node->input(1));
      hi = scalarConstant(node->input(2));
    }
    return {lo ? std::max(*lo, in.lo) : in.lo, hi ? std::min(*hi, in.hi) : in.hi};
  }
  if (op == "Sigmoid" || op == "HardSigmoid" || op == "Softmax") return {0.0, 1.0};
  if (op == "Tanh") return {-1.0, 1.0};
  if (op == "Abs" || op == "Exp" || op == "Sqrt" || op == "Softplus") return {0.0, unknown.hi};
  if (op == "Concat" || op == "Max" || op == "Min") {
    Bounds all{unknown.hi, unknown.lo};
    for (const Value* in : node->inputs()) {
      if (in == nullptr) continue;
      Bounds b = boundsAt(in, depth + 1);
      all.lo = std::min(all.lo, b.lo);
      all.hi = std::max(all.hi, b.hi);
    }
    return all;
  }
  if (keepsInputBounds(op) && node->input(0) != nullptr) return boundsAt(node->input(0), depth + 1);
  return unknown;
}

}  // namespace

Bounds knownBounds(const Value* value) {
  return boundsAt(value, 0);
}

}  // namespace qopt::stripqdq
