#include "qopt/rescale/ScaleFolding.h"

#include "qopt/analysis/ChannelAffine.h"

#include <fmt/format.h>

#include <optional>

#include "qopt/constants/ConstantValue.h"
#include "qopt/rescale/Homogeneous.h"

namespace qopt::smooth {
namespace {

using equalize::LayerKind;

// `constant` (broadcast with `channelDims`) divided by scales along the channel dim, or nullopt
// when the constant's dim there is neither 1 nor the channel count.
std::optional<Tensor> dividedByChannel(const Tensor& constant,
                                       const std::vector<int64_t>& channelDims,
                                       std::span<const double> scales) {
  const std::vector<int64_t>& cd = constant.dims();
  size_t rank = std::max(cd.size(), channelDims.size());
  std::vector<int64_t> c(rank, 1), h(rank, 1), out(rank, 1);
  std::copy(cd.begin(), cd.end(), c.begin() + static_cast<long>(rank - cd.size()));
  std::copy(channelDims.begin(), channelDims.end(),
            h.begin() + static_cast<long>(rank - channelDims.size()));
  size_t channelPos = rank - channelDims.size();
  for (size_t a = 0; a < rank; ++a) {
    if (c[a] != h[a] && c[a] != 1 && h[a] != 1) return std::nullopt;
    out[a] = std::max(c[a], h[a]);
  }
  std::vector<double> in = constant.toDoubles();
  uint64_t count = 1;
  for (int64_t d : out) count *= static_cast<uint64_t>(d);
  std::vector<double> values(count);
  std::vector<int64_t> index(rank, 0);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t ci = 0;
    for (size_t a = 0; a < rank; ++a)
      ci = ci * static_cast<uint64_t>(c[a]) + static_cast<uint64_t>(c[a] == 1 ? 0 : index[a]);
    values[i] = in[ci] / scales[static_cast<size_t>(index[channelPos])];
    for (size_t a = rank; a-- > 0;) {
      if (++index[a] < out[a]) break;
      index[a] = 0;
    }
  }
  // Keep the constant's own rank when it had at least the channel shape's.
  return Tensor::fromDoubles(constant.dataType(), out, values);
}

bool onlyReadBy(const Value* value, const Node* reader) {
  return !value->isGraphOutput() && value->uses().size() == 1 && value->uses()[0].user == reader;
}

bool spatial(LayerKind k) {
  return k == LayerKind::Conv || k == LayerKind::ConvTranspose;
}

// Index of the float constant operand of a binary Mul/Add whose other operand is not constant.
std::optional<size_t> constantOperand(const Node& node) {
  if (node.numInputs() != 2 || !node.input(0) || !node.input(1)) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    std::optional<Tensor> t = fold::constantOf(node.input(i));
    if (t && isFloatingPoint(t->dataType()) && !fold::isConstantValue(node.input(1 - i))) return i;
  }
  return std::nullopt;
}

// Whether `constant` broadcasts against the channel shape (its dim there 1 or the channels).
bool alongChannels(const Tensor& constant, const std::vector<int64_t>& channelDims) {
  std::vector<double> ones(static_cast<size_t>(channelDims[0]), 1.0);
  return dividedByChannel(constant, channelDims, ones).has_value();
}

std::vector<double> inverseOf(std::span<const double> scales) {
  std::vector<double> inverse(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) inverse[i] = 1.0 / scales[i];
  return inverse;
}

}  // namespace

FactorShape factorShape(const Value* x, const equalize::LinearLayer& layer) {
  FactorShape shape;
  shape.axis = layer.channelAxis();
  shape.dims = {layer.inputChannels()};
  if (shape.axis == 1) shape.dims.resize(layer.weightDims().size() - 1, 1);
  shape.type = x->type().isTensor() && isFloatingPoint(x->type().elemType) ? x->type().elemType
                                                                           : layer.weightType();
  return shape;
}

namespace {

// `step` on the node computing x from y, then the fold of y, which only that node may read.
std::vector<FoldStep> foldInto(const FoldStep& step, Value* y, const FactorShape& shape,
                               const LayerLookup& layers, std::string& why) {
  if (!onlyReadBy(y, step.node)) {
    why = fmt::format("'{}' before {} has other readers", y->name(), step.node->describe());
    return {};
  }
  std::vector<FoldStep> rest = planFold(y, shape, layers, why);
  if (rest.empty()) return {};
  rest.insert(rest.begin(), step);
  return rest;
}

}  // namespace

