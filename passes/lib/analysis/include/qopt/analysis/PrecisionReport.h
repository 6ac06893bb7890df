// Every compute layer of a model with the precision TensorRT runs it in (Precision.h) and its
// multiply-accumulates at the shapes the user gave (ObservedShapes.h), with totals per
// precision. `qopt inspect`, the inspect pass and check-trt all report from this one result, so
// they cannot disagree about the same graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qopt/analysis/ObservedShapes.h"
#include "qopt/analysis/Precision.h"
#include "qopt/pass/Json.h"

namespace qopt::analysis {

struct PrecisionTotals {
  int64_t layers = 0;
  uint64_t macs = 0;
};

struct PrecisionReport {
  std::vector<LayerInfo> layers;  // graph order; they point into the model, which must outlive
  PrecisionTotals int8, fp16, fp32, fp8;
  uint64_t totalMacs = 0;
  int64_t layersWithoutMacs = 0;  // shapes unknown
  ObservedShapes shapes;
  /// The main graph's other nodes with a float output (Relu, Add, Concat...; not Q/DQ, Cast or
  /// Constant), by the element type of that output: what runs in FP16 and what in FP32.
  int64_t otherHalf = 0;
  std::vector<const Node*> otherFloat32;

  const PrecisionTotals& totals(Precision precision) const;
  double int8MacShare() const;
};

/// Observes the shapes as `request` says and classifies every compute layer of `graph`.
/// Throws qopt::Error for a bad request (see observeShapes).
PrecisionReport reportPrecisions(const Graph& graph, const ShapeRequest& request = {});

/// "53 compute layers, 17.62M MACs: INT8 53 layers (100.0% of MACs), FP16 0 (0.0%), FP32 0
/// (0.0%)".
std::string precisionSummaryLine(const PrecisionReport& report);

/// "other ops with float outputs: 120 in FP16, 2 in FP32 (Resize 'up', TopK 'k')".
std::string otherOpsLine(const PrecisionReport& report);

/// What the counts rest on (shapeCaveats) and how many layers count no MACs: one line each.
std::vector<std::string> precisionCaveats(const PrecisionReport& report);

/// {"layers", "total-macs", "int8-mac-share", "INT8"/"FP16"/"FP32": {"layers", "macs",
/// "mac-share"}, "layers-without-macs", "shapes": {"source", "inputs", "assumed", "failure"},
/// "caveats"}.
Json precisionSummaryJson(const PrecisionReport& report);

/// 17620000 -> "17.62M", 12800 -> "12.8K".
std::string compactCount(uint64_t n);

}  // namespace qopt::analysis
