// Data movement shared by several kernels (Transpose, reductions over arbitrary axes, Einsum,
// .npy files in Fortran order).
#pragma once

#include <cstdint>
#include <vector>

#include "ThreadPool.h"
#include "qopt/interp/Array.h"

namespace qopt::interp {

/// out = a with its axes permuted: out.shape[i] = a.shape[perm[i]]. Any element type.
Array transposeArray(const Array& a, const std::vector<int64_t>& perm, ThreadPool* pool = nullptr);

/// Copies `count` elements of `elementSize` bytes (strings by value) between arrays.
void copyElements(const Array& src, int64_t srcOffset, Array& dst, int64_t dstOffset, int64_t count);

}  // namespace qopt::interp
