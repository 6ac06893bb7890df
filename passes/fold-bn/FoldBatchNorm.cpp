#include "FoldBatchNorm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <utility>

#include "WeightLayout.h"
#include "WeightSource.h"
#include "qopt/constants/ConstantValue.h"

namespace qopt::foldbn {
namespace {

// "bn-folded-into-conv": the counter names the linear op (one of layerKindOf's) in lower case.
std::string foldCounter(const Node& linear) {
  std::string op = linear.opType();
  std::transform(op.begin(), op.end(), op.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "bn-folded-into-" + op;
}

std::optional<size_t> rankOf(const Value* value) {
  if (value == nullptr || !value->type().isTensor() || !value->type().shape) return std::nullopt;
  return value->type().shape->size();
}

// "conv1.weight" -> "conv1.bias"; anything else gets "_bias" appended.
std::string biasNameFor(const std::string& weightName) {
  constexpr std::string_view kWeight = "weight";
  if (weightName.size() > kWeight.size() && weightName.ends_with(kWeight)) {
    return weightName.substr(0, weightName.size() - kWeight.size()) + "bias";
  }
  return weightName + "_bias";
}

// The bias (Conv, ConvTranspose) or C (Gemm) after folding, and its type.
struct NewBias {
  Tensor tensor;
  std::string name;
};

std::optional<NewBias> foldedBias(const Node& linear, LayerKind kind, const Value* biasValue,
                                  const BatchNormFactors& factors, DataType outputType,
                                  const std::string& weightName, Refusal& refusal) {
  auto refuse = [&](std::string counter, std::string message) -> std::optional<NewBias> {
    refusal = {std::move(counter), std::move(message)};
    return std::nullopt;
  };
  const int64_t channels = factors.channels;
  std::optional<Tensor> bias;
  if (biasValue != nullptr) {
    bias = fold::constantThroughCasts(biasValue);
    if (!bias) {
      return refuse("missed-non-constant-bias",
                    fmt::format("the {} '{}' of {} is not a constant",
                                kind == LayerKind::Gemm ? "C input" : "bias", biasValue->name(),
                                linear.describe()));
    }
    if (!isFloatingPoint(bias->dataType())) {
      return refuse("missed-malformed",
                    fmt::format("the bias '{}' is of type {}", biasValue->name(),
                                dataTypeName(bias->dataType())));
    }
  }
  DataType type = bias ? bias->dataType() : outputType;
  std::string name = biasValue ? biasValue->name() : biasNameFor(weightName);
  std::vector<double> old = bias ? bias->toDoubles() : std::vector<double>{};

  if (kind != LayerKind::Gemm) {
    if (bias && old.size() != static_cast<size_t>(channels)) {
      return refuse("missed-malformed", fmt::format("the bias '{}' has {} values for {} channels",
                                                    biasValue->name(), old.size(), channels));
    }
    std::vector<double> values(static_cast<size_t>(channels));
    for (size_t c = 0; c < values.size(); ++c) {
      values[c] = (bias ? old[c] * factors.scale[c] : 0.0) + factors.shift[c];
    }
    return NewBias{Tensor::fromDoubles(type, {channels}, values), name};
  }

  // Gemm: y = alpha * A' B' + beta * C, C broadcast to [M, N]. The new C holds
  // scale * beta * C + shift, so beta becomes 1.
  double beta = static_cast<double>(linear.attrFloat("beta", 1.0f));
  std::vector<int64_t> dims = bias ? bias->dims() : std::vector<int64_t>{};
  int64_t rows = 1, cols = 1;
  if (dims.size() == 1) {
    cols = dims[0];
  } else if (dims.size() == 2) {
    rows = dims[0];
    cols = dims[1];
  } else if (dims.size() > 2) {
    return refuse("missed-malformed", fmt::format("its C input has rank {}", dims.size()));
  }
  if (cols != 1 && cols != channels) {
    return refuse("missed-malformed",
                  fmt::format("its C input has {} columns for {} channels", cols, channels));
  }
  std::vector<int64_t> newDims =
      dims.size() == 2 ? std::vector<int64_t>{rows, channels} : std::vector<int64_t>{channels};
  std::vector<double> values(static_cast<size_t>(rows * channels));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t n = 0; n < channels; ++n) {
      double c = bias ? old[static_cast<size_t>(i * cols + (cols == 1 ? 0 : n))] : 0.0;
      values[static_cast<size_t>(i * channels + n)] =
          factors.scale[static_cast<size_t>(n)] * beta * c + factors.shift[static_cast<size_t>(n)];
    }
  }
  return NewBias{Tensor::fromDoubles(type, newDims, values), name};
}

void copyAttributes(const Node& from, Node& to) {
  ValueMap none;
  for (const Attribute& attr : from.attributes()) to.setAttr(attr.clone(&to, none));
}

// Gives `linear` a copy of its weight chain's nodes so that rescaling touches no other reader.
// The constants stay shared; installConstant copies what it rewrites.
void cloneChain(WeightSource& source, Node& linear) {
  if (source.kind == WeightSource::Kind::Float) return;
  Graph& graph = *linear.graph();
  Model& model = graph.model();
  auto cloneNode = [&](const Node& node, std::vector<Value*> inputs) {
    Node* copy = graph.createNode(node.opType(), inputs, 1, &linear, node.domain());
    copyAttributes(node, *copy);
    copy->output(0)->setType(node.output(0)->type());
    if (!node.name().empty()) copy->setName(model.uniqueNodeName(node.name()));
    return copy;
  };
  Value* oldLink = linear.input(1);
  std::vector<Value*> dqInputs(source.dequantize->inputs().begin(),
                               source.dequantize->inputs().end());
  if (source.kind == WeightSource::Kind::QuantizeDequantize) {
    std::vector<Value*> qInputs(source.quantize->inputs().begin(), source.quantize->inputs().end());
    source.quantize = cloneNode(*source.quantize, qInputs);
    dqInputs[0] = source.quantize->output(0);
  }
  source.dequantize = cloneNode(*source.dequantize, dqInputs);
  linear.setInput(1, source.dequantize->output(0));
  fold::eraseIfUnused(oldLink);
}

void installWeight(const WeightSource& source, const RescaledWeight& rescaled, Node& linear) {
  const std::string weightName = source.weight->name();
  switch (source.kind) {
    case WeightSource::Kind::Float:
      fold::installConstant({{&linear, 1}}, rescaled.weight, weightName);
      return;
    case WeightSource::Kind::QuantizeDequantize:
      fold::installConstant({{source.quantize, 0}}, rescaled.weight, weightName);
      break;
    case WeightSource::Kind::Dequantize:
      if (rescaled.weightChanged) {
        fold::installConstant({{source.dequantize, 0}}, rescaled.weight, weightName);
      }
      break;
  }
  // Quantize and dequantize must keep reading the same scale and zero point.
  std::vector<Node*> readers{source.dequantize};
  if (source.quantize) readers.push_back(source.quantize);
  auto slots = [&](uint32_t index) {
    std::vector<Use> uses;
    for (Node* node : readers) uses.push_back({node, index});
    return uses;
  };
  std::string scaleName = source.dequantize->input(1)->name();
  fold::installConstant(slots(1), *rescaled.scale, scaleName);
  if (rescaled.zeroPoint) {
    std::string zeroName = source.dequantize->input(2)->name();
    fold::installConstant(slots(2), *rescaled.zeroPoint, zeroName);
  }
  if (rescaled.newAxis) {
    for (Node* node : readers) node->setAttr(Attribute::makeInt("axis", *rescaled.newAxis));
  }
}

// Removes `bn` once its output has been redirected, and the parameters only it read.
void eraseBatchNorm(Node& bn) {
  std::vector<Value*> params(bn.inputs().begin() + 1, bn.inputs().end());
  bn.graph()->eraseNode(&bn);
  fold::eraseIfUnused(params);
}

}  // namespace

