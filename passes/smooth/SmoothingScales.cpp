#include "SmoothingScales.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QOPT_SMOOTH_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define QOPT_SMOOTH_CLONES
#endif

namespace qopt::smooth {
namespace {

constexpr double kLevels = 127.0;  // symmetric int8

// Symmetric fake quantization as QuantizeLinear/DequantizeLinear compute it: round half to
// even, saturate to [-128, 127].
double fakeQuantize(double x, double scale) {
  if (scale <= 0) return 0;
  double q = std::nearbyint(x / scale);
  return std::clamp(q, -128.0, 127.0) * scale;
}

}  // namespace

std::vector<double> smoothingScales(std::span<const double> actMax,
                                    std::span<const double> weightMax, double alpha) {
  std::vector<double> s(actMax.size(), 1.0);
  for (size_t j = 0; j < s.size(); ++j) {
    if (actMax[j] > 0 && weightMax[j] > 0) {
      s[j] = std::pow(actMax[j], alpha) / std::pow(weightMax[j], 1.0 - alpha);
    }
  }
  return s;
}

std::vector<double> rowAbsMax(std::span<const WeightMatrix> weights) {
  std::vector<double> result(weights.empty() ? 0 : weights[0].rows, 0.0);
  for (const WeightMatrix& w : weights) {
    for (size_t j = 0; j < w.rows; ++j) {
      for (size_t n = 0; n < w.cols; ++n) {
        result[j] = std::max(result[j], std::fabs(w.values[j * w.cols + n]));
      }
    }
  }
  return result;
}

namespace {

// X W for each weight: the float outputs every scale choice is compared with.
std::vector<std::vector<double>> floatOutputs(std::span<const float> rows, size_t k,
                                              std::span<const WeightMatrix> weights) {
  const size_t count = k == 0 ? 0 : rows.size() / k;
  std::vector<std::vector<double>> outputs;
  for (const WeightMatrix& w : weights) {
    const size_t n = w.cols;
    std::vector<double> y(count * n, 0.0);
    for (size_t r = 0; r < count; ++r) {
      double* yr = &y[r * n];
      for (size_t j = 0; j < k; ++j) {
        const double a = rows[r * k + j];
        const double* wr = &w.values[j * n];
        for (size_t c = 0; c < n; ++c) yr[c] += a * wr[c];
      }
    }
    outputs.push_back(std::move(y));
  }
  return outputs;
}

// `error` plus the squared differences of the quantized activations times the quantized weights,
// row by row, from `reference`.
QOPT_SMOOTH_CLONES double rowErrors(const double* xq, size_t count, size_t k, const double* wq,
                                    size_t n, const double* reference, double* yq, double error) {
  for (size_t r = 0; r < count; ++r) {
    std::fill(yq, yq + n, 0.0);
    for (size_t j = 0; j < k; ++j) {
      const double aq = xq[r * k + j];
      const double* wqr = &wq[j * n];
      for (size_t c = 0; c < n; ++c) yq[c] += aq * wqr[c];
    }
    const double* y = &reference[r * n];
    for (size_t c = 0; c < n; ++c) error += (yq[c] - y[c]) * (yq[c] - y[c]);
  }
  return error;
}

double quantizedErrorAgainst(std::span<const float> rows, std::span<const double> actMax,
                             std::span<const WeightMatrix> weights, std::span<const double> scales,
                             const std::vector<std::vector<double>>& references) {
  const size_t k = actMax.size();
  if (k == 0) return 0;
  const size_t count = rows.size() / k;
  double amax = 0;
  for (size_t j = 0; j < k; ++j) amax = std::max(amax, actMax[j] / scales[j]);
  const double xScale = amax / kLevels;
  std::vector<double> xq(rows.size());
  for (size_t r = 0; r < count; ++r) {
    for (size_t j = 0; j < k; ++j) {
      xq[r * k + j] = fakeQuantize(rows[r * k + j] / scales[j], xScale);
    }
  }
  double error = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightMatrix& w = weights[i];
    const size_t n = w.cols;
    std::vector<double> wq(w.values.size());
    for (size_t c = 0; c < n; ++c) {
      double wmax = 0;
      for (size_t j = 0; j < k; ++j)
        wmax = std::max(wmax, std::fabs(w.values[j * n + c]) * scales[j]);
      double wScale = wmax / kLevels;
      for (size_t j = 0; j < k; ++j)
        wq[j * n + c] = fakeQuantize(w.values[j * n + c] * scales[j], wScale);
    }
    std::vector<double> yq(n);
    error = rowErrors(xq.data(), count, k, wq.data(), n, references[i].data(), yq.data(), error);
  }
  return error;
}

}  // namespace

double quantizedError(std::span<const float> rows, std::span<const double> actMax,
                      std::span<const WeightMatrix> weights, std::span<const double> scales) {
  return quantizedErrorAgainst(rows, actMax, weights, scales,
                               floatOutputs(rows, actMax.size(), weights));
}

AlphaChoice searchAlpha(std::span<const float> rows, std::span<const double> actMax,
                        std::span<const WeightMatrix> weights) {
  std::vector<double> weightMax = rowAbsMax(weights);
  std::vector<double> ones(actMax.size(), 1.0);
  AlphaChoice best;
  const std::vector<std::vector<double>> references = floatOutputs(rows, actMax.size(), weights);
  best.unsmoothedError = quantizedErrorAgainst(rows, actMax, weights, ones, references);
  bool first = true;
  for (int step = 0; step <= 20; ++step) {
    double alpha = step * 0.05;
    std::vector<double> s = smoothingScales(actMax, weightMax, alpha);
    double error = quantizedErrorAgainst(rows, actMax, weights, s, references);
    if (first || error < best.error) {
      best.alpha = alpha;
      best.error = error;
      first = false;
    }
  }
  return best;
}

}  // namespace qopt::smooth
