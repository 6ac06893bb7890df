#include "CommutingOps.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "qopt/constants/ConstantValue.h"

namespace qopt::qdq {

bool isDataMovementOp(const Node& node) {
  static const char* const kOps[] = {"MaxPool", "Reshape",   "Flatten", "Transpose",
                                     "Squeeze", "Unsqueeze", "Slice",   "Gather",
                                     "Split",   "Pad",       "Resize",  "Concat"};
  if (!node.domain().empty()) return false;
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const char* op) { return node.opType() == op; });
}

std::vector<size_t> dataInputs(const Node& node) {
  if (node.is("Concat")) {
    std::vector<size_t> all(node.numInputs());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }
  return {0};
}

namespace {

std::string padRefusal(const Node& node, int64_t opset) {
  if (node.attrString("mode", "constant") != "constant") {
    return fmt::format("kept in float: Pad mode '{}' computes new values",
                       node.attrString("mode", "constant"));
  }
  if (opset < 11) return "kept in float: Pad before opset 11 takes only floating point";
  if (const Value* value = node.input(2)) {
    std::optional<Tensor> t = fold::constantThroughCasts(value);
    if (!t) return "kept in float: its pad value is not a constant";
    std::vector<double> v = t->toDoubles();
    if (!v.empty() && v[0] != 0.0) {
      // A non-zero pad value is only exact when it is a quantization level; kept simple and safe.
      return fmt::format(
          "kept in float: its pad value {:g} is not zero, so it does not map to "
          "the zero point",
          v[0]);
    }
  }
  return {};
}

}  // namespace

std::string whyNotCommuting(const Node& node, const QuantParams& params, int64_t opset) {
  if (!params.perTensor())
    return "kept in float: quantized per axis (only per-tensor quantization moves)";
  if (node.is("MaxPool")) {
    if (opset < 12) return "kept in float: MaxPool takes 8-bit integers from opset 12";
    if (node.numOutputs() > 1 && node.output(1) && !node.output(1)->isAbsent() &&
        (node.output(1)->hasUses() || node.output(1)->isGraphOutput())) {
      return "kept in float: its Indices output is used";
    }
    return {};
  }
  if (node.is("Gather")) {
    if (!fold::isConstantValue(node.input(1)) && !fold::constantThroughCasts(node.input(1))) {
      return "kept in float: its indices are not constant";
    }
    return {};
  }
  if (node.is("Pad")) return padRefusal(node, opset);
  if (node.is("Resize")) {
    std::string mode = node.attrString("mode", "nearest");
    if (mode != "nearest") {
      return fmt::format("kept in float: Resize mode '{}' interpolates new values", mode);
    }
    if (node.attrString("coordinate_transformation_mode") == "tf_crop_and_resize") {
      return "kept in float: tf_crop_and_resize fills with an extrapolation value";
    }
    return {};
  }
  return {};
}

void adaptToIntegers(Node& node, const QuantParams& params) {
  if (!node.is("Pad")) return;
  // The float padding 0 quantizes to the zero point; on integers the pad value must say so.
  if (params.zeroPoint() == 0 && node.input(2) == nullptr) return;
  Graph& graph = *node.graph();
  double zp = static_cast<double>(params.zeroPoint());
  auto tensor = std::make_shared<Tensor>(Tensor::fromDoubles(params.type, {}, {&zp, 1}));
  tensor->setName(graph.model().uniqueValueName(node.output(0)->name() + "_pad_value"));
  Value* value = graph.addInitializer(std::move(tensor));
  Value* old = node.input(2);
  while (node.numInputs() < 3) node.addInput(nullptr);
  node.setInput(2, value);
  if (old) fold::eraseIfUnused(old);
}

}  // namespace qopt::qdq
