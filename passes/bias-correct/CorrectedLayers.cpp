#include "CorrectedLayers.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/analysis/Precision.h"
#include "qopt/constants/ConstantValue.h"

namespace qopt::biascorrect {
namespace {

/// Float chains longer than this are not a layer (Conv, BatchNormalization, a bias Add...).
constexpr size_t kMaxChain = 4;

bool isRunTimeInput(const Value* value) {
  return value != nullptr && !value->isAbsent() && !fold::isConstantValue(value);
}

/// The value `value` dequantizes when it is DequantizeLinear(QuantizeLinear(x)): x.
Value* beforeQuantization(Value* value) {
  Node* dq = value->producer();
  if (dq == nullptr || !dq->is("DequantizeLinear")) return nullptr;
  Node* q = dq->input(0)->producer();
  if (q == nullptr || !q->is("QuantizeLinear")) return nullptr;
  return q->input(0);
}

/// x when `value` is a Mul of x by a constant, else null.
Value* scaledInput(Value* value) {
  Node* mul = value->producer();
  if (mul == nullptr || !mul->is("Mul") || mul->numInputs() != 2) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    if (fold::isConstantValue(mul->input(i)) && isRunTimeInput(mul->input(1 - i))) {
      return mul->input(1 - i);
    }
  }
  return nullptr;
}

/// Whether `value` is DequantizeLinear of a constant (a quantized weight).
bool isDequantizedConstant(const Value* value) {
  const Node* dq = value != nullptr ? value->producer() : nullptr;
  return dq != nullptr && dq->is("DequantizeLinear") && fold::isConstantValue(dq->input(0));
}

/// The output channels of a layer from its weight's dims, or 0 when the layout is not one
/// bias-correct handles.
int64_t outputChannels(const Node& node, const std::vector<int64_t>& weightDims) {
  if (node.is("Conv")) return weightDims.size() >= 3 ? weightDims[0] : 0;
  if (weightDims.size() != 2) return 0;
  if (node.is("Gemm")) return node.attrInt("transB", 0) != 0 ? weightDims[0] : weightDims[1];
  return weightDims[1];  // MatMul: [K, N]
}

/// The channels of the activation a layer reads (its weight's input side).
int64_t inputChannels(const Node& node, const std::vector<int64_t>& weightDims) {
  if (node.is("Conv")) return weightDims[1] * node.attrInt("group", 1);
  if (node.is("Gemm")) return node.attrInt("transB", 0) != 0 ? weightDims[1] : weightDims[0];
  return weightDims[0];  // MatMul: [K, N]
}

/// The rank of `value` when its type or the layer tells it, else 0.
int64_t rankOf(const Node& layer, const Value* value, const std::vector<int64_t>& weightDims) {
  if (layer.is("Conv")) return static_cast<int64_t>(weightDims.size());
  if (layer.is("Gemm")) return 2;
  const ValueType& type = value->type();
  return type.isTensor() && type.shape ? static_cast<int64_t>(type.shape->size()) : 0;
}

/// The dims of a constant holding one value per channel of a tensor of rank `rank` (0: unknown)
/// along `axis` (negative: from the end); empty when they cannot be told.
std::vector<int64_t> channelConstantDims(int64_t axis, int64_t channels, int64_t rank) {
  int64_t trailing = 0;
  if (axis < 0) {
    if (rank > 0 && -axis > rank) return {};
    trailing = -axis - 1;
  } else if (axis < rank) {
    trailing = rank - 1 - axis;
  } else {
    return {};
  }
  std::vector<int64_t> dims{channels};
  dims.resize(static_cast<size_t>(1 + trailing), 1);
  return dims;
}

/// Attaches the record of `value`, if any, to the layer; false with `why` when it does not fit.
bool attachAffine(const std::map<std::string, analysis::ChannelAffine>& affines, const Value* value,
                  int64_t channels, int64_t rank, std::optional<analysis::ChannelAffine>& affine,
                  std::vector<int64_t>& dims, std::string& why) {
  auto it = affines.find(value->name());
  if (it == affines.end()) return true;
  const analysis::ChannelAffine& record = it->second;
  if (static_cast<int64_t>(record.scale.size()) != channels) {
    why = fmt::format("a pass before it rescaled '{}' over {} channels, where the layer has {}",
                      value->name(), record.scale.size(), channels);
    return false;
  }
  dims = channelConstantDims(record.axis, channels, rank);
  if (dims.empty()) {
    why = fmt::format("a pass before it rescaled '{}' along axis {}, and its rank is unknown",
                      value->name(), record.axis);
    return false;
  }
  affine = record;
  return true;
}

/// Original values by the name of the current value that stands for them.
std::unordered_map<std::string, std::vector<const Value*>> originalsByCurrentName(
    const Graph& original, const NameMap& names) {
  std::unordered_map<std::string, std::vector<const Value*>> out;
  auto add = [&](const Value* value) {
    if (value == nullptr || value->isAbsent()) return;
    if (std::optional<std::string> now = names.currentName(value->name())) {
      out[*now].push_back(value);
    }
  };
  for (const Value* input : original.inputs()) add(input);
  for (const Node* node : original.allNodes()) {
    for (const Value* output : node->outputs()) add(output);
    for (const Graph* body : node->subgraphs()) {
      for (const Value* input : body->inputs()) add(input);
    }
  }
  return out;
}

}  // namespace