std::optional<FoldOutcome> foldIntoProducer(Node& bn, const BatchNormFactors& factors,
                                            const FoldOptions& options, Refusal& refusal) {
  auto refuse = [&](std::string counter, std::string message) -> std::optional<FoldOutcome> {
    refusal = {std::move(counter), std::move(message)};
    return std::nullopt;
  };
  Value* x = bn.input(0);
  Node* linear = x->producer();
  if (linear == nullptr) {
    return refuse("missed-no-producer",
                  fmt::format("its input '{}' is not computed by a node", x->name()));
  }
  std::optional<LayerKind> kind = layerKindOf(*linear);
  if (!kind) {
    return refuse("missed-no-producer",
                  fmt::format("its input comes from {}, not from Conv, ConvTranspose, Gemm or "
                              "MatMul",
                              linear->describe()));
  }
  if (x->isGraphOutput()) {
    return refuse(
        "missed-other-consumers",
        fmt::format("the output '{}' of {} is also a graph output", x->name(), linear->describe()));
  }
  for (const Use& use : x->uses()) {
    if (use.user != &bn) {
      return refuse("missed-other-consumers",
                    fmt::format("the output '{}' of {} is also read by {}", x->name(),
                                linear->describe(), use.user->describe()));
    }
  }
  if (x->uses().size() != 1) {
    return refuse("missed-other-consumers", fmt::format("it reads '{}' twice", x->name()));
  }
  int64_t opset = bn.graph()->model().opsetVersion("").value_or(1);

  std::optional<WeightSource> source = resolveWeight(*linear, 1, refusal);
  if (!source) return std::nullopt;
  if (source->quantized() && !options.quantizedWeights) {
    return refuse("missed-quantized-disabled",
                  fmt::format("the weight of {} is quantized and quantized-weights=false",
                              linear->describe()));
  }
  bool sharedAsOutput = false;
  const Node* sharer = sharedWith(*source, *linear, &sharedAsOutput);
  if (sharer != nullptr && !options.cloneSharedWeights) {
    std::string who = sharedAsOutput ? std::string("is a graph output")
                                     : fmt::format("is also read by {}", sharer->describe());
    return refuse("missed-shared-weight",
                  fmt::format("the weight '{}' of {} {}; clone-shared-weights=true folds into a "
                              "copy",
                              source->weight->name(), linear->describe(), who));
  }
  std::optional<WeightLayout> layout =
      WeightLayout::of(*linear, *kind, source->values.dims(), refusal);
  if (!layout) return std::nullopt;
  if (layout->outputChannels() != factors.channels) {
    return refuse("missed-channel-mismatch",
                  fmt::format("it has {} channels but {} has {} output channels", factors.channels,
                              linear->describe(), layout->outputChannels()));
  }
  if (*kind == LayerKind::MatMul) {
    std::optional<size_t> rank = rankOf(x);
    if (!rank) rank = rankOf(bn.output(0));
    if (!rank) rank = rankOf(linear->input(0));
    if (!rank) {
      return refuse("missed-matmul-rank",
                    fmt::format("the rank of the output of {} is not known (BatchNorm channels "
                                "are axis 1; the weight scales the last axis)",
                                linear->describe()));
    }
    if (*rank != 2) {
      return refuse("missed-matmul-rank",
                    fmt::format("the output of {} has rank {}: BatchNorm channels are axis 1, "
                                "but the weight scales the last axis",
                                linear->describe(), *rank));
    }
  }

  DataType outputType = x->type().isTensor() && isFloatingPoint(x->type().elemType)
                            ? x->type().elemType
                            : source->floatType();
  std::optional<NewBias> bias = foldedBias(*linear, *kind, linear->input(2), factors, outputType,
                                           source->weight->name(), refusal);
  if (!bias) return std::nullopt;
  std::optional<RescaledWeight> rescaled =
      rescaleWeight(*source, *layout, factors.scale, opset, refusal);
  if (!rescaled) return std::nullopt;

  // Everything is computed: from here on the model changes.
  FoldOutcome outcome;
  outcome.counter = foldCounter(*linear);
  outcome.quantized = source->quantized();
  outcome.snapped = rescaled->snapped;
  std::string linearName = linear->describe();
  if (sharer != nullptr) {
    cloneChain(*source, *linear);
    outcome.cloned = true;
  }
  installWeight(*source, *rescaled, *linear);

  Graph& graph = *bn.graph();
  Value* result = x;
  if (*kind == LayerKind::MatMul) {
    bias->tensor.setName(graph.model().uniqueValueName(bias->name));
    Value* biasValue = graph.addInitializer(std::make_shared<Tensor>(std::move(bias->tensor)));
    Node* add = graph.createNode("Add", {x, biasValue}, 1, &bn);
    if (!bn.name().empty()) add->setName(graph.model().uniqueNodeName(bn.name() + "_bias"));
    add->output(0)->setType(bn.output(0)->type());
    result = add->output(0);
  } else {
    fold::installConstant({{linear, 2}}, std::move(bias->tensor), bias->name);
    if (*kind == LayerKind::Gemm) {
      if (linear->attrFloat("beta", 1.0f) != 1.0f)
        linear->setAttr(Attribute::makeFloat("beta", 1.0f));
      if (opset < 7) linear->setAttr(Attribute::makeInt("broadcast", 1));
    }
  }
  bn.output(0)->replaceAllUsesWith(result);
  eraseBatchNorm(bn);

  std::string how;
  if (outcome.quantized) {
    how = rescaled->newAxis ? "; its weight scales became per channel, integers kept"
                            : "; its weight scales were rescaled, integers kept";
  }
  if (*kind == LayerKind::MatMul) how += "; a bias Add was added";
  if (outcome.cloned) how += "; the shared weight was copied";
  outcome.message = fmt::format("folded into {}{}", linearName, how);
  return outcome;
}

