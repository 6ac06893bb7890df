// What a convolution can apply to its output tile while it is still in cache: the per-channel
// affine map of a following BatchNormalization (or the Add of a per-channel constant, a bias
// that an exporter left out of the Conv), the Add of a residual tensor of the output's shape,
// and a following Relu, Clip or written-out HardSwish. The interpreter
// fuses those nodes into the convolution only because the result is bitwise the same as running
// them one by one: the affine map is the very function BatchNormalization runs, the Add keeps
// its operand order, and Relu and Clip are exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "QuantLoops.h"

namespace qopt::interp {

/// y[i] = x[i] * a + b, in float (BatchNormalization's inference formula). `x` may equal `y`.
void scaleShift(const float* x, float* y, int64_t n, float a, float b);

/// BatchNormalization's per-channel coefficients: a = scale / sqrt(var + epsilon),
/// b = B - mean * a (as ONNX Runtime computes them, in float).
void batchNormCoefficients(const std::vector<float>& scale, const std::vector<float>& bias,
                           const std::vector<float>& mean, const std::vector<float>& var,
                           float epsilon, std::vector<float>& a, std::vector<float>& b);

struct Activation {
  // HardSwish: HardSwish as exporters write it out, x * Clip(x + offset, lo, hi) / divisor with
  // Add, Clip, Mul and Div nodes (paddle2onnx, TensorFlow exports).
  enum class Kind : uint8_t { None, Relu, Clip, HardSwish };
  Kind kind = Kind::None;
  float lo = 0.0f;  // Clip's bounds, and HardSwish's
  float hi = 0.0f;
  float offset = 0.0f;   // HardSwish's
  float divisor = 1.0f;  // HardSwish's
};

/// Relu's and Clip's expressions (elementwise.cpp has the same): Relu maps NaN and -0 to +0;
/// Clip keeps NaN, and the lower bound wins when lo > hi. The written-out HardSwish is the Add,
/// Clip, Mul and Div kernels' float operations in their order (addition and multiplication
/// give the same result whichever operand comes first).
inline float reluValue(float v) {
  return v > 0 ? v : 0.0f;
}
inline float clipValue(float v, float lo, float hi) {
  if (v > hi) v = hi;
  if (v < lo) v = lo;
  return v;
}
inline float hardSwishValue(float v, float offset, float lo, float hi, float divisor) {
  const float gate = clipValue(v + offset, lo, hi);
  const float product = v * gate;
  return product / divisor;
}

/// A Mul by a scalar and an Add of a scalar, rounded apart as the two kernels round them: the
/// product as a fused multiply-add of -0 (exactly the rounded product, and not a multiplication
/// the compiler could fuse with the Add). A missing Mul is 1 and a missing Add -0, which leave
/// every value as it is (-0 included).
struct ScalarScale {
  float multiplier = 1.0f;
  float addend = -0.0f;

  bool identity() const { return multiplier == 1.0f && addend == 0.0f && std::signbit(addend); }
};

[[gnu::always_inline]] inline float scaleValue(float v, float multiplier, float addend) {
  return __builtin_fmaf(v, multiplier, -0.0f) + addend;
}

/// A QuantizeLinear -> DequantizeLinear pair (8-bit, one scale and zero point each) that reads
/// the chain's output and nothing else: the chain writes its fake-quantized values.
struct FakeQuantStage {
  bool active = false;
  QuantizeParams quantize;
  float dequantizeScale = 1.0f;
  int32_t dequantizeZeroPoint = 0;
};

/// Calls fn(std::integral_constant<int, value>{}) for a run-time value in [0, N), so that the
/// callee is compiled once per value.
template <int N, int I = 0, class Fn>
[[gnu::always_inline]] inline void withConstant(int value, Fn&& fn) {
  if constexpr (I + 1 < N) {
    if (value != I) {
      withConstant<N, I + 1>(value, fn);
      return;
    }
  }
  fn(std::integral_constant<int, I>{});
}

/// The epilogue of one output channel, for a kernel that applies it while it writes the channel's
/// outputs (ConvEpilogue::apply runs the same expressions stage by stage).
struct ChannelEpilogue {
  bool affine = false;
  float a = 1.0f, b = 0.0f;
  bool scaled = false;  // before and after the activation: learnable affine blocks (PP-LCNetV3)
  ScalarScale before, after;
  bool addsResidual = false;
  bool residualFirst = false;
  Activation activation;
  FakeQuantStage fakeQuant;

