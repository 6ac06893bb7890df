// What FP8 (float8 E4M3FN Q/DQ) asks of the TensorRT version and the GPU.
//
// TensorRT's ONNX parser reads QuantizeLinear/DequantizeLinear of float8 E4M3FN (opset 19, zero
// point 0 of that type, amax mapped to 448) from TensorRT 10 on; this is the form NVIDIA's Model
// Optimizer exports (modelopt.onnx.quantization.fp8: Conv, Gemm, MatMul and residual Adds) and
// the one docs/tensorrt.md lists for TensorRT 10 and 11. Before it, FP8 reached TensorRT only
// through NVIDIA's own TRT_FP8QuantizeLinear/TRT_FP8DequantizeLinear ops (Transformer Engine's
// early ONNX export), not ONNX's operators, so a float8 Q/DQ model is refused for 8.x and 9.x. The
// other float8 types (E4M3FNUZ, E5M2, E5M2FNUZ) are not TensorRT's: QdqChecks reports them. FP8
// kernels exist on compute capability 8.9 and newer (Ada, Hopper, Blackwell).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "Finding.h"
#include "qopt/analysis/PrecisionReport.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Target.h"

namespace qopt::checktrt {

/// A GPU's compute capability, "8.9" -> {8, 9}.
struct ComputeCapability {
  int major = 0;
  int minor = 0;
  std::string str() const;
};

/// Parses "8.9", "9.0", "10.0"; throws qopt::Error (kind Input) naming the text otherwise.
ComputeCapability parseComputeCapability(const std::string& text);

/// The oldest TensorRT whose ONNX parser takes float8 E4M3FN Q/DQ, and the oldest GPU with FP8.
inline constexpr int kFp8TrtMajor = 10;
inline constexpr ComputeCapability kFp8ComputeCapability{8, 9};

/// Appends the FP8 findings of a model with float8 E4M3FN Q/DQ (none otherwise): an error for a
/// TensorRT version before 10, an error for a `gpu` older than 8.9 or a note when none is given.
void checkFp8(const Graph& graph, const analysis::PrecisionReport& precisions,
              const TrtVersion& version, const std::optional<ComputeCapability>& gpu,
              std::vector<Finding>& findings);

}  // namespace qopt::checktrt
