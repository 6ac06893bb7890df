// What a convolution can apply to its output tile while it is still in cache: the per-channel
// affine map of a following BatchNormalization, the Add of a residual tensor of the output's
// shape, and a following Relu or Clip. The interpreter
// fuses those nodes into the convolution only because the result is bitwise the same as running
// them one by one: the affine map is the very function BatchNormalization runs, the Add keeps
// its operand order, and Relu and Clip are exact.
#pragma once

#include <cstdint>
#include <vector>

namespace qopt::interp {

/// y[i] = x[i] * a + b, in float (BatchNormalization's inference formula). `x` may equal `y`.
void scaleShift(const float* x, float* y, int64_t n, float a, float b);

/// BatchNormalization's per-channel coefficients: a = scale / sqrt(var + epsilon),
/// b = B - mean * a (as ONNX Runtime computes them, in float).
void batchNormCoefficients(const std::vector<float>& scale, const std::vector<float>& bias,
                           const std::vector<float>& mean, const std::vector<float>& var,
                           float epsilon, std::vector<float>& a, std::vector<float>& b);

struct Activation {
  enum class Kind : uint8_t { None, Relu, Clip };
  Kind kind = Kind::None;
  float lo = 0.0f;  // Clip's bounds
  float hi = 0.0f;
};

struct ConvEpilogue {
  std::vector<float> scale;  // per output channel; empty: no affine map
  std::vector<float> shift;
  bool addsResidual = false;   // an Add of a tensor of the output's shape follows the affine map
  bool residualFirst = false;  // the residual is the Add's first operand
  Activation activation;

  bool empty() const {
    return scale.empty() && !addsResidual && activation.kind == Activation::Kind::None;
  }
  /// Applies the epilogue in place to `n` outputs of output channel `channel`; `residual` holds
  /// the residual's elements at the same positions (null when !addsResidual).
  void apply(float* y, const float* residual, int64_t n, int64_t channel) const;
};

}  // namespace qopt::interp
