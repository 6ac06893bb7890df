#include "Fft.h"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <utility>

#include "qopt/ir/Error.h"

namespace qopt::interp {

namespace {

// Far beyond any tensor that fits in memory; keeps the power-of-two rounding below from
// overflowing.
constexpr int64_t kMaxLength = int64_t{1} << 40;

bool isPowerOfTwo(int64_t n) {
  return (n & (n - 1)) == 0;
}

// The plain product: std::complex's operator* also calls a library routine to recover infinities
// from NaN results (C's Annex G), which costs more than the butterfly around it.
inline Complex mul(Complex a, Complex b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

}  // namespace

Fft::Fft(int64_t n, bool inverse) : n_(n), inverse_(inverse), bluestein_(!isPowerOfTwo(n)) {
  if (n < 1) throw Error(fmt::format("a DFT needs a length of at least 1, got {}", n));
  if (n > kMaxLength) throw Error(fmt::format("a DFT of length {} is too long", n));
  m_ = 1;
  // Bluestein's convolution has 2n - 1 nonzero taps and must not wrap around.
  while (m_ < (bluestein_ ? 2 * n - 1 : n)) m_ *= 2;

  twiddle_ = ComplexBuffer(m_ / 2);
  for (int64_t k = 0; k < m_ / 2; ++k) {
    // Each angle directly from k (no recurrence), so the error does not grow with k.
    double angle = -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m_);
    twiddle_.data()[k] = Complex(std::cos(angle), std::sin(angle));
  }
  if (!bluestein_) return;

  // jk = (j^2 + k^2 - (k - j)^2) / 2 turns the DFT into a convolution with a chirp. k^2 is
  // reduced modulo 2n (the chirp's period) incrementally, which keeps the angle small and exact.
  chirp_ = ComplexBuffer(n);
  double sign = inverse ? 1.0 : -1.0;
  int64_t square = 0;  // k^2 mod 2n
  for (int64_t k = 0; k < n; ++k) {
    if (k > 0) square = (square + 2 * k - 1) % (2 * n);
    double angle = sign * std::numbers::pi * static_cast<double>(square) / static_cast<double>(n);
    chirp_.data()[k] = Complex(std::cos(angle), std::sin(angle));
  }
  kernel_ = ComplexBuffer(m_);
  Complex* b = kernel_.data();
  for (int64_t k = 0; k < m_; ++k) b[k] = 0.0;
  b[0] = std::conj(chirp_.data()[0]);
  for (int64_t k = 1; k < n; ++k) b[k] = b[m_ - k] = std::conj(chirp_.data()[k]);
  radix2(b, false);
}

void Fft::radix2(Complex* a, bool inverse) const {
  // Bit-reversal permutation, then log2(m) butterfly passes.
  for (int64_t i = 1, j = 0; i < m_; ++i) {
    int64_t bit = m_ >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  const Complex* w = twiddle_.data();
  for (int64_t len = 2; len <= m_; len *= 2) {
    int64_t half = len / 2;
    int64_t step = m_ / len;
    for (int64_t start = 0; start < m_; start += len) {
      for (int64_t k = 0; k < half; ++k) {
        Complex t = inverse ? std::conj(w[k * step]) : w[k * step];
        Complex v = mul(a[start + k + half], t);
        Complex u = a[start + k];
        a[start + k] = u + v;
        a[start + k + half] = u - v;
      }
    }
  }
}

void Fft::run(Complex* data, Complex* work) const {
  if (!bluestein_) {
    radix2(data, inverse_);
    return;
  }
  const Complex* c = chirp_.data();
  for (int64_t k = 0; k < n_; ++k) work[k] = mul(data[k], c[k]);
  for (int64_t k = n_; k < m_; ++k) work[k] = 0.0;
  radix2(work, false);
  const Complex* b = kernel_.data();
  for (int64_t k = 0; k < m_; ++k) work[k] = mul(work[k], b[k]);
  radix2(work, true);
  double scale = 1.0 / static_cast<double>(m_);
  for (int64_t k = 0; k < n_; ++k) data[k] = mul(c[k], work[k]) * scale;
}

}  // namespace qopt::interp
