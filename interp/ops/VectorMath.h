// exp and erf over float arrays through glibc's vector math library (libmvec), which computes
// 16 (AVX-512), 8 (AVX2) or 4 (SSE2) lanes per call: the transformer's GELU and Softmax spent a
// quarter of their time in one scalar libm call per element. libmvec's results are within a few
// ulp of libm's (tests bound it); every element goes through the same vector routine, whatever
// its position, so a value always gives the same result on a given machine.
#pragma once

#include <cstdint>

namespace qopt::interp {

/// y[i] = exp(x[i]); `x` may equal `y`.
void expFloats(const float* x, float* y, int64_t n);
/// y[i] = erf(x[i]); `x` may equal `y`.
void erfFloats(const float* x, float* y, int64_t n);

}  // namespace qopt::interp
