// Where the Q/DQ nodes sit, judged by what TensorRT fuses: weighted layers (Conv, ConvTranspose,
// Gemm, MatMul) without Q/DQ on both inputs run in float, and a Q/DQ pair that feeds nothing
// TensorRT runs in INT8 is an extra quantize and dequantize that no kernel absorbs. Also what
// makes an INT8 engine slower than FP16: a DequantizeLinear read both in INT8 and in float (a
// reformat), Q/DQ inside a Softmax chain, LayerNorm or GELU, quantized layers too small to gain
// (SmallLayers.h), Concat inputs with different scales (a requantize) and attention blocks
// quantized inconsistently (TransformerChecks.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "Finding.h"
#include "qopt/analysis/PrecisionReport.h"
#include "qopt/qdq/SmallLayers.h"

namespace qopt::checktrt {

struct PlacementSummary {
  bool hasQdq = false;  // QuantizeLinear or DequantizeLinear nodes anywhere (subgraphs too)
  int64_t weightedLayers = 0;
  int64_t int8Layers = 0;
  int64_t fp8Layers = 0;
  int64_t int4WeightOnlyLayers = 0;  // float input, blocked int4 weight (weight-only GEMM)
  int64_t fp16Layers = 0;
  std::vector<std::string> floatLayers;  // names, in graph order
  /// Float layers left so on purpose (TensorRT gains nothing from quantizing them, or an
  /// attention block wholly in float): no float-layer finding, not counted as mostly-float.
  int64_t floatByDesign = 0;

  int64_t fp32Layers() const { return static_cast<int64_t>(floatLayers.size()) - fp16Layers; }
};

/// Reads the layers of `graph` as `precisions` classified them (the classification inspect
/// prints) and appends findings for QOperator layers, float layers of a Q/DQ model (not those
/// left float on purpose), quantized layers too small to gain, inconsistent attention blocks,
/// Q/DQ pairs that cannot fuse or force a reformat, Concats that requantize, and a model-level
/// warning when most weighted layers of a Q/DQ model run in float.
/// `minChannels` is the small-layer rule's threshold (SmallLayers.h; 0: no small-layer finding).
PlacementSummary checkPlacement(const Graph& graph, const analysis::PrecisionReport& precisions,
                                std::vector<Finding>& findings,
                                int64_t minChannels = qdq::kDefaultMinChannels);

/// "3 of 53 weighted layers run in INT8, 50 in float (FP32: a, b, c, ...)"; FP8 models:
/// "0 of 53 weighted layers run in INT8, 53 in FP8".
std::string placementText(const PlacementSummary& summary);

}  // namespace qopt::checktrt
