#include "AwqScaleFolding.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "qopt/constants/ConstantValue.h"

namespace qopt::wq {
namespace {

// Whether every reader of `activation` is one of `readers` (so a change to its producer
// reaches no one else).
std::string otherReader(const Value* activation, const std::vector<Node*>& readers) {
  if (activation->isGraphOutput()) return "it is a graph output";
  for (const Use& use : activation->uses()) {
    if (std::find(readers.begin(), readers.end(), use.user) == readers.end() || use.index != 0) {
      return fmt::format("{} also reads it", use.user->describe());
    }
  }
  return {};
}

// c / s along the last axis; a single value broadcasts to K channels. nullopt when c's shape
// is neither.
std::optional<Tensor> dividedByChannel(const Tensor& c, const std::vector<double>& s) {
  const auto k = static_cast<int64_t>(s.size());
  std::vector<double> values = c.toDoubles();
  if (values.size() == 1) {
    std::vector<double> out(s.size());
    for (size_t i = 0; i < s.size(); ++i) out[i] = values[0] / s[i];
    // Keep c's rank: it may be what gives the Mul's output its rank.
    std::vector<int64_t> dims = c.dims();
    if (dims.empty()) {
      dims.push_back(k);
    } else {
      dims.back() = k;
    }
    return Tensor::fromDoubles(c.dataType(), dims, out);
  }
  if (c.dims().empty() || c.dims().back() != k) return std::nullopt;
  for (size_t i = 0; i < values.size(); ++i) values[i] /= s[i % s.size()];
  return Tensor::fromDoubles(c.dataType(), c.dims(), values);
}

// LayerNormalization whose scale (and bias) hold exactly one value per channel.
std::optional<FoldOutcome> foldIntoLayerNorm(Node* ln, const std::vector<double>& s) {
  const auto k = static_cast<uint64_t>(s.size());
  std::optional<Tensor> scale = fold::constantOf(ln->input(1));
  if (!scale || scale->numElements() != k) return std::nullopt;
  std::optional<Tensor> bias;
  if (ln->input(2) != nullptr) {
    bias = fold::constantOf(ln->input(2));
    if (!bias || bias->numElements() != k) return std::nullopt;
  }
  std::optional<Tensor> newScale = dividedByChannel(*scale, s);
  if (!newScale) return std::nullopt;
  newScale->setDims(scale->dims());
  std::string scaleName = ln->input(1)->name();
  fold::installConstant({Use{ln, 1}}, std::move(*newScale), scaleName + "_awq");
  if (bias) {
    std::optional<Tensor> newBias = dividedByChannel(*bias, s);
    newBias->setDims(bias->dims());
    std::string biasName = ln->input(2)->name();
    fold::installConstant({Use{ln, 2}}, std::move(*newBias), biasName + "_awq");
  }
  return FoldOutcome{
      FoldKind::LayerNormalization,
      fmt::format("1/s folded into the scale{} of {}", bias ? " and bias" : "", ln->describe())};
}

std::optional<FoldOutcome> foldIntoMul(Node* mul, const std::vector<double>& s) {
  for (size_t side = 0; side < 2; ++side) {
    std::optional<Tensor> c = fold::constantOf(mul->input(side));
    if (!c || fold::isConstantValue(mul->input(1 - side))) continue;
    std::optional<Tensor> divided = dividedByChannel(*c, s);
    if (!divided) return std::nullopt;
    std::string name = mul->input(side)->name();
    fold::installConstant({Use{mul, static_cast<uint32_t>(side)}}, std::move(*divided),
                          name + "_awq");
    return FoldOutcome{FoldKind::ConstantMul,
                       fmt::format("1/s folded into the constant of {}", mul->describe())};
  }
  return std::nullopt;
}

}  // namespace

FoldOutcome applyInverseScales(Value* activation, const std::vector<Node*>& readers,
                               const std::vector<double>& s, DataType floatType) {
  const std::string blocker = otherReader(activation, readers);
  Node* producer = activation->producer();
  std::string why;
  if (!blocker.empty()) {
    why = blocker;
  } else if (producer == nullptr) {
    why = "it is not computed by a node";
  } else if (producer->is("LayerNormalization") && activation == producer->output(0)) {
    if (std::optional<FoldOutcome> done = foldIntoLayerNorm(producer, s)) return *done;
    why = fmt::format("the scale or bias of {} is not one constant per channel",
                      producer->describe());
  } else if (producer->is("Mul")) {
    if (std::optional<FoldOutcome> done = foldIntoMul(producer, s)) return *done;
    why = fmt::format("{} does not multiply by a per-channel or scalar constant",
                      producer->describe());
  } else {
    why = fmt::format("its producer {} is no LayerNormalization or Mul by a constant",
                      producer->describe());
  }

  Graph& graph = *readers.front()->graph();
  std::vector<double> inverse(s.size());
  for (size_t i = 0; i < s.size(); ++i) inverse[i] = 1.0 / s[i];
  Tensor invTensor = Tensor::fromDoubles(floatType, {static_cast<int64_t>(s.size())}, inverse);
  invTensor.setName(graph.model().uniqueValueName(activation->name() + "_awq_inv_scale"));
  auto shared = std::make_shared<Tensor>(std::move(invTensor));
  Value* invValue = graph.addInitializer(shared);
  invValue->setType(ValueType::tensor(floatType, shared->dims()));
  // Before the first reader in graph order: the activation exists there, and so does the Mul.
  Node* first = readers.front();
  for (Node* node = graph.firstNode(); node != nullptr; node = node->next()) {
    if (std::find(readers.begin(), readers.end(), node) != readers.end()) {
      first = node;
      break;
    }
  }
  Node* mul = graph.createNode("Mul", {activation, invValue}, 1, first);
  mul->setName(graph.model().uniqueNodeName(activation->name() + "_awq_scale"));
  mul->output(0)->setName(graph.model().uniqueValueName(activation->name() + "_awq_scaled"));
  mul->output(0)->setType(activation->type());
  for (Node* reader : readers) reader->setInput(0, mul->output(0));
  return FoldOutcome{FoldKind::InsertedMul,
                     fmt::format("Mul by 1/s inserted before the MatMul(s): {}", why)};
}

}  // namespace qopt::wq
