#include "Epilogue.h"

#include <cmath>

#include "VectorClones.h"

namespace qopt::interp {

namespace {

// The same expressions as the Relu and Clip kernels (elementwise.cpp): NaN and -0 come out the
// same way. Relu maps NaN and -0 to +0; Clip keeps NaN, and the lower bound wins when lo > hi.
QOPT_VECTOR_CLONES
void reluInPlace(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0 ? y[i] : 0.0f;
}

QOPT_VECTOR_CLONES
void clipInPlace(float* y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i];
    if (v > hi) v = hi;
    if (v < lo) v = lo;
    y[i] = v;
  }
}

QOPT_VECTOR_CLONES
void addInPlace(float* y, const float* r, int64_t n, bool residualFirst) {
  if (residualFirst) {
    for (int64_t i = 0; i < n; ++i) y[i] = r[i] + y[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] + r[i];
  }
}

}  // namespace

QOPT_VECTOR_CLONES
void scaleShift(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

void batchNormCoefficients(const std::vector<float>& scale, const std::vector<float>& bias,
                           const std::vector<float>& mean, const std::vector<float>& var,
                           float epsilon, std::vector<float>& a, std::vector<float>& b) {
  a.resize(scale.size());
  b.resize(scale.size());
  for (size_t c = 0; c < scale.size(); ++c) {
    a[c] = scale[c] / std::sqrt(var[c] + epsilon);
    b[c] = bias[c] - mean[c] * a[c];
  }
}

void ConvEpilogue::apply(float* y, const float* residual, int64_t n, int64_t channel) const {
  // One pass per stage, in the nodes' order, over a row that is in L1 or L2.
  const auto c = static_cast<size_t>(channel);
  if (!scale.empty()) scaleShift(y, y, n, scale[c], shift[c]);
  if (addsResidual) addInPlace(y, residual, n, residualFirst);
  switch (activation.kind) {
    case Activation::Kind::None:
      break;
    case Activation::Kind::Relu:
      reluInPlace(y, n);
      break;
    case Activation::Kind::Clip:
      clipInPlace(y, n, activation.lo, activation.hi);
      break;
  }
}

}  // namespace qopt::interp
