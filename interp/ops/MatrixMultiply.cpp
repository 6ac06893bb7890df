#include "MatrixMultiply.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <Eigen/Core>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "ThreadPool.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {

namespace {

// Below this many multiply-adds a product is not worth handing to other threads.
constexpr int64_t kParallelWork = int64_t{1} << 18;

int threadsOf(ThreadPool* pool) {
  return pool == nullptr ? 1 : pool->size();
}

// oneDNN (built on OpenMP) would otherwise start its own threads inside every call, on top of
// qopt's pool: it follows the calling thread's OpenMP thread count, so every thread that
// multiplies sets its own to 1 once.
void useSingleThreadedBlas() {
  thread_local const bool ompSingle = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)ompSingle;
}

// Float products use oneDNN's sgemm, 10-20% faster than OpenBLAS's on the convolution shapes
// measured in bench/README.md; double products use Eigen's (oneDNN has no dgemm). Not OpenBLAS:
// its pthread build starts a thread per core when it is loaded, which then spins on
// sched_yield for about a second, taking a core from the interpreter's own threads.
void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const dnnl_status_t status =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    throw Error(ErrorKind::Internal, {}, {},
                "oneDNN sgemm failed with status " + std::to_string(static_cast<int>(status)));
  }
}

void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
              int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  const Eigen::Map<const Matrix, 0, Stride> ma(a, ta ? k : m, ta ? m : k, Stride(lda));
  const Eigen::Map<const Matrix, 0, Stride> mb(b, tb ? n : k, tb ? k : n, Stride(ldb));
  Eigen::Map<Matrix, 0, Stride> mc(c, m, n, Stride(ldc));
  // As BLAS: with beta 0, C is written without being read (NaN there does not propagate).
  auto product = [&](const auto& opA, const auto& opB) {
    if (beta == 0.0) {
      mc.noalias() = alpha * (opA * opB);
    } else {
      mc *= beta;
      mc.noalias() += alpha * (opA * opB);
    }
  };
  if (ta && tb) {
    product(ma.transpose(), mb.transpose());
  } else if (ta) {
    product(ma.transpose(), mb);
  } else if (tb) {
    product(ma, mb.transpose());
  } else {
    product(ma, mb);
  }
}

template <class T>
void gemmImpl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
              const T* b, int64_t ldb, T beta, T* c, int64_t ldc, ThreadPool* pool) {
  if (m <= 0 || n <= 0) return;
  useSingleThreadedBlas();
  if (k == 0) {
    // BLAS leaves C untouched when k == 0 only if beta == 1; do the scaling ourselves.
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    }
    return;
  }
  const int threads = threadsOf(pool);
  if (threads <= 1 || m * n * k < kParallelWork) {
    blasGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Split C into one block of columns (or rows, when C is tall) per thread, aligned to 16 so
  // that each block keeps whole SIMD panels.
  const bool byColumns = n >= m;
  const int64_t extent = byColumns ? n : m;
  const int64_t block = std::max<int64_t>(16, (extent / threads + 15) / 16 * 16);
  const int64_t blocks = (extent + block - 1) / block;
  parallelFor(pool, blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t blk = first; blk < last; ++blk) {
      const int64_t begin = blk * block;
      const int64_t size = std::min(block, extent - begin);
      if (byColumns) {
        const T* bPart = tb ? b + begin * ldb : b + begin;
        blasGemm(ta, tb, m, size, k, alpha, a, lda, bPart, ldb, beta, c + begin, ldc);
      } else {
        const T* aPart = ta ? a + begin : a + begin * lda;
        blasGemm(ta, tb, size, n, k, alpha, aPart, lda, b, ldb, beta, c + begin * ldc, ldc);
      }
    }
  });
}

// int32 wrap-around of an exact integer sum.
int32_t wrapToInt32(int64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}

template <class TA, class TB>
void integerGemmDirect(int64_t m, int64_t n, int64_t k, const TA* a, int64_t lda, const TA* aZero,
                       int64_t aZeroStride, const TB* b, int64_t ldb, const TB* bZero,
                       int64_t bZeroStride, int32_t* c, int64_t ldc) {
  std::vector<int32_t> bShift(static_cast<size_t>(k * n));
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      bShift[static_cast<size_t>(p * n + j)] =
          int32_t{b[p * ldb + j]} - int32_t{bZero[j * bZeroStride]};
    }
  }
  std::vector<int64_t> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0);
    const int32_t za = aZero[i * aZeroStride];
    for (int64_t p = 0; p < k; ++p) {
      const int64_t av = int32_t{a[i * lda + p]} - za;
      const int32_t* bp = bShift.data() + p * n;
      for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] += av * bp[j];
    }
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = wrapToInt32(row[static_cast<size_t>(j)]);
  }
}

}  // namespace

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          ThreadPool* pool) {
  gemmImpl(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pool);
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc,
          ThreadPool* pool) {
  gemmImpl(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pool);
}

template <class TA, class TB>
void integerGemm(int64_t m, int64_t n, int64_t k, const TA* a, int64_t lda, const TA* aZero,
                 int64_t aZeroStride, const TB* b, int64_t ldb, const TB* bZero,
                 int64_t bZeroStride, int32_t* c, int64_t ldc, ThreadPool* pool) {
  static_assert(sizeof(TA) == 1 && sizeof(TB) == 1, "8-bit operands only");
  if (m <= 0 || n <= 0) return;
  if (m * n * k < kParallelWork / 4) {
    integerGemmDirect(m, n, k, a, lda, aZero, aZeroStride, b, ldb, bZero, bZeroStride, c, ldc);
    return;
  }
  // Shifted 8-bit operands are at most 255 in magnitude, so every partial sum is an integer far
  // below 2^53: a double GEMM computes the products exactly, whatever its summation order, and
  // runs at BLAS speed.
  std::vector<double> ad(static_cast<size_t>(m * k)), bd(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < m; ++i) {
    const int32_t za = aZero[i * aZeroStride];
    for (int64_t p = 0; p < k; ++p) {
      ad[static_cast<size_t>(i * k + p)] = static_cast<double>(int32_t{a[i * lda + p]} - za);
    }
  }
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      bd[static_cast<size_t>(p * n + j)] =
          static_cast<double>(int32_t{b[p * ldb + j]} - int32_t{bZero[j * bZeroStride]});
    }
  }
  std::vector<double> cd(static_cast<size_t>(m * n));
  gemm(false, false, m, n, k, 1.0, ad.data(), k, bd.data(), n, 0.0, cd.data(), n, pool);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      c[i * ldc + j] = wrapToInt32(static_cast<int64_t>(cd[static_cast<size_t>(i * n + j)]));
    }
  }
}

#define QOPT_INSTANTIATE_INTEGER_GEMM(TA, TB)                                                  \
  template void integerGemm<TA, TB>(int64_t, int64_t, int64_t, const TA*, int64_t, const TA*,  \
                                    int64_t, const TB*, int64_t, const TB*, int64_t, int32_t*, \
                                    int64_t, ThreadPool*);
QOPT_INSTANTIATE_INTEGER_GEMM(uint8_t, uint8_t)
QOPT_INSTANTIATE_INTEGER_GEMM(uint8_t, int8_t)
QOPT_INSTANTIATE_INTEGER_GEMM(int8_t, uint8_t)
QOPT_INSTANTIATE_INTEGER_GEMM(int8_t, int8_t)
#undef QOPT_INSTANTIATE_INTEGER_GEMM

}  // namespace qopt::interp
