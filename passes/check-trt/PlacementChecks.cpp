#include "PlacementChecks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "TransformerChecks.h"
#include "qopt/analysis/Precision.h"
#include "qopt/ir/Graph.h"
#include "qopt/qdq/SmallLayers.h"
#include "qopt/qdq/TransformerPatterns.h"

namespace qopt::checktrt {

namespace {

// Names listed in a summary line before "and N more".
constexpr size_t kListedNames = 8;
constexpr int kMaxWalk = 32;

bool isOneOf(const Node& node, std::span<const std::string_view> ops) {
  if (!node.domain().empty()) return false;
  for (std::string_view op : ops) {
    if (node.opType() == op) return true;
  }
  return false;
}

// Besides weighted ops (on their data or weight input), the ops that use a dequantized tensor
// in INT8: they fuse it (a residual Add into the Conv before it, pooling that TensorRT runs
// quantized) or re-quantize it.
constexpr std::array<std::string_view, 4> kFusingOps = {"Add", "AveragePool", "GlobalAveragePool",
                                                        "QuantizeLinear"};

bool feedsQuantizable(const Value* value, const qdq::TransformerPatterns& patterns, int depth);

// Whether `use` reads the dequantized value in INT8 (fused into the reader, or moved across it
// to one that does). Readers inside a Softmax chain, LayerNorm or GELU run in float whatever
// their op: the Add of an attention mask fuses into nothing.
bool usesQuantized(const Use& use, const qdq::TransformerPatterns& patterns, int depth) {
  const Node& user = *use.user;
  if (!patterns.floatInteriorOf(&user).empty()) return false;
  if (analysis::isWeightedOp(user) && use.index <= 1) return true;
  if (isOneOf(user, kFusingOps)) return true;
  if (analysis::commutesWithQuantization(user)) {
    for (const Value* out : user.outputs()) {
      if (feedsQuantizable(out, patterns, depth + 1)) return true;
    }
  }
  return false;
}

bool feedsQuantizable(const Value* value, const qdq::TransformerPatterns& patterns, int depth) {
  if (depth > kMaxWalk) return false;
  for (const Use& use : value->uses()) {
    if (usesQuantized(use, patterns, depth)) return true;
  }
  return false;
}

std::string describeReader(const Node& reader) {
  return fmt::format("{} '{}'", reader.opType(), analysis::layerName(reader));
}

// "Clip 'relu1'", "the graph output 'y'": what reads a dequantized value.
std::string describeReaders(const Value* value) {
  std::vector<std::string> readers;
  for (const Use& use : value->uses()) readers.push_back(describeReader(*use.user));
  if (value->isGraphOutput()) readers.push_back(fmt::format("graph output '{}'", value->name()));
  if (readers.empty()) return "nothing";
  return fmt::format("{}", fmt::join(readers, ", "));
}

// "; TensorRT runs Softmax 'p' in float (inside ...)" for the readers that lie in a float
// pattern, and whether one is inside an attention block.
std::string floatReadersNote(const Value* value, const qdq::TransformerPatterns& patterns,
                             bool& attention) {
  std::string text;
  for (const Use& use : value->uses()) {
    std::string note = floatReaderNote(*use.user, patterns);
    if (note.empty()) continue;
    text += "; " + note;
    attention = attention || use.user->is("Softmax") ||
                patterns.floatInteriorOf(use.user).find("attention") != std::string::npos;
  }
  return text;
}

constexpr const char* kAttentionInteriorFix =
    "remove this Q/DQ pair: TensorRT's MHA fusion takes Q/DQ on the inputs of the two attention "
    "MatMuls only (the Softmax output included), none on the scores, their scale, the mask or "
    "the Softmax input";
constexpr const char* kFloatPatternFix =
    "remove this Q/DQ pair: TensorRT runs Softmax, LayerNorm and GELU in float; quantize the "
    "input of the Conv, Gemm or MatMul after them instead";

std::string listNames(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < kListedNames; ++i) {
    if (i > 0) text += ", ";
    text += names[i];
  }
  if (names.size() > kListedNames) text += fmt::format(" and {} more", names.size() - kListedNames);
  return text;
}

// A quantized layer where TensorRT gains nothing (the rule insert-qdq's min-channels applies).
void checkSmallQuantized(const analysis::LayerInfo& layer, int64_t minChannels,
                         std::vector<Finding>& findings) {
  const bool fp8 = layer.precision == analysis::Precision::Fp8;
  std::optional<std::string> why =
      qdq::smallLayerReason(*layer.node, qdq::SmallLayerRule{minChannels, fp8});
  if (!why) return;
  findings.push_back(makeFinding(
      Severity::Warning, "small-layer-quantized", *layer.node,
      fmt::format("runs in {}, but TensorRT gains nothing: {}; the Q/DQ around it cost more "
                  "than its {} kernel saves, so the layer is slower than in FP16",
                  analysis::precisionName(layer.precision), *why,
                  analysis::precisionName(layer.precision)),
      fmt::format("remove the Q/DQ on its inputs and let it run in FP16 (qopt insert-qdq keeps "
                  "such layers float: min-channels={})",
                  minChannels)));
}

// A float layer left so on purpose: where TensorRT gains nothing, or an attention block wholly
// in float.
// `fp8`: the model quantizes to FP8, whose rule also leaves large filters float.
bool floatByDesign(const analysis::LayerInfo& layer, const AttentionVerdicts& attention,
                   int64_t minChannels, bool fp8) {
  if (attention.floatByDesign.count(layer.node) > 0) return true;
  return qdq::smallLayerReason(*layer.node, qdq::SmallLayerRule{minChannels, fp8}).has_value();
}

void checkLayers(const analysis::PrecisionReport& precisions, const AttentionVerdicts& attention,
                 int64_t minChannels, PlacementSummary& summary, std::vector<Finding>& findings) {
  for (const analysis::LayerInfo& layer : precisions.layers) {
    const Node& node = *layer.node;
    if (analysis::isRecurrentOp(node)) continue;  // float by nature: nothing to place
    if (!analysis::isWeightedOp(node)) {
      std::string cause =
          layer.notes.empty() ? node.opType() + " is a QOperator op" : layer.notes.front();
      const Node* producer = node.input(0) ? node.input(0)->producer() : nullptr;
      const bool dynamic = producer != nullptr && producer->is("DynamicQuantizeLinear");
      if (dynamic) cause += "; its input is quantized at run time (DynamicQuantizeLinear)";
      findings.push_back(makeFinding(
          Severity::Error, "qoperator-op", node, cause,
          dynamic ? "quantize statically to Q/DQ with calibrated scales (ONNX Runtime: "
                    "quantize_static with quant_format=QuantFormat.QDQ)"
                  : "export Q/DQ (QuantizeLinear/DequantizeLinear around float ops) instead of "
                    "the QOperator format"));
      continue;
    }
    ++summary.weightedLayers;
    if (layer.precision == analysis::Precision::Int8) {
      ++summary.int8Layers;
      checkSmallQuantized(layer, minChannels, findings);
      continue;
    }
    if (layer.precision == analysis::Precision::Fp8) {
      ++summary.fp8Layers;
      checkSmallQuantized(layer, minChannels, findings);
      continue;
    }
    if (layer.weightOnly) {  // its input stays float by design
      ++summary.int4WeightOnlyLayers;
      continue;
    }
    if (layer.precision == analysis::Precision::Fp16) ++summary.fp16Layers;
    summary.floatLayers.push_back(analysis::layerName(node));
    if (!summary.hasQdq) continue;  // a float model: nothing was meant to be quantized
    if (floatByDesign(layer, attention, minChannels, precisions.fp8.layers > 0)) {
      ++summary.floatByDesign;
      continue;
    }
    if (attention.reported.count(&node) > 0) continue;
    findings.push_back(makeFinding(
        Severity::Warning, "float-layer", node,
        fmt::format("runs in {}: {}", analysis::precisionName(layer.precision), layer.reason),
        "put QuantizeLinear/DequantizeLinear on both inputs (activation and weight), unless it "
        "is meant to stay in float"));
  }
}

// A pair whose DequantizeLinear feeds both readers that run in INT8 and readers that do not:
// TensorRT keeps the tensor in INT8 and dequantizes it again, in a layer of its own, for the rest.
void checkReformat(const Node& q, const Node& dq, const qdq::TransformerPatterns& patterns,
                   std::vector<Finding>& findings) {
  std::vector<std::string> quantized;
  std::vector<std::string> floats;
  for (const Use& use : dq.output(0)->uses()) {
    (usesQuantized(use, patterns, 0) ? quantized : floats).push_back(describeReader(*use.user));
  }
  if (dq.output(0)->isGraphOutput()) {
    floats.push_back(fmt::format("graph output '{}'", dq.output(0)->name()));
  }
  if (quantized.empty() || floats.empty()) return;
  bool attention = false;  // the fix is the same either way
  const std::string note = floatReadersNote(dq.output(0), patterns, attention);
  findings.push_back(makeFinding(
      Severity::Warning, "qdq-reformat", q,
      fmt::format("its DequantizeLinear '{}' feeds {} in INT8 and {} in float{}: TensorRT "
                  "keeps the tensor in INT8 and adds a reformat layer (a separate dequantize) "
                  "for the float readers",
                  analysis::layerName(dq), fmt::join(quantized, ", "), fmt::join(floats, ", "),
                  note),
      fmt::format("let {} read the tensor before QuantizeLinear: quantize only the inputs "
                  "that run in INT8",
                  fmt::join(floats, ", "))));
}

void checkPairs(const Graph& graph, const qdq::TransformerPatterns& patterns,
                std::vector<Finding>& findings) {
  for (const Node* dq : graph.allNodes()) {
    if (!dq->is("DequantizeLinear")) continue;
    const Node* q = dq->input(0)->producer();
    if (q == nullptr || !q->is("QuantizeLinear") || analysis::isBuildTimeConstant(q->input(0))) {
      continue;
    }
    if (feedsQuantizable(dq->output(0), patterns, 0)) {
      checkReformat(*q, *dq, patterns, findings);
      continue;
    }
    const std::string readers = describeReaders(dq->output(0));
    bool attention = false;
    const std::string note = floatReadersNote(dq->output(0), patterns, attention);
    const Node* producer = q->input(0)->producer();
    if (producer != nullptr && analysis::isWeightedOp(*producer)) {
      findings.push_back(makeFinding(
          Severity::Warning, "q-on-weighted-output", *q,
          fmt::format("quantizes the output of {} '{}', and its DequantizeLinear '{}' feeds {}, "
                      "nothing TensorRT runs in INT8{}: the pair stays an extra quantize and "
                      "dequantize and keeps '{}' from fusing what follows it",
                      producer->opType(), analysis::layerName(*producer), analysis::layerName(*dq),
                      readers, note, analysis::layerName(*producer)),
          attention ? kAttentionInteriorFix
                    : "remove this Q/DQ pair and quantize the inputs of the next Conv, "
                      "ConvTranspose, Gemm or MatMul instead"));
    } else {
      findings.push_back(makeFinding(
          Severity::Warning, "qdq-unfused", *q,
          fmt::format("its DequantizeLinear '{}' feeds {}, nothing TensorRT runs in INT8{}: the "
                      "pair cannot fuse and runs as a separate quantize and dequantize",
                      analysis::layerName(*dq), readers, note),
          note.empty() ? "remove this Q/DQ pair, or move it to the input of a Conv, "
                         "ConvTranspose, Gemm or MatMul"
          : attention  ? kAttentionInteriorFix
                       : kFloatPatternFix));
    }
  }
}

// A Concat whose inputs all come through DequantizeLinear, with different scales: TensorRT
// requantizes them to one scale before it can concatenate in INT8.
void checkConcats(const Graph& graph, std::vector<Finding>& findings) {
  for (const Node* concat : graph.allNodes()) {
    if (!concat->is("Concat") || concat->numInputs() < 2) continue;
    std::vector<double> scales;
    std::vector<std::string> parts;
    bool allDequantized = true;
    for (const Value* in : concat->inputs()) {
      std::optional<analysis::DequantizedInput> dq =
          in ? analysis::findDequantizedInput(in) : std::nullopt;
      if (!dq || dq->constantData || dq->perChannel() || !dq->minScale) {
        allDequantized = false;
        break;
      }
      scales.push_back(*dq->minScale);
      parts.push_back(fmt::format("'{}' {:.6g}", in->name(), *dq->minScale));
    }
    if (!allDequantized) continue;
    const auto [lo, hi] = std::minmax_element(scales.begin(), scales.end());
    if (*hi - *lo <= 1e-6 * *hi) continue;
    findings.push_back(makeFinding(
        Severity::Warning, "concat-requantize", *concat,
        fmt::format("its inputs come through DequantizeLinear with different scales ({}): "
                    "TensorRT requantizes them to one scale before concatenating in INT8, a "
                    "reformat per input",
                    fmt::join(parts, ", ")),
        "give the Concat's inputs one scale: qopt -p propagate-scales unifies them"));
  }
}

}  // namespace