std::optional<FoldOutcome> replaceByMulAdd(Node& bn, const BatchNormFactors& factors,
                                           Refusal& refusal) {
  Value* x = bn.input(0);
  Value* y = bn.output(0);
  std::optional<size_t> rank = rankOf(x);
  if (!rank) rank = rankOf(y);
  const ValueType& type = x->type().isTensor() ? x->type() : y->type();
  if (!rank || *rank < 2 || !type.isTensor() || !isFloatingPoint(type.elemType)) {
    refusal = {"missed-unknown-type",
               fmt::format("the rank or element type of its input '{}' is not known", x->name())};
    return std::nullopt;
  }
  // [C, 1, ..., 1]: broadcasts along axis 1 of an input of rank `rank`.
  std::vector<int64_t> dims(*rank - 1, 1);
  dims[0] = factors.channels;
  Graph& graph = *bn.graph();
  Model& model = graph.model();
  auto constant = [&](const std::vector<double>& values, const std::string& suffix) {
    auto tensor = std::make_shared<Tensor>(Tensor::fromDoubles(type.elemType, dims, values));
    tensor->setName(model.uniqueValueName(y->name() + suffix));
    return graph.addInitializer(std::move(tensor));
  };
  Value* scale = constant(factors.scale, "_bn_scale");
  Value* shift = constant(factors.shift, "_bn_shift");
  Node* mul = graph.createNode("Mul", {x, scale}, 1, &bn);
  Node* add = graph.createNode("Add", {mul->output(0), shift}, 1, &bn);
  if (!bn.name().empty()) {
    mul->setName(model.uniqueNodeName(bn.name() + "_mul"));
    add->setName(model.uniqueNodeName(bn.name() + "_add"));
  }
  mul->output(0)->setType(y->type());
  add->output(0)->setType(y->type());
  y->replaceAllUsesWith(add->output(0));
  eraseBatchNorm(bn);
  return FoldOutcome{"bn-to-mul-add", "replaced by Mul and Add", false, false, 0};
}

}  // namespace qopt::foldbn
