// The numbers of a quantization: activation scale and zero point from calibrated statistics,
// and int8 or float8 (E4M3FN) weights with their per-channel scales. Shared by insert-qdq and
// static-quant.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/ir/Tensor.h"
#include "qopt/quant/Calibration.h"

namespace qopt::qdq {

/// The scale given to a tensor whose calibrated range is 0 (every value seen was 0): TensorRT
/// and ONNX require a strictly positive scale, and any positive scale maps 0 to 0.
inline constexpr float kZeroRangeScale = 1.0f / 1048576.0f;  // 2^-20

/// How activations are quantized: int8 symmetric (TensorRT, generic), uint8 asymmetric with a
/// zero point from the range (ONNX Runtime's QDQ format, as quantize_static writes it), or
/// float8 E4M3FN with amax mapped to its largest value, 448 (TensorRT's FP8, as NVIDIA's Model
/// Optimizer writes it).
enum class ActivationScheme { SignedSymmetric, UnsignedAsymmetric, Float8 };

/// E4M3FN's largest finite value: FP8 scales are amax / 448.
inline constexpr double kFloat8E4M3Max = 448.0;

struct ActivationParams {
  float scale = 1;
  int64_t zeroPoint = 0;
  bool isUnsigned = false;
  DataType type = DataType::Int8;  // Int8, UInt8 or Float8E4M3FN
  double amax = 0;                 // the calibrator's threshold on |x|
  float rangeMin = 0;              // the range the scale covers (asymmetric)
  float rangeMax = 0;
  bool zeroRange = false;  // amax was 0: kZeroRangeScale was used
};

/// Scale and zero point for one activation. Symmetric: scale = amax / 127 (float8: amax / 448),
/// zero point 0.
/// Asymmetric: the range [max(min, -amax), min(max, amax)] widened to include 0, scale =
/// (hi - lo) / 255, zero point round(-lo / scale) in [0, 255] (quantize_static's rule; for the
/// max calibrator it is the observed min and max).
ActivationParams activationParams(const quant::TensorStatistics& stats,
                                  const quant::CalibratorSpec& spec, ActivationScheme scheme);
/// The spec activationParams applies under `scheme`: uint8 asymmetric on a non-negative tensor
/// uses 255 levels.
quant::CalibratorSpec schemeSpec(const quant::TensorStatistics& stats,
                                 const quant::CalibratorSpec& spec, ActivationScheme scheme);
/// Scale and zero point for a threshold already chosen (calibrator=auto), by the same rules.
ActivationParams activationParamsForAmax(const quant::TensorStatistics& stats, double amax,
                                         ActivationScheme scheme);

struct QuantizedWeight {
  Tensor values;              // int8 in [-127, 127] or float8 E4M3FN, the weight's dims
  std::vector<double> amax;   // one per channel (one when per tensor)
  std::vector<float> scales;  // amax / 127 or / 448 (kZeroRangeScale for an all-zero channel)
  int64_t axis = -1;          // -1: per tensor
  int64_t zeroChannels = 0;   // channels whose weights are all 0
  std::string rounding;       // how the codes were chosen, when not round to nearest
};

/// The weights a pass quantized, by weight and axis.
using PlannedWeights = std::map<std::pair<const Value*, int64_t>, QuantizedWeight>;

/// Symmetric quantization of a float weight along `axis` (-1: per tensor) with each channel's
/// max |w|. Int8: q = round-half-even(w / scale) saturated to [-127, 127]; Float8E4M3FN: w / scale
/// (computed in double) rounded once to E4M3FN, saturating (qopt/ir/Float8.h). Throws qopt::Error
/// naming `what` for a non-float weight or a bad axis.
QuantizedWeight quantizeWeight(const Tensor& weight, int64_t axis, const std::string& what,
                               DataType type = DataType::Int8);
/// The value nearest to `unit` (a weight divided by its scale) that a weight code of `type`
/// (Int8: [-127, 127]; Float8E4M3FN, saturating) stands for.
double nearestOnGrid(double unit, DataType type);
/// Sets the codes of `weight` (its axis and scales already chosen) from the values `w` of a
/// weight of dims `dims`, each rounded at its channel's scale as quantizeWeight rounds: values on
/// the grid (multiples of the scale) keep their codes exactly.
void setWeightCodes(QuantizedWeight& weight, const std::vector<int64_t>& dims,
                    const std::vector<double>& w, DataType type);
/// The float values a quantized weight stands for (what its DequantizeLinear yields): q * scale
/// in float32, then in `type` (float, float16 or bfloat16).
Tensor dequantizedWeight(const QuantizedWeight& weight, DataType type);

/// A bias quantized as ONNX Runtime's QDQ format does: int32 with scale input_scale *
/// weight_scale[c] per output channel (channel count = bias size) and zero point 0.
struct QuantizedBias {
  Tensor values;              // int32, the bias's dims
  std::vector<float> scales;  // one per channel
};
QuantizedBias quantizeBias(const Tensor& bias, float inputScale,
                           const std::vector<float>& weightScales, const std::string& what);

}  // namespace qopt::qdq