PlacementSummary checkPlacement(const Graph& graph, const analysis::PrecisionReport& precisions,
                                std::vector<Finding>& findings, int64_t minChannels) {
  PlacementSummary summary;
  graph.walk([&](const Node* node) {
    if (node->domain().empty() && (node->is("QuantizeLinear") || node->is("DequantizeLinear"))) {
      summary.hasQdq = true;
    }
  });
  const qdq::TransformerPatterns patterns = qdq::findTransformerPatterns(graph);
  std::vector<Finding> attentionFindings;
  const AttentionVerdicts attention = checkAttention(patterns, precisions, attentionFindings);
  checkLayers(precisions, attention, minChannels, summary, findings);
  findings.insert(findings.end(), attentionFindings.begin(), attentionFindings.end());
  checkPairs(graph, patterns, findings);
  if (summary.hasQdq) checkConcats(graph, findings);
  // Layers left float on purpose do not make a model "mostly float".
  const int64_t floatCount =
      static_cast<int64_t>(summary.floatLayers.size()) - summary.floatByDesign;
  if (summary.hasQdq &&
      floatCount > summary.int8Layers + summary.fp8Layers + summary.int4WeightOnlyLayers) {
    findings.push_back(
        Finding{Severity::Warning, "mostly-float", "", "",
                fmt::format("a Q/DQ model whose weighted layers run mostly in float: {}",
                            placementText(summary)),
                "quantize both inputs of the layers listed (see the float-layer findings)"});
  }
  return summary;
}

std::string placementText(const PlacementSummary& summary) {
  std::string text = fmt::format("{} of {} weighted layers run in INT8", summary.int8Layers,
                                 summary.weightedLayers);
  if (summary.fp8Layers > 0) text += fmt::format(", {} in FP8", summary.fp8Layers);
  if (summary.int4WeightOnlyLayers > 0) {
    text += fmt::format(", {} INT4 weight-only", summary.int4WeightOnlyLayers);
  }
  if (summary.floatLayers.empty()) return text;
  text += fmt::format(", {} in float", summary.floatLayers.size());
  if (summary.fp16Layers > 0) {
    text += fmt::format(" ({} FP16, {} FP32)", summary.fp16Layers, summary.fp32Layers());
  }
  return text + ": " + listNames(summary.floatLayers);
}

}  // namespace qopt::checktrt
