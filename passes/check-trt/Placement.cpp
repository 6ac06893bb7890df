#include "Placement.h"

#include <array>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "qopt/analysis/Precision.h"
#include "qopt/ir/Graph.h"

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

bool feedsQuantizable(const Value* value, int depth) {
  if (depth > kMaxWalk) return false;
  for (const Use& use : value->uses()) {
    const Node& user = *use.user;
    if (analysis::isWeightedOp(user) && use.index <= 1) return true;
    if (isOneOf(user, kFusingOps)) return true;
    if (analysis::commutesWithQuantization(user)) {
      for (const Value* out : user.outputs()) {
        if (feedsQuantizable(out, depth + 1)) return true;
      }
    }
  }
  return false;
}

// "Clip 'relu1'", "the graph output 'y'": what reads a dequantized value.
std::string describeReaders(const Value* value) {
  std::vector<std::string> readers;
  for (const Use& use : value->uses()) {
    readers.push_back(fmt::format("{} '{}'", use.user->opType(), analysis::layerName(*use.user)));
  }
  if (value->isGraphOutput()) readers.push_back(fmt::format("graph output '{}'", value->name()));
  if (readers.empty()) return "nothing";
  return fmt::format("{}", fmt::join(readers, ", "));
}

std::string listNames(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < kListedNames; ++i) {
    if (i > 0) text += ", ";
    text += names[i];
  }
  if (names.size() > kListedNames) text += fmt::format(" and {} more", names.size() - kListedNames);
  return text;
}

void checkLayers(const analysis::PrecisionReport& precisions, PlacementSummary& summary,
                 std::vector<Finding>& findings) {
  for (const analysis::LayerInfo& layer : precisions.layers) {
    const Node& node = *layer.node;
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
      continue;
    }
    if (layer.precision == analysis::Precision::Fp8) {
      ++summary.fp8Layers;
      continue;
    }
    if (layer.weightOnly) {  // its input stays float by design
      ++summary.int4WeightOnlyLayers;
      continue;
    }
    if (layer.precision == analysis::Precision::Fp16) ++summary.fp16Layers;
    summary.floatLayers.push_back(analysis::layerName(node));
    if (!summary.hasQdq) continue;  // a float model: nothing was meant to be quantized
    findings.push_back(makeFinding(
        Severity::Warning, "float-layer", node,
        fmt::format("runs in {}: {}", analysis::precisionName(layer.precision), layer.reason),
        "put QuantizeLinear/DequantizeLinear on both inputs (activation and weight), unless it "
        "is meant to stay in float"));
  }
}

void checkPairs(const Graph& graph, std::vector<Finding>& findings) {
  for (const Node* dq : graph.nodes()) {
    if (!dq->is("DequantizeLinear")) continue;
    const Node* q = dq->input(0)->producer();
    if (q == nullptr || !q->is("QuantizeLinear") || analysis::isBuildTimeConstant(q->input(0))) {
      continue;
    }
    if (feedsQuantizable(dq->output(0), 0)) continue;
    const std::string readers = describeReaders(dq->output(0));
    const Node* producer = q->input(0)->producer();
    if (producer != nullptr && analysis::isWeightedOp(*producer)) {
      findings.push_back(makeFinding(
          Severity::Warning, "q-on-weighted-output", *q,
          fmt::format("quantizes the output of {} '{}', and its DequantizeLinear '{}' feeds {}, "
                      "nothing TensorRT runs in INT8: the pair stays an extra quantize and "
                      "dequantize and keeps '{}' from fusing what follows it",
                      producer->opType(), analysis::layerName(*producer), analysis::layerName(*dq),
                      readers, analysis::layerName(*producer)),
          "remove this Q/DQ pair and quantize the inputs of the next Conv, ConvTranspose, Gemm "
          "or MatMul instead"));
    } else {
      findings.push_back(makeFinding(
          Severity::Warning, "qdq-unfused", *q,
          fmt::format("its DequantizeLinear '{}' feeds {}, nothing TensorRT runs in INT8: the "
                      "pair cannot fuse and runs as a separate quantize and dequantize",
                      analysis::layerName(*dq), readers),
          "remove this Q/DQ pair, or move it to the input of a Conv, ConvTranspose, Gemm or "
          "MatMul"));
    }
  }
}

}  // namespace

PlacementSummary checkPlacement(const Graph& graph, const analysis::PrecisionReport& precisions,
                                std::vector<Finding>& findings) {
  PlacementSummary summary;
  graph.walk([&](const Node* node) {
    if (node->domain().empty() && (node->is("QuantizeLinear") || node->is("DequantizeLinear"))) {
      summary.hasQdq = true;
    }
  });
  checkLayers(precisions, summary, findings);
  checkPairs(graph, findings);
  const int64_t floatCount = static_cast<int64_t>(summary.floatLayers.size());
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
