#include "Epilogue.h"

#include <cmath>

#include "VectorClones.h"

namespace qopt::interp {

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

namespace {

QOPT_VECTOR_CLONES
void applyInPlace(const ChannelEpilogue& e, float* y, const float* residual, int64_t n) {
  applyChannelEpilogue(e, y, y, residual, n);
}

}  // namespace

void ConvEpilogue::apply(float* y, const float* residual, int64_t n, int64_t channel) const {
  // All stages in one pass over a row that is in L1 or L2.
  applyInPlace(forChannel(channel), y, residual, n);
}

ChannelEpilogue ConvEpilogue::forChannel(int64_t channel) const {
  ChannelEpilogue e;
  const auto c = static_cast<size_t>(channel);
  e.affine = !scale.empty();
  if (e.affine) {
    e.a = scale[c];
    e.b = shift[c];
  }
  e.scaled = !before.identity() || !after.identity();
  e.before = before;
  e.after = after;
  e.addsResidual = addsResidual;
  e.residualFirst = residualFirst;
  e.activation = activation;
  e.fakeQuant = fakeQuant;
  return e;
}

}  // namespace qopt::interp
