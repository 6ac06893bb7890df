// Writes a blockwise-quantized weight into the graph, in one of two forms:
//   qdq: int4 (uint4 when asymmetric) codes -> DequantizeLinear(axis, block_size) -> the
//        MatMul/Gemm, as TensorRT 10 reads INT4 weight-only GEMMs (opset 21);
//   ort: the MatMul replaced by com.microsoft MatMulNBits in ONNX Runtime's packing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "WeightSites.h"
#include "qopt/dense/BlockQuant.h"

namespace qopt::wq {

/// The DequantizeLinear feeding `site`'s weight input; the float weight is erased when nothing
/// else reads it. Returns the bytes the quantized weight and its parameters take.
int64_t emitQdq(const WeightSite& site, const BlockQuantized& q);

/// Replaces `site`'s node by MatMulNBits (same output value name); `bias` (N values) becomes its
/// bias input. Returns the bytes B, scales and zero points take.
int64_t emitOrt(const WeightSite& site, const BlockQuantized& q,
                const std::optional<std::vector<double>>& bias);

}  // namespace qopt::wq
