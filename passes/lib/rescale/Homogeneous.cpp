#include "qopt/rescale/Homogeneous.h"

#include <fmt/format.h>

#include <limits>
#include <optional>

#include "qopt/constants/ConstantValue.h"

namespace qopt::equalize {
namespace {

// A scalar bound of Clip: the attribute before opset 11, the optional input after.
std::optional<double> clipBound(const Node& clip, int64_t opset, size_t input, const char* attr,
                                double absent, bool& known) {
  known = true;
  if (opset < 11) {
    const Attribute* a = clip.findAttr(attr);
    return a ? static_cast<double>(a->f) : absent;
  }
  const Value* v = clip.input(input);
  if (v == nullptr) return absent;
  std::optional<Tensor> t = fold::constantOf(v);
  if (!t || t->numElements() != 1 || !isFloatingPoint(t->dataType())) {
    known = false;
    return std::nullopt;
  }
  return t->toDoubles()[0];
}

}  // namespace

std::string scalingRefusal(const Node& activation) {
  if (activation.is("Relu")) return "";
  if (activation.is("Clip")) {
    int64_t opset = activation.graph()->model().opsetVersion("").value_or(1);
    bool minKnown = false, maxKnown = false;
    double inf = std::numeric_limits<double>::infinity();
    std::optional<double> lo = clipBound(activation, opset, 1, "min", -inf, minKnown);
    std::optional<double> hi = clipBound(activation, opset, 2, "max", inf, maxKnown);
    if (!minKnown || !maxKnown) return "the bounds of the Clip between them are not constants";
    if ((*lo == 0 || *lo == -inf) && *hi == inf) return "";
    if (*lo == 0) {
      return fmt::format(
          "the Clip between them bounds at {} (ReLU6-like): equalizing would need a per-channel "
          "bound, which Clip cannot hold and which TensorRT would not fuse as a Clip activation",
          *hi);
    }
    return fmt::format("the Clip between them bounds at [{}, {}], which rescaling would move", *lo,
                       *hi);
  }
  if (activation.is("LeakyRelu") || activation.is("PRelu")) {
    return fmt::format("{} between them is not handled", activation.opType());
  }
  return fmt::format("{} between them does not commute with per-channel scaling",
                     activation.opType());
}

}  // namespace qopt::equalize
