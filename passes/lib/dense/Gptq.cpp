#include "qopt/dense/Gptq.h"

#include <algorithm>
#include <cmath>

#include "qopt/dense/DenseMath.h"

namespace qopt::wq {

namespace {

/// h[i][j] = h[j][i] below the diagonal, from the strict upper triangle (h symmetric).
void mirrorUpperToLower(std::vector<double>& h, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) h[i * n + j] = h[j * n + i];
  }
}

}  // namespace

std::optional<std::vector<double>> factorInPlace(std::vector<double>& h, int64_t k,
                                                 double dampening) {
  const auto n = static_cast<size_t>(k);
  std::vector<double> diagonal(n);
  double meanDiag = 0;
  for (size_t i = 0; i < n; ++i) {
    diagonal[i] = h[i * n + i];
    meanDiag += diagonal[i] == 0 ? 1.0 : diagonal[i];  // a channel that is always 0 counts 1
  }
  meanDiag /= static_cast<double>(std::max<size_t>(n, 1));
  // With P the reversal of the channel order, P H P = L L^T gives H^-1 = U^T U for the upper
  // triangular U = P L^-1 P: one factorization and one triangular inverse. Reversing the
  // row-major storage end to end is P H P; LAPACK writes L^-1 over the lower triangle only, so
  // the strict upper one keeps P H P's values, and after reversing back U lies in the upper
  // triangle and H's strict lower triangle is untouched.
  double damp = dampening;
  for (int attempt = 0; attempt < 3; ++attempt, damp *= 10) {
    std::reverse(h.begin(), h.end());
    for (size_t i = 0; i < n; ++i) {
      const double d = diagonal[n - 1 - i];
      h[i * n + i] = (d == 0 ? 1.0 : d) + damp * meanDiag;
    }
    const bool factored = dense::invertedCholeskyLower(h, k);
    if (!factored) mirrorUpperToLower(h, n);  // the failed factorization's partial writes
    std::reverse(h.begin(), h.end());
    if (factored) return diagonal;
    for (size_t i = 0; i < n; ++i) h[i * n + i] = diagonal[i];
  }
  return std::nullopt;
}

void restoreGram(std::vector<double>& h, int64_t k, const std::vector<double>& diagonal) {
  const auto n = static_cast<size_t>(k);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) h[i * n + j] = h[j * n + i];
    h[i * n + i] = diagonal[i];
  }
}

std::vector<double> inverseCholeskyUpper(std::vector<double> h, int64_t k, double dampening) {
  if (!factorInPlace(h, k, dampening)) return {};
  const auto n = static_cast<size_t>(k);
  for (size_t i = 1; i < n; ++i)
    std::fill_n(h.begin() + static_cast<std::ptrdiff_t>(i * n), i, 0.0);
  return h;
}

std::optional<BlockQuantized> quantizeGptq(const Matrix& w, const std::vector<double>& gram,
                                           const BlockScheme& scheme, std::string& why) {
  const auto k = static_cast<size_t>(w.rows);
  const auto n = static_cast<size_t>(w.cols);
  // U in a copy of H (the caller keeps H): GPTQ reads its upper triangle only.
  std::vector<double> u = gram;
  if (!factorInPlace(u, w.rows, kGptqDampening)) {
    why = "the activations' Gram matrix is not positive definite even with 100x the dampening";
    return std::nullopt;
  }
  Matrix work = w;
  BlockQuantized q = emptyBlockQuantized(w, scheme);
  std::vector<BlockParams> params(n);
  const auto block = static_cast<size_t>(scheme.blockSize);
  // The scaled errors of the block's rows, applied to the rows after the block in one sweep.
  std::vector<double> errors(block * n);
  for (size_t first = 0; first < k; first += block) {
    const size_t last = std::min(k, first + block);
    const auto b = static_cast<int64_t>(first / block);
    for (size_t c = 0; c < n; ++c) {
      params[c] = chooseBlockParams(work, static_cast<int64_t>(c), static_cast<int64_t>(first),
                                    static_cast<int64_t>(last), scheme);
      q.setParams(b, static_cast<int64_t>(c), params[c]);
    }
    for (size_t r = first; r < last; ++r) {
      double* row = work.values.data() + r * n;
      double* err = errors.data() + (r - first) * n;
      const double d = u[r * k + r];
      for (size_t c = 0; c < n; ++c) {
        const int8_t code = params[c].code(row[c]);
        q.codes[r * n + c] = code;
        err[c] = (row[c] - params[c].value(code)) / d;
      }
      // Within the block, the rows below take this row's error now: their rounding reads them.
      for (size_t j = r + 1; j < last; ++j) {
        const double f = u[r * k + j];
        if (f == 0) continue;
        double* target = work.values.data() + j * n;
        for (size_t c = 0; c < n; ++c) target[c] -= f * err[c];
      }
    }
    // The rows after the block: W[last:] -= U[first:last, last:]^T E.
    dense::multiplyAdd(true, static_cast<int64_t>(k - last), static_cast<int64_t>(n),
                       static_cast<int64_t>(last - first), -1.0, u.data() + first * k + last,
                       static_cast<int64_t>(k), errors.data(), static_cast<int64_t>(n),
                       work.values.data() + last * n, static_cast<int64_t>(n));
  }
  return q;
}

}  // namespace qopt::wq
