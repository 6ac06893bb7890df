// Where the Q/DQ nodes sit, judged by what TensorRT fuses: weighted layers (Conv, ConvTranspose,
// Gemm, MatMul) without Q/DQ on both inputs run in float, and a Q/DQ pair that feeds nothing
// TensorRT runs in INT8 is an extra quantize and dequantize that no kernel absorbs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "Finding.h"
#include "qopt/analysis/PrecisionReport.h"

namespace qopt::checktrt {

struct PlacementSummary {
  bool hasQdq = false;  // QuantizeLinear or DequantizeLinear nodes anywhere (subgraphs too)
  int64_t weightedLayers = 0;
  int64_t int8Layers = 0;
  int64_t fp8Layers = 0;
  int64_t int4WeightOnlyLayers = 0;  // float input, blocked int4 weight (weight-only GEMM)
  int64_t fp16Layers = 0;
  std::vector<std::string> floatLayers;  // names, in graph order

  int64_t fp32Layers() const { return static_cast<int64_t>(floatLayers.size()) - fp16Layers; }
};

/// Reads the layers of `graph` as `precisions` classified them (the classification inspect
/// prints) and appends, in graph order, findings for QOperator layers, float layers of a Q/DQ
/// model, Q/DQ pairs that cannot fuse, and a model-level warning when most weighted layers of a
/// Q/DQ model run in float.
PlacementSummary checkPlacement(const Graph& graph, const analysis::PrecisionReport& precisions,
                                std::vector<Finding>& findings);

/// "3 of 53 weighted layers run in INT8, 50 in float (FP32: a, b, c, ...)"; FP8 models:
/// "0 of 53 weighted layers run in INT8, 53 in FP8".
std::string placementText(const PlacementSummary& summary);

}  // namespace qopt::checktrt
