// The loops of QuantizeLinear to 8-bit integers, of DequantizeLinear from them, and of a
// QuantizeLinear -> DequantizeLinear pair run as one pass (the interpreter fuses the pair when
// nothing else reads the integers), built for each instruction set (VectorClones.h). Both compute
// exactly what the two kernels compute value by value: x / scale in float, saturated and rounded
// half to even (quantizeSmallRange), and (q - zero point) * scale in float for the dequantized
// value.
#pragma once

#include <cstdint>

#include "QuantMath.h"

namespace qopt::interp {

/// The parameters of one QuantizeLinear to an 8-bit type: lo and hi are the type's range less
/// the zero point (as quantizeSmallRange takes them).
struct QuantizeParams {
  float scale = 1.0f;
  int32_t zeroPoint = 0;
  float lo = 0.0f;
  float hi = 0.0f;
};

/// The parameters for `scale` and `zeroPoint` on the integers of `range`.
inline QuantizeParams quantizeParams(float scale, int32_t zeroPoint, QuantRange range) {
  return {scale, zeroPoint, static_cast<float>(static_cast<int64_t>(range.min) - zeroPoint),
          static_cast<float>(static_cast<int64_t>(range.max) - zeroPoint)};
}

void quantizeRow(const float* x, int8_t* y, int64_t n, const QuantizeParams& q);
void quantizeRow(const float* x, uint8_t* y, int64_t n, const QuantizeParams& q);

/// y = (x - zeroPoint) * scale in float, as DequantizeLinear computes it.
void dequantizeRow(const int8_t* x, float* y, int64_t n, float scale, int32_t zeroPoint);
void dequantizeRow(const uint8_t* x, float* y, int64_t n, float scale, int32_t zeroPoint);

/// y = DequantizeLinear(QuantizeLinear(x; q); scale, zeroPoint) without the integers in memory.
/// `x` may equal `y`.
void fakeQuantizeRow(const float* x, float* y, int64_t n, const QuantizeParams& q,
                     float dequantizeScale, int32_t dequantizeZeroPoint);

}  // namespace qopt::interp
