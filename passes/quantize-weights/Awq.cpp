#include "Awq.h"

#include <algorithm>
#include <cmath>

#include "qopt/dense/DenseMath.h"

namespace qopt::wq {
namespace {

// The output error of quantizing w with input-channel scales s (s empty: none).
double outputError(const std::vector<double>& g, const Matrix& w, const std::vector<double>& s,
                   const BlockScheme& scheme) {
  Matrix scaled = s.empty() ? w : scaleRows(w, s);
  Matrix back = dequantize(quantizeBlockwise(scaled, scheme));
  for (int64_t k = 0; k < w.rows; ++k) {
    const double inv = s.empty() ? 1.0 : 1.0 / s[static_cast<size_t>(k)];
    for (int64_t n = 0; n < w.cols; ++n) back.at(k, n) = back.at(k, n) * inv - w.at(k, n);
  }
  return quadraticError(g, back);
}

}  // namespace

std::vector<double> gramMatrix(const ActivationRows& x) {
  return dense::gram(x.values.data(), x.rows(), x.k);
}

double quadraticError(const std::vector<double>& g, const Matrix& d) {
  // G D (K x N), then its entries dotted with D's.
  std::vector<double> gd(d.values.size(), 0.0);
  dense::multiplyAdd(false, d.rows, d.cols, d.rows, 1.0, g.data(), d.rows, d.values.data(), d.cols,
                     gd.data(), d.cols);
  double total = 0;
  for (size_t i = 0; i < gd.size(); ++i) total += gd[i] * d.values[i];
  return total;
}

Matrix scaleRows(const Matrix& w, const std::vector<double>& s) {
  Matrix out = w;
  for (int64_t k = 0; k < w.rows; ++k) {
    for (int64_t n = 0; n < w.cols; ++n) out.at(k, n) *= s[static_cast<size_t>(k)];
  }
  return out;
}

AwqChoice searchAwqScales(const ActivationRows& x, const std::vector<const Matrix*>& weights,
                          const BlockScheme& scheme) {
  const auto k = static_cast<size_t>(x.k);
  std::vector<double> meanAbs(k, 0.0);
  const int64_t rows = x.rows();
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < k; ++i)
      meanAbs[i] += std::fabs(x.values[static_cast<size_t>(r) * k + i]);
  }
  for (double& m : meanAbs) m = rows > 0 ? m / static_cast<double>(rows) : 0.0;
  const std::vector<double> g = gramMatrix(x);

  AwqChoice best;
  for (const Matrix* w : weights) {
    best.rtnError += outputError(g, *w, {}, scheme);
    // |X W|^2 is the error of the all-zero weight against W.
    Matrix negated = *w;
    for (double& v : negated.values) v = -v;
    best.referenceEnergy += quadraticError(g, negated);
  }
  best.bestError = best.rtnError;
  best.scales.assign(k, 1.0);
  for (int step = 1; step < kAwqGridPoints; ++step) {
    const double alpha = static_cast<double>(step) / (kAwqGridPoints - 1);
    std::vector<double> s(k);
    double lo = 0, hi = 0;
    for (size_t i = 0; i < k; ++i) {
      // A channel that is always 0 gets the floor AWQ uses, not a zero scale.
      s[i] = std::max(std::pow(meanAbs[i], alpha), 1e-4);
      lo = i == 0 ? s[i] : std::min(lo, s[i]);
      hi = std::max(hi, s[i]);
    }
    const double norm = std::sqrt(lo * hi);
    for (double& v : s) v /= norm;
    double error = 0;
    for (const Matrix* w : weights) error += outputError(g, *w, s, scheme);
    if (error < best.bestError) {
      best.bestError = error;
      best.alpha = alpha;
      best.scales = s;
    }
  }
  return best;
}

}  // namespace qopt::wq