int64_t channelAxis(const Node& layer, int64_t outputRank) {
  return layer.is("Conv") ? 1 : outputRank - 1;
}

std::vector<CorrectedLayer> findCorrectedLayers(
    Model& model, const Model& original, const NameMap& names,
    const std::map<std::string, analysis::ChannelAffine>& affines, PassResult& result) {
  const Graph& originalGraph = original.graph();
  std::unordered_map<const Node*, size_t> originalOrder;
  size_t index = 0;
  for (const Node* node : originalGraph.allNodes()) originalOrder[node] = index++;
  const auto originals = originalsByCurrentName(originalGraph, names);

  std::vector<CorrectedLayer> layers;
  size_t position = 0;
  for (Node* node : model.graph().allNodes()) {  // bodies included: positions of allNodes()
    const size_t here = position++;
    if (!node->is("Conv") && !node->is("Gemm") && !node->is("MatMul")) continue;
    if (!isDequantizedConstant(node->input(1))) continue;  // not a quantized weight
    CorrectedLayer layer;
    layer.node = node;
    layer.position = here;
    layer.name = analysis::layerName(*node);
    const std::string subject = node->describe();
    auto missed = [&](const std::string& why) {
      result.missed(subject, "bias not corrected: " + why);
    };

    std::optional<Tensor> weight = fold::constantOf(node->input(1)->producer()->input(0));
    layer.channels = weight ? outputChannels(*node, weight->dims()) : 0;
    if (layer.channels <= 0) {
      missed("its weight is not a 2-D matrix or a convolution filter");
      continue;
    }
    if (node->is("Gemm") && node->attrFloat("beta", 1.0f) == 0.0f) {
      missed("Gemm with beta=0 ignores its bias");
      continue;
    }
    Value* activation = node->input(0);
    if (Value* x = beforeQuantization(activation)) {
      layer.input = x;
      layer.inputQuantized = true;
    } else {
      layer.input = activation;
    }

    // The float layer: from the latest original value standing for the output, back through
    // nodes with one run-time input each, to an original value standing for the activation.
    auto outs = originals.find(node->output(0)->name());
    layer.chainInput = layer.input;
    auto ins = originals.find(layer.input->name());
    if (ins == originals.end()) {
      // A Mul by a constant that a pass inserted (it stands for nothing in the input model) and
      // compensated in the weights: the float layer reads what the Mul scales.
      if (Value* x = scaledInput(layer.input)) {
        layer.chainInput = x;
        ins = originals.find(x->name());
      }
    }
    if (outs == originals.end() || ins == originals.end()) {
      missed("the input model has no float counterpart of it (name map)");
      continue;
    }
    const Value* end = nullptr;
    for (const Value* v : outs->second) {
      if (v->producer() == nullptr) continue;
      if (end == nullptr || originalOrder.at(v->producer()) > originalOrder.at(end->producer())) {
        end = v;
      }
    }
    std::unordered_set<const Value*> starts(ins->second.begin(), ins->second.end());
    std::deque<const Node*> chain;
    const Value* current = end;
    std::string why = "the input model has no float counterpart of it (name map)";
    while (current != nullptr && !starts.count(current) && chain.size() < kMaxChain) {
      const Node* producer = current->producer();
      if (producer == nullptr) break;
      const Value* runTime = nullptr;
      size_t count = 0;
      for (const Value* in : producer->inputs()) {
        if (isRunTimeInput(in)) {
          runTime = in;
          ++count;
        }
      }
      if (count != 1 || producer->numOutputs() != 1 || !producer->subgraphs().empty()) {
        why = fmt::format(
            "its float counterpart in the input model ({}) does not read the activation alone "
            "with constant weights (was the input model already quantized?)",
            producer->describe());
        chain.clear();
        break;
      }
      chain.push_front(producer);
      current = runTime;
    }
    if (chain.empty() || current == nullptr || !starts.count(current)) {
      missed(why);
      continue;
    }
    layer.floatChain.assign(chain.begin(), chain.end());
    const std::vector<int64_t>& dims = weight->dims();
    if (!attachAffine(affines, layer.chainInput, inputChannels(*node, dims),
                      rankOf(*node, layer.chainInput, dims), layer.inputAffine,
                      layer.inputAffineDims, why) ||
        !attachAffine(affines, node->output(0), layer.channels,
                      rankOf(*node, node->output(0), dims), layer.outputAffine,
                      layer.outputAffineDims, why)) {
      missed(why);
      continue;
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace qopt::biascorrect
