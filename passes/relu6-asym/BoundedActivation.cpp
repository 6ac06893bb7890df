#include "BoundedActivation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qopt/constants/ConstantValue.h"

namespace qopt::relu6 {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool wants(const std::vector<std::string>& families, std::string_view family) {
  return std::find(families.begin(), families.end(), family) != families.end();
}

/// Every element of the constant `value` equals `expected` (a broadcast scalar or a filled
/// tensor, possibly behind Cast nodes).
bool isConstantEqualTo(const Value* value, double expected) {
  std::optional<Tensor> t = fold::constantThroughCasts(value);
  if (!t || !isFloatingPoint(t->dataType())) return false;
  std::vector<double> values = t->toDoubles();
  if (values.empty()) return false;
  return std::all_of(values.begin(), values.end(), [&](double v) { return v == expected; });
}

/// The one other input of a two-input Min/Max, when the constant one equals `bound`.
Value* operandBesides(const Node* node, double bound) {
  if (node->numInputs() != 2 || !node->input(0) || !node->input(1)) return nullptr;
  if (isConstantEqualTo(node->input(1), bound)) return node->input(0);
  if (isConstantEqualTo(node->input(0), bound)) return node->input(1);
  return nullptr;
}

/// `value` is read only by `reader` and is not a graph output: the node making it can go when
/// `reader` does.
bool onlyFeeds(const Value* value, const Node* reader) {
  if (value->isGraphOutput()) return false;
  for (const Use& use : value->uses()) {
    if (use.user != reader) return false;
  }
  return true;
}

std::optional<BoundedActivation> matchClip(Node* clip) {
  double lo = -kInfinity, hi = kInfinity;
  std::string form;
  if (clip->hasAttr("min") || clip->hasAttr("max") || clip->numInputs() == 1) {
    // Clip-6: bounds are attributes (defaults: the whole float range).
    if (clip->numInputs() != 1) return std::nullopt;
    lo = clip->attrFloat("min", -std::numeric_limits<float>::max());
    hi = clip->attrFloat("max", std::numeric_limits<float>::max());
    form = "clip-attributes";
  } else {
    auto bound = [](const Value* v, double fallback) -> std::optional<double> {
      if (v == nullptr) return fallback;
      std::optional<Tensor> t = fold::constantThroughCasts(v);
      if (!t || t->numElements() != 1) return std::nullopt;
      return t->doubleAt(0);
    };
    std::optional<double> min = bound(clip->input(1), -kInfinity);
    std::optional<double> max = bound(clip->input(2), kInfinity);
    if (!min || !max) return std::nullopt;
    lo = *min;
    hi = *max;
    form = "clip-inputs";
  }
  if (lo != 0.0 || hi != 6.0 || clip->input(0) == nullptr) return std::nullopt;
  BoundedActivation act;
  act.form = form;
  act.input = clip->input(0);
  act.output = clip->output(0);
  act.nodes = {clip};
  act.lo = 0;
  act.hi = 6;
  act.isClip = true;
  act.removable = true;
  return act;
}

/// Min(Relu(x), 6), Min(Max(x, 0), 6) and Max(Min(x, 6), 0).
std::optional<BoundedActivation> matchTwoStep(Node* last) {
  double outerBound = last->is("Min") ? 6.0 : 0.0;
  double innerBound = last->is("Min") ? 0.0 : 6.0;
  Value* inner = operandBesides(last, outerBound);
  if (inner == nullptr || inner->producer() == nullptr) return std::nullopt;
  Node* first = inner->producer();
  BoundedActivation act;
  if (last->is("Min") && first->is("Relu")) {
    act.form = "relu-min";
    act.input = first->input(0);
  } else if (last->is("Min") && first->is("Max")) {
    act.form = "max-min";
    act.input = operandBesides(first, innerBound);
  } else if (last->is("Max") && first->is("Min")) {
    act.form = "min-max";
    act.input = operandBesides(first, innerBound);
  } else {
    return std::nullopt;
  }
  if (act.input == nullptr) return std::nullopt;
  act.output = last->output(0);
  act.nodes = {first, last};
  act.lo = 0;
  act.hi = 6;
  act.isClip = true;
  act.removable = onlyFeeds(inner, last);
  return act;
}

}  // namespace

std::optional<BoundedActivation> matchBoundedActivation(Node* node,
                                                        const std::vector<std::string>& families) {
  if (!node->domain().empty() || node->numOutputs() != 1) return std::nullopt;
  if (wants(families, "relu6")) {
    if (node->is("Clip")) return matchClip(node);
    if (node->is("Min") || node->is("Max")) {
      if (auto act = matchTwoStep(node)) return act;
    }
  }
  if (node->input(0) == nullptr) return std::nullopt;
  BoundedActivation act;
  act.input = node->input(0);
  act.output = node->output(0);
  act.nodes = {node};
  if (node->is("Relu") && wants(families, "relu")) {
    // Bounded only by the calibration of the quantization that follows it.
    act.form = "relu";
    act.lo = 0;
    act.hi = kInfinity;
    act.isClip = true;
    act.removable = true;
    return act;
  }
  if ((node->is("Sigmoid") && wants(families, "sigmoid")) ||
      (node->is("HardSigmoid") && wants(families, "hardsigmoid"))) {
    act.form = node->is("Sigmoid") ? "sigmoid" : "hardsigmoid";
    act.lo = 0;
    act.hi = 1;
    return act;
  }
  return std::nullopt;
}

}  // namespace qopt::relu6
