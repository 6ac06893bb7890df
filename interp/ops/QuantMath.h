// Rounding and saturation shared by the quantized kernels, written to give bit-identical results
// to ONNX Runtime: round half to even, saturate to the target type's range, and requantize an
// int32 accumulator with a float multiplier computed as (input scale * weight scale) / output
// scale.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "qopt/ir/DataType.h"

namespace qopt::interp {

/// The integer range of a quantized type as stored in an Array (4-bit types use a byte).
struct QuantRange {
  int32_t min;
  int32_t max;
};

inline QuantRange quantRange(DataType type) {
  if (auto range = quantizedIntegerRange(type)) {
    return {static_cast<int32_t>(range->first), static_cast<int32_t>(range->second)};
  }
  return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
}

/// Round half to even (the default floating point rounding mode).
inline float roundHalfToEven(float v) {
  return std::nearbyint(v);
}
inline double roundHalfToEven(double v) {
  return std::nearbyint(v);
}

/// saturate(round(v) + zeroPoint) in [range.min, range.max]; NaN maps to the zero point.
inline int32_t quantizeValue(float v, int32_t zeroPoint, QuantRange range) {
  if (std::isnan(v)) return zeroPoint;
  const float lo = static_cast<float>(static_cast<int64_t>(range.min) - zeroPoint);
  const float hi = static_cast<float>(static_cast<int64_t>(range.max) - zeroPoint);
  // Clamping before rounding gives the same result (the bounds are integers) and keeps the
  // float -> int conversion in range.
  v = v < lo ? lo : (v > hi ? hi : v);
  return static_cast<int32_t>(static_cast<int64_t>(roundHalfToEven(v)) + zeroPoint);
}

/// quantizeValue for a target range within +-2^22 (the 4-, 8- and 16-bit types), with `lo` and
/// `hi` the range less the zero point: the same result, rounded by the float adder (adding and
/// subtracting 1.5 * 2^23 leaves the nearest integer, ties to even, in the default rounding
/// mode nearbyint also follows) instead of a library call, so the loop calling it vectorizes.
inline int32_t quantizeSmallRange(float v, int32_t zeroPoint, float lo, float hi) {
  if (v != v) return zeroPoint;  // NaN
  v = v < lo ? lo : (v > hi ? hi : v);
  constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23
  const float rounded = (v + kRoundingShift) - kRoundingShift;
  return static_cast<int32_t>(rounded) + zeroPoint;
}

/// Whether quantizeSmallRange holds for `range` with any zero point inside it.
inline bool isSmallRange(QuantRange range) {
  return range.min >= -(1 << 22) && range.max <= (1 << 22);
}

/// saturate(round(float(acc) * multiplier) + zeroPoint), as MLAS's requantization computes it.
inline int32_t requantize(int32_t acc, float multiplier, int32_t zeroPoint, QuantRange range) {
  return quantizeValue(static_cast<float>(acc) * multiplier, zeroPoint, range);
}

}  // namespace qopt::interp