std::vector<FoldStep> planFold(Value* x, const FactorShape& shape, const LayerLookup& layers,
                               std::string& why) {
  const int64_t axis = shape.axis;
  const int64_t channels = shape.channels();
  Node* producer = x->producer();
  if (producer == nullptr) {
    why = fmt::format("'{}' is a graph input", x->name());
    return {};
  }
  if (producer->is("LayerNormalization") && producer->output(0) == x) {
    std::optional<Tensor> scale =
        producer->input(1) ? fold::constantOf(producer->input(1)) : std::nullopt;
    std::optional<Tensor> bias =
        producer->input(2) ? fold::constantOf(producer->input(2)) : std::nullopt;
    if (axis != -1) {
      why = fmt::format("{} normalizes the last axis, not the channels on axis 1",
                        producer->describe());
    } else if (!scale || (producer->input(2) && !bias)) {
      why = fmt::format("the scale or bias of {} is not a constant", producer->describe());
    } else if (scale->dims().empty() || scale->dims().back() != channels) {
      why =
          fmt::format("the scale of {} does not hold one value per channel", producer->describe());
    } else {
      return {{FoldStep::Kind::LayerNorm, producer, 0, nullptr}};
    }
    return {};
  }
  if ((producer->is("Mul") || producer->is("Add")) && producer->output(0) == x) {
    std::optional<size_t> operand = constantOperand(*producer);
    if (!operand) {
      why = fmt::format("{} has no constant operand to take the factors", producer->describe());
      return {};
    }
    if (!alongChannels(*fold::constantOf(producer->input(*operand)), shape.dims)) {
      why = fmt::format("the constant of {} does not broadcast along the channels",
                        producer->describe());
      return {};
    }
    FoldStep step{FoldStep::Kind::ConstantOperand, producer, *operand, nullptr};
    if (producer->is("Mul")) return {step};
    // (y + b) / s = y / s + b / s: y must be divided too.
    return foldInto(step, producer->input(1 - *operand), shape, layers, why);
  }
  if (producer->is("Div") && producer->output(0) == x && producer->numInputs() == 2 &&
      producer->input(0) && producer->input(1)) {
    // (y / c) / s = y / (c s).
    std::optional<Tensor> divisor = fold::constantOf(producer->input(1));
    if (!divisor || !isFloatingPoint(divisor->dataType()) ||
        fold::isConstantValue(producer->input(0))) {
      why = fmt::format("{} does not divide by a constant", producer->describe());
    } else if (!alongChannels(*divisor, shape.dims)) {
      why = fmt::format("the divisor of {} does not broadcast along the channels",
                        producer->describe());
    } else {
      return {{FoldStep::Kind::ConstantDivisor, producer, 1, nullptr}};
    }
    return {};
  }
  if ((producer->is("Relu") || producer->is("Clip")) && producer->output(0) == x &&
      producer->input(0)) {
    if (std::string refusal = equalize::scalingRefusal(*producer); !refusal.empty()) {
      why = fmt::format("{} computes it: {}", producer->describe(), refusal);
      return {};
    }
    return foldInto({FoldStep::Kind::Through, producer, 0, nullptr}, producer->input(0), shape,
                    layers, why);
  }
  if (std::optional<LayerKind> kind = equalize::layerKindOf(*producer);
      kind && producer->output(0) == x) {
    if (spatial(*kind) != (axis == 1)) {
      why = fmt::format("{} carries its channels on another axis", producer->describe());
      return {};
    }
    equalize::LinearLayer* layer = layers(producer, why);
    if (layer == nullptr) return {};
    if (layer->outputChannels() != channels) {
      why = fmt::format("{} has {} output channels, not {}", producer->describe(),
                        layer->outputChannels(), channels);
      return {};
    }
    return {{FoldStep::Kind::Layer, producer, 0, layer}};
  }
  why = fmt::format("{} computes it", producer->describe());
  return {};
}

