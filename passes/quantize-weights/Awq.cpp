#include "Awq.h"

#include <algorithm>
#include <cmath>

namespace qopt::wq {
namespace {

// The Gram matrix G = X^T X (K x K): the squared output error of a weight error D is
// sum_n d_n^T G d_n, so each grid point costs K^2 N instead of rows * K * N.
std::vector<double> gram(const ActivationRows& x) {
  const auto k = static_cast<size_t>(x.k);
  std::vector<double> g(k * k, 0.0);
  const int64_t rows = x.rows();
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.values.data() + static_cast<size_t>(r) * k;
    for (size_t i = 0; i < k; ++i) {
      if (row[i] == 0) continue;
      double* gi = g.data() + i * k;
      for (size_t j = i; j < k; ++j) gi[j] += row[i] * row[j];
    }
  }
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < i; ++j) g[i * k + j] = g[j * k + i];
  }
  return g;
}

// sum_n d_n^T G d_n for the K x N matrix d.
double quadraticError(const std::vector<double>& g, const Matrix& d) {
  const auto k = static_cast<size_t>(d.rows);
  const auto n = static_cast<size_t>(d.cols);
  // (G D) row by row, dotted with D's rows.
  std::vector<double> gd(n);
  double total = 0;
  for (size_t i = 0; i < k; ++i) {
    std::fill(gd.begin(), gd.end(), 0.0);
    for (size_t j = 0; j < k; ++j) {
      const double gij = g[i * k + j];
      if (gij == 0) continue;
      const double* dj = d.values.data() + j * n;
      for (size_t c = 0; c < n; ++c) gd[c] += gij * dj[c];
    }
    const double* di = d.values.data() + i * n;
    for (size_t c = 0; c < n; ++c) total += di[c] * gd[c];
  }
  return total;
}

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
  const std::vector<double> g = gram(x);

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
