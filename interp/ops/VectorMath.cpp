#include "VectorMath.h"

#include <cmath>
#include <cstring>

// QOPT_HAVE_LIBMVEC: set by interp/CMakeLists.txt when glibc's libmvec (2.35+, with erff) links.
#if defined(QOPT_HAVE_LIBMVEC) && defined(__x86_64__)
#define QOPT_USE_LIBMVEC 1
#include <immintrin.h>
#endif

namespace qopt::interp {

#ifdef QOPT_USE_LIBMVEC

// libmvec's entry points in the x86-64 vector function ABI: 'b' SSE2 (4 lanes), 'd' AVX2
// (8 lanes), 'e' AVX-512 (16 lanes); each resolves to the best implementation for the CPU.
// (Declared with their ISA, so that every compiler passes the vectors in registers.)
extern "C" {
__m128 _ZGVbN4v_expf(__m128);
__m128 _ZGVbN4v_erff(__m128);
__attribute__((target("avx2,fma"))) __m256 _ZGVdN8v_expf(__m256);
__attribute__((target("avx2,fma"))) __m256 _ZGVdN8v_erff(__m256);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_expf(__m512);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_erff(__m512);
}

namespace {

enum class Function { Exp, Erf };

// Full vectors straight from the arrays; the tail through a zero-padded vector, so that every
// element takes the same routine. A macro rather than a lambda: the call must be compiled with
// the function's target ISA, or the vector argument would not be passed in a register as the
// vector function ABI requires.
#define QOPT_VECTOR_LOOP(LANES, LOAD, STORE, FN)                              \
  do {                                                                        \
    int64_t i = 0;                                                            \
    for (; i + (LANES) <= n; i += (LANES)) STORE(y + i, FN(LOAD(x + i)));     \
    if (i < n) {                                                              \
      /* Not on the stack: AddressSanitizer's fake frames are not aligned */  \
      /* for the AVX-512 spills of this function. */                          \
      alignas(64) thread_local float buffer[LANES];                           \
      std::memset(buffer, 0, sizeof(buffer));                                 \
      std::memcpy(buffer, x + i, static_cast<size_t>(n - i) * sizeof(float)); \
      STORE(buffer, FN(LOAD(buffer)));                                        \
      std::memcpy(y + i, buffer, static_cast<size_t>(n - i) * sizeof(float)); \
    }                                                                         \
  } while (false)

__attribute__((target("avx512f"))) void apply16(Function f, const float* x, float* y, int64_t n) {
  if (f == Function::Exp) {
    QOPT_VECTOR_LOOP(16, _mm512_loadu_ps, _mm512_storeu_ps, _ZGVeN16v_expf);
  } else {
    QOPT_VECTOR_LOOP(16, _mm512_loadu_ps, _mm512_storeu_ps, _ZGVeN16v_erff);
  }
}

__attribute__((target("avx2,fma"))) void apply8(Function f, const float* x, float* y, int64_t n) {
  if (f == Function::Exp) {
    QOPT_VECTOR_LOOP(8, _mm256_loadu_ps, _mm256_storeu_ps, _ZGVdN8v_expf);
  } else {
    QOPT_VECTOR_LOOP(8, _mm256_loadu_ps, _mm256_storeu_ps, _ZGVdN8v_erff);
  }
}

void apply4(Function f, const float* x, float* y, int64_t n) {
  if (f == Function::Exp) {
    QOPT_VECTOR_LOOP(4, _mm_loadu_ps, _mm_storeu_ps, _ZGVbN4v_expf);
  } else {
    QOPT_VECTOR_LOOP(4, _mm_loadu_ps, _mm_storeu_ps, _ZGVbN4v_erff);
  }
}

#undef QOPT_VECTOR_LOOP

void apply(Function f, const float* x, float* y, int64_t n) {
  static const int width = __builtin_cpu_supports("avx512f")                                 ? 16
                           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8
                                                                                             : 4;
  if (width == 16) {
    apply16(f, x, y, n);
  } else if (width == 8) {
    apply8(f, x, y, n);
  } else {
    apply4(f, x, y, n);
  }
}

}  // namespace

void expFloats(const float* x, float* y, int64_t n) {
  apply(Function::Exp, x, y, n);
}

void erfFloats(const float* x, float* y, int64_t n) {
  apply(Function::Erf, x, y, n);
}

#else

void expFloats(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void erfFloats(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
}

#endif

}  // namespace qopt::interp
