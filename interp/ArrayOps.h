// Data movement shared by several kernels (Transpose, Slice, Expand, reductions over arbitrary
// axes, Einsum, .npy files in Fortran order). Element-type agnostic: copies words of the
// element's size (strings by value).
#pragma once

#include <cstdint>
#include <vector>

#include "ThreadPool.h"
#include "qopt/interp/Array.h"

namespace qopt::interp {

/// Row-major element strides of `shape`.
std::vector<int64_t> contiguousStrides(const Shape& shape);

/// out[index] = in[base + sum_d index[d] * strides[d]] for every index of out's shape. Strides
/// are in elements and may be 0 (broadcast) or negative (reversed); out must be allocated.
void stridedCopy(const Array& in, int64_t base, const std::vector<int64_t>& strides, Array& out,
                 ThreadPool* pool = nullptr);

/// out = a with its axes permuted: out.shape[i] = a.shape[perm[i]].
Array transposeArray(const Array& a, const std::vector<int64_t>& perm, ThreadPool* pool = nullptr);

/// A 16-byte element moved as one word.
struct Bytes16 {
  uint64_t lo, hi;
};

namespace detail {
template <class W, class... Rest, class F>
bool dispatchWordAmong(size_t bytes, F& run) {
  if (bytes == sizeof(W)) {
    run(static_cast<W*>(nullptr));
    return true;
  }
  if constexpr (sizeof...(Rest) > 0) {
    return dispatchWordAmong<Rest...>(bytes, run);
  } else {
    return false;
  }
}
}  // namespace detail

/// Calls `run(static_cast<W*>(nullptr))` with W an unsigned word of `bytes` bytes (1, 2, 4, 8 or
/// 16), for code that moves elements without looking at them. False for other sizes.
template <class F>
bool dispatchWord(size_t bytes, F&& run) {
  return detail::dispatchWordAmong<uint8_t, uint16_t, uint32_t, uint64_t, Bytes16>(bytes, run);
}

/// Copies `count` elements between arrays of the same type.
void copyElements(const Array& src, int64_t srcOffset, Array& dst, int64_t dstOffset,
                  int64_t count);

}  // namespace qopt::interp
