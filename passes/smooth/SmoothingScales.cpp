#include "SmoothingScales.h"

#include <algorithm>
#include <cmath>

#include "qopt/dense/DenseMath.h"

namespace qopt::smooth {
namespace {

constexpr double kLevels = 127.0;  // symmetric int8

// The symmetric int8 code QuantizeLinear gives x: round half to even, saturated to
// [-128, 127] (0 for a zero scale, whose DequantizeLinear gives 0 anyway).
double code(double x, double scale) {
  if (scale <= 0) return 0;
  return std::clamp(std::nearbyint(x / scale), -128.0, 127.0);
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
  const std::vector<double> x(rows.begin(), rows.end());
  std::vector<std::vector<double>> outputs;
  for (const WeightMatrix& w : weights) {
    std::vector<double> y(count * w.cols, 0.0);
    wq::dense::multiplyAdd(false, static_cast<int64_t>(count), static_cast<int64_t>(w.cols),
                           static_cast<int64_t>(k), 1.0, x.data(), static_cast<int64_t>(k),
                           w.values.data(), static_cast<int64_t>(w.cols), y.data(),
                           static_cast<int64_t>(w.cols));
    outputs.push_back(std::move(y));
  }
  return outputs;
}

// `error` plus the squared differences of Q(X / s) Q(diag(s) W) from `reference`. The product is
// taken on the integer codes, exact in double (each sum is at most 128 * 128 * k in magnitude,
// far below 2^53) whatever order BLAS sums in, and scaled afterwards: x scale times column c's.
double codeErrors(const std::vector<double>& xCodes, double xScale, size_t count, size_t k,
                  const std::vector<double>& wCodes, const std::vector<double>& wScales, size_t n,
                  const double* reference, double error) {
  std::vector<double> products(count * n, 0.0);
  wq::dense::multiplyAdd(false, static_cast<int64_t>(count), static_cast<int64_t>(n),
                         static_cast<int64_t>(k), 1.0, xCodes.data(), static_cast<int64_t>(k),
                         wCodes.data(), static_cast<int64_t>(n), products.data(),
                         static_cast<int64_t>(n));
  for (size_t r = 0; r < count; ++r) {
    const double* p = &products[r * n];
    const double* y = &reference[r * n];
    for (size_t c = 0; c < n; ++c) {
      const double d = xScale * wScales[c] * p[c] - y[c];
      error += d * d;
    }
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
  std::vector<double> xCodes(rows.size());
  for (size_t r = 0; r < count; ++r) {
    for (size_t j = 0; j < k; ++j) xCodes[r * k + j] = code(rows[r * k + j] / scales[j], xScale);
  }
  double error = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightMatrix& w = weights[i];
    const size_t n = w.cols;
    std::vector<double> wCodes(w.values.size()), wScales(n);
    for (size_t c = 0; c < n; ++c) {
      double wmax = 0;
      for (size_t j = 0; j < k; ++j)
        wmax = std::max(wmax, std::fabs(w.values[j * n + c]) * scales[j]);
      wScales[c] = wmax / kLevels;
      for (size_t j = 0; j < k; ++j)
        wCodes[j * n + c] = code(w.values[j * n + c] * scales[j], wScales[c]);
    }
    error = codeErrors(xCodes, xScale, count, k, wCodes, wScales, n, references[i].data(), error);
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
