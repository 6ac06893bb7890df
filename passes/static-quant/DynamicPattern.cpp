#include "DynamicPattern.h"

#include "qopt/constants/ConstantValue.h"

namespace qopt::staticquant {
namespace {

// The only reader of `value`, when it has exactly one and is not a graph output.
Node* soleUser(const Value* value) {
  if (value == nullptr || value->isGraphOutput() || value->uses().size() != 1) return nullptr;
  return value->uses().front().user;
}

bool isOutputOf(const Value* value, const Node* node, size_t index) {
  return value != nullptr && value->producer() == node && value->outputIndex() == index;
}

}  // namespace

std::optional<DynamicQuantized> matchDynamicQuantized(Node* integerOp, std::string& why) {
  DynamicQuantized match;
  match.integerOp = integerOp;
  Value* quantizedInput = integerOp->input(0);
  Node* dql = quantizedInput ? quantizedInput->producer() : nullptr;
  if (dql == nullptr || !dql->is("DynamicQuantizeLinear") || !isOutputOf(quantizedInput, dql, 0)) {
    why = "its first input does not come from DynamicQuantizeLinear";
    return std::nullopt;
  }
  if (!isOutputOf(integerOp->input(2), dql, 2)) {
    why = "its input zero point is not the DynamicQuantizeLinear's";
    return std::nullopt;
  }
  match.dynamicQuantize = dql;
  match.input = dql->input(0);
  match.weight = integerOp->input(1);
  std::optional<Tensor> weight = fold::constantThroughCasts(match.weight);
  if (!weight || (weight->dataType() != DataType::Int8 && weight->dataType() != DataType::UInt8)) {
    why = "its weight is not an 8-bit integer constant";
    return std::nullopt;
  }
  match.weightValues = std::move(*weight);
  if (Value* zp = integerOp->input(3)) {
    match.weightZeroPoint = fold::constantThroughCasts(zp);
    if (!match.weightZeroPoint) {
      why = "its weight zero point is not a constant";
      return std::nullopt;
    }
  }
  Node* cast = soleUser(integerOp->output(0));
  if (cast == nullptr || !cast->is("Cast") ||
      cast->attrInt("to", 0) != static_cast<int64_t>(DataType::Float)) {
    why = "its result is not only read by a Cast to float";
    return std::nullopt;
  }
  Node* mul = soleUser(cast->output(0));
  if (mul == nullptr || !mul->is("Mul") || mul->numInputs() != 2) {
    why = "the Cast's result is not only read by a Mul";
    return std::nullopt;
  }
  Value* scaleProduct = mul->input(0) == cast->output(0) ? mul->input(1) : mul->input(0);
  Node* scaleMul = scaleProduct ? scaleProduct->producer() : nullptr;
  if (scaleMul == nullptr || !scaleMul->is("Mul") || scaleMul->numInputs() != 2) {
    why = "the rescaling factor is not x_scale * weight_scale";
    return std::nullopt;
  }
  Value* weightScale = nullptr;
  if (isOutputOf(scaleMul->input(0), dql, 1)) {
    weightScale = scaleMul->input(1);
  } else if (isOutputOf(scaleMul->input(1), dql, 1)) {
    weightScale = scaleMul->input(0);
  }
  std::optional<Tensor> scale =
      weightScale ? fold::constantThroughCasts(weightScale) : std::nullopt;
  if (!scale || !isFloatingPoint(scale->dataType())) {
    why = "the rescaling factor is not x_scale times a constant weight scale";
    return std::nullopt;
  }
  match.weightScale = std::move(*scale);
  match.output = mul->output(0);
  return match;
}

}  // namespace qopt::staticquant