void applyFold(const std::vector<FoldStep>& steps, const FactorShape& shape,
               std::span<const double> scales) {
  auto channels = static_cast<int64_t>(scales.size());
  for (const FoldStep& step : steps) {
    switch (step.kind) {
      case FoldStep::Kind::LayerNorm:
        for (size_t input : {size_t{1}, size_t{2}}) {
          Value* v = step.node->input(input);
          if (v == nullptr) continue;
          std::string name = v->name();
          fold::installConstant({{step.node, static_cast<uint32_t>(input)}},
                                *dividedByChannel(*fold::constantOf(v), {channels}, scales), name);
        }
        break;
      case FoldStep::Kind::ConstantOperand: {
        Value* v = step.node->input(step.operand);
        std::string name = v->name();
        Tensor divided = *dividedByChannel(*fold::constantOf(v), shape.dims, scales);
        fold::installConstant({{step.node, static_cast<uint32_t>(step.operand)}},
                              std::move(divided), name);
        break;
      }
      case FoldStep::Kind::ConstantDivisor: {
        Value* v = step.node->input(step.operand);
        std::string name = v->name();
        fold::installConstant(
            {{step.node, static_cast<uint32_t>(step.operand)}},
            *dividedByChannel(*fold::constantOf(v), shape.dims, inverseOf(scales)), name);
        break;
      }
      case FoldStep::Kind::Through:
        break;
      case FoldStep::Kind::Layer:
        step.layer->scaleOutputChannels(inverseOf(scales));
        break;
    }
  }
}

std::string describeFold(const std::vector<FoldStep>& steps) {
  std::string text, through;
  for (const FoldStep& step : steps) {
    std::string part;
    switch (step.kind) {
      case FoldStep::Kind::LayerNorm:
        part = fmt::format("the scale and bias of {}", step.node->describe());
        break;
      case FoldStep::Kind::ConstantOperand:
        part = fmt::format("the constant of {}", step.node->describe());
        break;
      case FoldStep::Kind::ConstantDivisor:
        part = fmt::format("the divisor of {}", step.node->describe());
        break;
      case FoldStep::Kind::Through:
        through += (through.empty() ? "" : ", ") + step.node->describe();
        continue;
      case FoldStep::Kind::Layer:
        part = fmt::format("the output channels of {}", step.node->describe());
        break;
    }
    text += (text.empty() ? "" : ", ") + part;
  }
  return through.empty() ? text : fmt::format("{} (through {})", text, through);
}

Node* insertScaleMul(Value* x, const FactorShape& shape, std::span<const double> scales,
                     const std::vector<Node*>& readers) {
  Graph& graph = *readers.front()->graph();
  Model& model = graph.model();
  Node* first = nullptr;
  for (Node* node : graph.nodes()) {
    if (std::find(readers.begin(), readers.end(), node) != readers.end()) {
      first = node;
      break;
    }
  }
  auto tensor =
      std::make_shared<Tensor>(Tensor::fromDoubles(shape.type, shape.dims, inverseOf(scales)));
  tensor->setName(model.uniqueValueName(x->name() + "_smooth_scale"));
  Value* factor = graph.addInitializer(std::move(tensor));
  Node* mul = graph.createNode("Mul", {x, factor}, 1, first);
  mul->output(0)->setName(model.uniqueValueName(x->name() + "_smoothed"));
  if (x->type().isTensor()) mul->output(0)->setType(x->type());
  for (Node* reader : readers) reader->setInput(0, mul->output(0));
  return mul;
}

Division divideFor(Value* x, const FactorShape& shape, std::span<const double> scales,
                   const std::vector<Node*>& readers, const LayerLookup& layers,
                   PassContext& context) {
  bool onlyThem = !x->isGraphOutput();
  for (const Use& use : x->uses()) {
    onlyThem = onlyThem && use.index == 0 &&
               std::find(readers.begin(), readers.end(), use.user) != readers.end();
  }
  std::string why = fmt::format("'{}' has other readers", x->name());
  // A reader folded into as well (a chain) is fine: both rescale the same layer object.
  std::vector<FoldStep> steps;
  if (onlyThem) steps = planFold(x, shape, layers, why);
  if (!steps.empty()) {
    applyFold(steps, shape, scales);
    // x and every tensor the fold went through are now divided by the factors.
    for (const FoldStep& step : steps) {
      analysis::recordChannelDivision(context, step.node->output(0)->name(), shape.axis, scales);
    }
    return {true, "folded into " + describeFold(steps)};
  }
  Node* mul = insertScaleMul(x, shape, scales, readers);
  return {false,
          fmt::format("inserted {} (costs an elementwise kernel: {})", mul->describe(), why)};
}

}  // namespace qopt::smooth
