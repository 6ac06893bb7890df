// Layers where TensorRT gains nothing from INT8 (or FP8), so that their Q/DQ only cost time: the
// rules of NVIDIA's Model Optimizer (docs/tensorrt.md). Tensor-core kernels want 16 channels
// on both sides of a convolution and K and N of at least 16 in a matrix product; below that
// TensorRT picks a float kernel anyway or a slower integer one, and the quantize/dequantize
// around the layer is pure cost. INT8 has kernels below the line for some convolutions, which
// stay quantized: a dense Conv with a square kernel and 8-aligned channels on one side whose
// other side reaches the line or that reads the model's input (the RGB stem), and a grouped
// (depthwise) Conv with 8-aligned output channels and 3x3 or larger kernels. FP8 has none, also
// leaves Convs at exactly 16 channels float, and takes filters of at most 32 elements (kh * kw).
// insert-qdq keeps such layers in float; check-trt reports them when they are quantized. Both
// read the same dims: a constant weight's, else the shapes the model declares; a dim not known
// that way does not count (a dynamic sequence length may be long at run time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "qopt/analysis/PrecisionReport.h"
#include "qopt/ir/Graph.h"

namespace qopt::qdq {

/// insert-qdq's default for min-channels.
inline constexpr int64_t kDefaultMinChannels = 16;
/// The largest filter (kh * kw) TensorRT's FP8 convolution kernels take.
inline constexpr int64_t kFp8MaxFilterElements = 32;

struct SmallLayerRule {
  int64_t minChannels = kDefaultMinChannels;  // 0: no channel, K or N rule
  bool fp8 = false;                           // FP8 placement: the filter rule applies too
};

/// Why TensorRT gains nothing from quantizing `node` (a Conv, Gemm or MatMul), e.g. "Conv with 3
/// input channels (fewer than 16)", "MatMul with K=8 (below 16)", or nullopt.
std::optional<std::string> smallLayerReason(const Node& node, const SmallLayerRule& rule);

/// Adds to the notes of every Conv, Gemm and MatMul of `report` that runs in float the reason
/// insert-qdq's rule keeps it float there, when it does: inspect then says why, not only that no
/// Q/DQ reaches it.
void noteSmallLayers(analysis::PrecisionReport& report, const SmallLayerRule& rule = {});

}  // namespace qopt::qdq
