// The quantization a DequantizeLinear applies, read from its constant inputs: integer or float8
// type, scales, zero points and axis, and the range of float values the quantized type can
// represent, [scale * (qmin - zp), scale * (qmax - zp)] (float8: +-scale * its largest value).
// strip-qdq uses it to restore the clamp a QuantizeLinear carried and to write the scales it
// removes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::stripqdq {

struct QuantParams {
  DataType type = DataType::UInt8;  // integer or float8 type (UINT8: ONNX's default)
  DataType scaleType = DataType::Float;
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;  // as many as scales (zeros when the input was omitted)
  std::optional<int64_t> axis;      // set for per-axis parameters
  bool perTensor() const { return scales.size() == 1; }
};

/// Reads the parameters of a QuantizeLinear or DequantizeLinear node. nullopt (with the reason in
/// `why`) when the scale or zero point is not a build-time constant or the type is unsupported.
std::optional<QuantParams> readQuantParams(const Node& node, std::string* why);

/// Whether two nodes quantize with the same parameters (a Q/DQ pair that is an identity up to
/// rounding and clamping).
bool sameQuantization(const QuantParams& a, const QuantParams& b);

/// The representable float range of channel `k`.
struct FloatRange {
  double lo = 0;
  double hi = 0;
};
FloatRange representableRange(const QuantParams& params, size_t k);

/// The amax TensorRT's calibration cache holds for channel `k`: scale * 127 for symmetric int8
/// (zero point 0), otherwise max(|lo|, |hi|) of the representable range.
double cacheAmax(const QuantParams& params, size_t k);

/// "int8", "uint8", "int16", ... for the scales file.
std::string typeWord(DataType type);

}  // namespace qopt::stripqdq
