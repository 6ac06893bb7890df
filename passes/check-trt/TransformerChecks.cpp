#include "TransformerChecks.h"

#include <fmt/format.h>

#include <unordered_map>

#include "qopt/analysis/Precision.h"

namespace qopt::checktrt {
namespace {

struct MatMulState {
  const Node* node = nullptr;
  const analysis::LayerInfo* layer = nullptr;
  bool quantized[2] = {false, false};  // input 0, input 1 through DequantizeLinear

  int count() const { return static_cast<int>(quantized[0]) + static_cast<int>(quantized[1]); }
};

MatMulState stateOf(const Node* node,
                    const std::unordered_map<const Node*, const analysis::LayerInfo*>& layers) {
  MatMulState state;
  state.node = node;
  auto it = layers.find(node);
  if (it == layers.end()) return state;
  state.layer = it->second;
  state.quantized[0] = state.layer->activation.has_value();
  state.quantized[1] = state.layer->weight.has_value();
  return state;
}

std::string inputLabel(const Node& node, size_t index) {
  const Value* v = node.input(index);
  return fmt::format("input {} ('{}')", index, v ? v->name() : std::string());
}

constexpr const char* kFix =
    "quantize both inputs of both attention MatMuls per tensor (qopt insert-qdq does), or "
    "neither (insert-qdq{exclude-mha=true})";

}  // namespace

AttentionVerdicts checkAttention(const qdq::TransformerPatterns& patterns,
                                 const analysis::PrecisionReport& precisions,
                                 std::vector<Finding>& findings) {
  AttentionVerdicts verdicts;
  std::unordered_map<const Node*, const analysis::LayerInfo*> layers;
  for (const analysis::LayerInfo& layer : precisions.layers) layers[layer.node] = &layer;
  for (const qdq::AttentionBlock& block : patterns.attention) {
    const MatMulState states[2] = {stateOf(block.scores, layers), stateOf(block.context, layers)};
    const char* roles[2] = {"scores MatMul (Q x K^T)", "context MatMul (probabilities x V)"};
    const std::string where =
        fmt::format("the attention block of Softmax '{}'", analysis::layerName(*block.softmax));
    if (states[0].count() == 0 && states[1].count() == 0) {
      verdicts.floatByDesign.insert({block.scores, block.context});
      continue;
    }
    bool partial = false;
    for (int i = 0; i < 2; ++i) {
      const MatMulState& s = states[i];
      if (s.count() != 1) continue;
      partial = true;
      const size_t quantized = s.quantized[0] ? 0 : 1;
      findings.push_back(makeFinding(
          Severity::Warning, "attention-inconsistent", *s.node,
          fmt::format("{} of the {} of {} comes through DequantizeLinear, {} does not: the "
                      "MatMul runs in float, TensorRT cannot fuse the block into its MHA "
                      "kernel, and the Q/DQ on {} is extra work",
                      inputLabel(*s.node, quantized), roles[i], where,
                      inputLabel(*s.node, 1 - quantized), inputLabel(*s.node, quantized)),
          kFix));
      verdicts.reported.insert(s.node);
    }
    if (partial) {
      // The block is reported: its other MatMul needs no float-layer finding of its own.
      verdicts.reported.insert({block.scores, block.context});
      continue;
    }
    // Both inputs of one MatMul quantized, none of the other's.
    for (int i = 0; i < 2; ++i) {
      const MatMulState& s = states[i];
      const MatMulState& other = states[1 - i];
      if (s.count() != 0 || other.count() != 2) continue;
      findings.push_back(makeFinding(
          Severity::Warning, "attention-inconsistent", *s.node,
          fmt::format("the {} of {} is not quantized while the other attention MatMul '{}' "
                      "is: TensorRT fuses the block into one MHA kernel only when both "
                      "MatMuls are quantized (or neither), so both run unfused",
                      roles[i], where, analysis::layerName(*other.node)),
          kFix));
      verdicts.reported.insert(s.node);
    }
  }
  return verdicts;
}

std::string floatReaderNote(const Node& reader, const qdq::TransformerPatterns& patterns) {
  std::string where = patterns.floatInteriorOf(&reader);
  if (!where.empty()) {
    return fmt::format("TensorRT runs {} '{}' in float (inside {})", reader.opType(),
                       analysis::layerName(reader), where);
  }
  if (reader.is("Softmax") || reader.is("LayerNormalization")) {
    return fmt::format("TensorRT runs {} '{}' in float", reader.opType(),
                       analysis::layerName(reader));
  }
  return {};
}

}  // namespace qopt::checktrt
