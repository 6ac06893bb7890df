// Dense matrix products for the interpreter's kernels. Float goes to oneDNN's sgemm and double to
// OpenBLAS (chosen by measurement, see bench/README.md), one library call per thread: the
// libraries run single-threaded and qopt's ThreadPool splits the work, so the interpreter's
// thread count is the only one that matters. Integer products are exact (see integerGemm).
#pragma once

#include <cstdint>

namespace qopt::interp {

class ThreadPool;

/// Row-major C = alpha * op(A) * op(B) + beta * C, with op(A) M x K and op(B) K x N. `lda`, `ldb`
/// and `ldc` are the row strides of A, B and C as stored. With `pool`, the columns (or rows) of C
/// are split across the pool's threads.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          ThreadPool* pool);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc,
          ThreadPool* pool);

/// The exact int32 product of zero-point-shifted integer matrices, as MatMulInteger, ConvInteger,
/// QLinearMatMul and QLinearConv define it:
///   C[i][j] = sum_k (A[i][k] - aZero[i]) * (B[k][j] - bZero[j])
/// A is M x K (row stride lda), B is K x N (row stride ldb), C is M x N (row stride ldc).
/// `aZero` has M entries (aZeroStride 1) or one (aZeroStride 0); `bZero` likewise with N.
/// Sums wrap modulo 2^32 as int32 arithmetic would.
template <class TA, class TB>
void integerGemm(int64_t m, int64_t n, int64_t k, const TA* a, int64_t lda, const TA* aZero,
                 int64_t aZeroStride, const TB* b, int64_t ldb, const TB* bZero,
                 int64_t bZeroStride, int32_t* c, int64_t ldc, ThreadPool* pool);

}  // namespace qopt::interp
