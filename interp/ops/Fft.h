// A complex discrete Fourier transform of any length in double precision, for the signal kernels
// (ops/signal.cpp): radix-2 for powers of two, Bluestein's chirp-z transform (through a power of
// two) otherwise, so that every length costs O(n log n) rather than the naive O(n^2).
#pragma once

#include <complex>
#include <cstdint>

#include "qopt/interp/Array.h"

namespace qopt::interp {

using Complex = std::complex<double>;

/// Complex doubles stored in an Array, so that the interpreter's allocation limit covers the
/// transform's tables and scratch as it covers tensors.
class ComplexBuffer {
 public:
  ComplexBuffer() = default;
  explicit ComplexBuffer(int64_t count) : storage_(DataType::Double, {count, 2}) {}
  // std::complex<double> is specified to be layout-compatible with double[2].
  Complex* data() { return reinterpret_cast<Complex*>(storage_.data<double>()); }
  const Complex* data() const { return reinterpret_cast<const Complex*>(storage_.data<double>()); }
  int64_t size() const { return storage_.numel() / 2; }

 private:
  Array storage_;
};

/// The DFT of one length and direction, planned once and applied to many signals:
/// forward X[k] = sum_j x[j] e^{-2 pi i jk/n}; inverse uses e^{+2 pi i jk/n} and is not divided
/// by n (the caller scales). Immutable after construction: threads may share one plan, each
/// with its own work buffer.
class Fft {
 public:
  /// Throws qopt::Error when n < 1 or the tables would exceed the allocation limit.
  Fft(int64_t n, bool inverse);

  int64_t size() const { return n_; }
  /// Complex values of scratch that run() needs besides the data (0 for powers of two).
  int64_t workSize() const { return bluestein_ ? m_ : 0; }
  /// Transforms data[0, n) in place; `work` holds workSize() values (may be null when 0).
  void run(Complex* data, Complex* work) const;

 private:
  /// In-place radix-2 transform of length m_ (a power of two) in the given direction.
  void radix2(Complex* data, bool inverse) const;

  int64_t n_;
  bool inverse_;
  bool bluestein_;
  int64_t m_;              // the power-of-two length the radix-2 passes run at
  ComplexBuffer twiddle_;  // e^{-2 pi i k/m}, k < m/2
  ComplexBuffer chirp_;    // Bluestein: e^{-+ pi i k^2/n}, k < n
  ComplexBuffer kernel_;   // Bluestein: the forward transform of the conjugate chirp, length m
};

}  // namespace qopt::interp