  /// Calls fn(affine, scaled, addsResidual, activation) with the stages as compile-time tags
  /// (activation: 0 none, 1 Relu, 2 Clip, 3 HardSwish), so that a loop over outputs has no
  /// branch inside.
  template <class Fn>
  [[gnu::always_inline]] inline void dispatch(Fn&& fn) const {
    auto withAct = [&](auto affineTag, auto scaledTag, auto residualTag)
        __attribute__((always_inline)) {
      auto withTag = [&](auto activationTag) __attribute__((always_inline)) {
        fn(affineTag, scaledTag, residualTag, activationTag);
      };
      // The activation's tag is its Kind's value.
      withConstant<4>(static_cast<int>(activation.kind), withTag);
    };
    auto withResidual = [&](auto affineTag, auto scaledTag) __attribute__((always_inline)) {
      if (addsResidual) {
        withAct(affineTag, scaledTag, std::true_type{});
      } else {
        withAct(affineTag, scaledTag, std::false_type{});
      }
    };
    auto withScale = [&](auto affineTag) __attribute__((always_inline)) {
      if (scaled) {
        withResidual(affineTag, std::true_type{});
      } else {
        withResidual(affineTag, std::false_type{});
      }
    };
    if (affine) {
      withScale(std::true_type{});
    } else {
      withScale(std::false_type{});
    }
  }
};

/// dst[i] = e(src[i]) for i < n (src may equal dst); `residual` at dst's positions (null: no
/// residual). Inlined into the caller, which must be built for the same instruction set as
/// ConvEpilogue::apply, so that `v * a + b` contracts (or not) the same way.
[[gnu::always_inline]] inline void applyChannelEpilogue(const ChannelEpilogue& e, const float* src,
                                                        float* dst, const float* residual,
                                                        int64_t n) {
  // Every level is inlined into the caller's clone: a call into code built for the baseline
  // would round `v * a + b` twice where the BatchNormalization kernel's clone fuses it.
  e.dispatch([&](auto affine, auto scaled, auto addsResidual, auto act)
                 __attribute__((always_inline)) {
                   const float a = e.a, b = e.b, lo = e.activation.lo, hi = e.activation.hi;
                   const float offset = e.activation.offset, divisor = e.activation.divisor;
                   const float m0 = e.before.multiplier, c0 = e.before.addend;
                   const float m1 = e.after.multiplier, c1 = e.after.addend;
                   const bool residualFirst = e.residualFirst;
                   for (int64_t i = 0; i < n; ++i) {
                     float v = src[i];
                     if constexpr (affine) v = v * a + b;
                     if constexpr (scaled) v = scaleValue(v, m0, c0);
                     if constexpr (addsResidual)
                       v = residualFirst ? residual[i] + v : v + residual[i];
                     if constexpr (act == 1) v = reluValue(v);
                     if constexpr (act == 2) v = clipValue(v, lo, hi);
                     if constexpr (act == 3) v = hardSwishValue(v, offset, lo, hi, divisor);
                     if constexpr (scaled) v = scaleValue(v, m1, c1);
                     dst[i] = v;
                   }
                 });
  // The pair's own loop (QuantLoops.cpp), on values still in L1: the same bits as its step.
  if (e.fakeQuant.active) {
    fakeQuantizeRow(dst, dst, n, e.fakeQuant.quantize, e.fakeQuant.dequantizeScale,
                    e.fakeQuant.dequantizeZeroPoint);
  }
}

struct ConvEpilogue {
  std::vector<float> scale;  // per output channel; empty: no affine map
  std::vector<float> shift;
  ScalarScale before;          // after the affine map
  bool addsResidual = false;   // an Add of a tensor of the output's shape follows
  bool residualFirst = false;  // the residual is the Add's first operand
  Activation activation;
  ScalarScale after;         // after the activation
  FakeQuantStage fakeQuant;  // last

  bool empty() const {
    return scale.empty() && before.identity() && after.identity() && !addsResidual &&
           activation.kind == Activation::Kind::None && !fakeQuant.active;
  }
  /// Applies the epilogue in place to `n` outputs of output channel `channel`; `residual` holds
  /// the residual's elements at the same positions (null when !addsResidual).
  void apply(float* y, const float* residual, int64_t n, int64_t channel) const;
  /// The stages for output channel `channel`.
  ChannelEpilogue forChannel(int64_t channel) const;
};

}  // namespace qopt::interp
