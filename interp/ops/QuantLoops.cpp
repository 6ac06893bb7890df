#include "QuantLoops.h"

#include "VectorClones.h"

namespace qopt::interp {

namespace {

// quantizeSmallRange without its branch, so that the loops vectorize: a NaN fails both
// comparisons of the clamp and is then replaced by 0, which rounds to the zero point as
// quantizeSmallRange returns it.
[[gnu::always_inline]] inline int32_t quantizeLane(float x, QuantizeParams q) {
  const float v = x / q.scale;
  float c = v < q.lo ? q.lo : v;
  c = c > q.hi ? q.hi : c;
  c = v == v ? c : 0.0f;
  constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23, as quantizeSmallRange
  const float rounded = (c + kRoundingShift) - kRoundingShift;
  return static_cast<int32_t>(rounded) + q.zeroPoint;
}

// The parameters are copied first: the 8-bit stores may alias anything, and would otherwise make
// the compiler reload them after every store instead of vectorizing.
template <class Q>
[[gnu::always_inline]] inline void quantizeLoop(const float* x, Q* y, int64_t n,
                                                const QuantizeParams& params) {
  const QuantizeParams q = params;
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Q>(quantizeLane(x[i], q));
}

template <class Q>
[[gnu::always_inline]] inline void dequantizeLoop(const Q* x, float* y, int64_t n, float scale,
                                                  int32_t zeroPoint) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zeroPoint) * scale;
  }
}

}  // namespace

QOPT_VECTOR_CLONES
void dequantizeRow(const int8_t* x, float* y, int64_t n, float scale, int32_t zeroPoint) {
  dequantizeLoop(x, y, n, scale, zeroPoint);
}

QOPT_VECTOR_CLONES
void dequantizeRow(const uint8_t* x, float* y, int64_t n, float scale, int32_t zeroPoint) {
  dequantizeLoop(x, y, n, scale, zeroPoint);
}

QOPT_VECTOR_CLONES
void quantizeRow(const float* x, int8_t* y, int64_t n, const QuantizeParams& q) {
  quantizeLoop(x, y, n, q);
}

QOPT_VECTOR_CLONES
void quantizeRow(const float* x, uint8_t* y, int64_t n, const QuantizeParams& q) {
  quantizeLoop(x, y, n, q);
}

QOPT_VECTOR_CLONES
void fakeQuantizeRow(const float* x, float* y, int64_t n, const QuantizeParams& q,
                     float dequantizeScale, int32_t dequantizeZeroPoint) {
  const QuantizeParams params = q;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t stored = quantizeLane(x[i], params);  // in the 8-bit range: stored exactly
    y[i] = static_cast<float>(stored - dequantizeZeroPoint) * dequantizeScale;
  }
}

}  // namespace qopt::interp
