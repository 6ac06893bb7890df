#include "BiasUpdate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "qopt/constants/ConstantValue.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::biascorrect {
namespace {

DataType floatTypeOf(const Value* value) {
  const ValueType& type = value->type();
  return type.isTensor() && isFloatingPoint(type.elemType) ? type.elemType : DataType::Float;
}

/// One value per channel: `channels` elements, every dim 1 but the last.
bool perChannel(const Tensor& tensor, int64_t channels) {
  if (static_cast<int64_t>(tensor.numElements()) != channels || tensor.dims().empty()) {
    return false;
  }
  for (size_t d = 0; d + 1 < tensor.dims().size(); ++d) {
    if (tensor.dims()[d] != 1) return false;
  }
  return tensor.dims().back() == channels;
}

/// -shift * factor per channel, as a [channels] tensor of `type`.
Tensor newBias(const std::vector<double>& shift, double factor, DataType type) {
  std::vector<double> values(shift.size());
  for (size_t c = 0; c < shift.size(); ++c) values[c] = -shift[c] * factor;
  return Tensor::fromDoubles(type, {static_cast<int64_t>(shift.size())}, values);
}

/// An int32 bias behind DequantizeLinear (ONNX Runtime's QDQ format): q - shift / scale, rounded
/// half to even and saturated, with the bias's own per-channel or per-tensor scales.
BiasOutcome requantize(Node& dq, const std::vector<double>& shift, double factor,
                       std::string& why) {
  if (dq.output(0)->uses().size() != 1) {
    why = "its int32 bias is read by other nodes too";
    return BiasOutcome::Skipped;
  }
  std::optional<Tensor> q = fold::constantOf(dq.input(0));
  std::optional<Tensor> scales = fold::constantOf(dq.input(1));
  const auto channels = static_cast<int64_t>(shift.size());
  if (!q || q->dataType() != DataType::Int32 || !perChannel(*q, channels) || !scales ||
      (scales->numElements() != 1 && static_cast<int64_t>(scales->numElements()) != channels)) {
    why = "its dequantized bias is not an int32 constant with one value per channel";
    return BiasOutcome::Skipped;
  }
  if (dq.input(2) != nullptr && !dq.input(2)->isAbsent()) {
    std::optional<Tensor> zero = fold::constantOf(dq.input(2));
    std::vector<int64_t> zeros = zero ? zero->toInt64s() : std::vector<int64_t>{1};
    if (std::any_of(zeros.begin(), zeros.end(), [](int64_t z) { return z != 0; })) {
      why = "its int32 bias has a non-zero zero point";
      return BiasOutcome::Skipped;
    }
  }
  std::vector<int64_t> values = q->toInt64s();
  std::vector<double> s = scales->toDoubles();
  std::vector<int32_t> out(values.size());
  for (size_t c = 0; c < values.size(); ++c) {
    const double scale = s[s.size() == 1 ? 0 : c];
    const double moved = std::nearbyint(static_cast<double>(values[c]) - shift[c] * factor / scale);
    out[c] = static_cast<int32_t>(std::clamp(moved, -2147483648.0, 2147483647.0));
  }
  fold::installConstant({Use{&dq, 0}}, Tensor::fromPod<int32_t>(DataType::Int32, q->dims(), out),
                        dq.input(0)->name() + "_corrected");
  return BiasOutcome::Corrected;
}

/// The bias at input `slot` of `node`, scaled by `factor` (1 / Gemm's beta).
BiasOutcome correctInput(Node& node, size_t slot, const std::vector<double>& shift, double factor,
                         std::string& why) {
  Value* bias = node.input(slot);
  const auto channels = static_cast<int64_t>(shift.size());
  if (bias == nullptr || bias->isAbsent()) {
    Value* added = quant::addNamedInitializer(*node.graph(), node.output(0)->name() + "_bias",
                                              newBias(shift, factor, floatTypeOf(node.output(0))));
    while (node.numInputs() < slot) node.addInput(nullptr);
    if (node.numInputs() == slot) {
      node.addInput(added);
    } else {
      node.setInput(slot, added);
    }
    return BiasOutcome::Added;
  }
  if (Node* dq = bias->producer(); dq != nullptr && dq->is("DequantizeLinear")) {
    return requantize(*dq, shift, factor, why);
  }
  std::optional<Tensor> tensor = fold::constantOf(bias);
  if (!tensor || !isFloatingPoint(tensor->dataType())) {
    why = "its bias is not a float constant";
    return BiasOutcome::Skipped;
  }
  if (!perChannel(*tensor, channels)) {
    why = fmt::format("its bias (dims [{}]) does not hold one value per output channel ({})",
                      fmt::join(tensor->dims(), ", "), channels);
    return BiasOutcome::Skipped;
  }
  std::vector<double> values = tensor->toDoubles();
  for (size_t c = 0; c < values.size(); ++c) values[c] -= shift[c] * factor;
  fold::installConstant({Use{&node, static_cast<uint32_t>(slot)}},
                        Tensor::fromDoubles(tensor->dataType(), tensor->dims(), values),
                        bias->name() + "_corrected");
  return BiasOutcome::Corrected;
}

/// A MatMul's bias is the constant of the Add that alone reads its output; one is added when
/// there is none.
BiasOutcome correctMatMul(Node& node, const std::vector<double>& shift, std::string& why) {
  Value* out = node.output(0);
  if (out->uses().size() == 1 && !out->isGraphOutput()) {
    const Use& use = out->uses().front();
    Node& add = *use.user;
    if (add.is("Add") && add.numInputs() == 2) {
      const size_t other = use.index == 0 ? 1 : 0;
      std::optional<Tensor> tensor = fold::constantOf(add.input(other));
      if (tensor && isFloatingPoint(tensor->dataType()) &&
          perChannel(*tensor, static_cast<int64_t>(shift.size()))) {
        return correctInput(add, other, shift, 1.0, why);
      }
    }
  }
  Graph& graph = *node.graph();
  Value* bias = quant::addNamedInitializer(graph, out->name() + "_bias",
                                           newBias(shift, 1.0, floatTypeOf(out)));
  Node* add = graph.createEmptyNode("Add", {}, node.next());
  add->setName(graph.model().uniqueNodeName(out->name() + "_bias_Add"));
  add->addInput(out);
  add->addInput(bias);
  Value* biased = add->addOutput(graph.model().uniqueValueName(out->name() + "_biased"));
  biased->setType(out->type());
  out->replaceAllUsesExcept(biased, add);
  return BiasOutcome::Added;
}

}  // namespace

BiasOutcome subtractFromBias(const CorrectedLayer& layer, const std::vector<double>& shift,
                             std::string& why) {
  Node& node = *layer.node;
  if (node.is("MatMul")) return correctMatMul(node, shift, why);
  const double factor = node.is("Gemm") ? 1.0 / double{node.attrFloat("beta", 1.0f)} : 1.0;
  return correctInput(node, 2, shift, factor, why);
}

}  // namespace qopt::biascorrect
