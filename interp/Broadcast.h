// Multidirectional (numpy-style) broadcasting with precomputed strides: kernels iterate rows of
// the collapsed output and see, per input, a base offset and an inner stride of 0 or 1.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "ThreadPool.h"
#include "qopt/interp/Array.h"

namespace qopt::interp {

/// The broadcast of `shapes` (throws qopt::Error naming both shapes when incompatible).
Shape broadcastShapes(std::span<const Shape* const> shapes);
Shape broadcastShapes(const Shape& a, const Shape& b);

class BroadcastLoop {
 public:
  /// `inputs`: the input shapes; `out`: their broadcast (or any shape they broadcast to).
  BroadcastLoop(std::span<const Shape* const> inputs, const Shape& out);

  int64_t numel() const { return numel_; }
  int64_t innerSize() const { return inner_; }
  int64_t rows() const { return rows_; }
  /// 1 when input k varies along the innermost collapsed dim, 0 when it is broadcast there.
  int64_t innerStride(size_t k) const { return innerStride_[k]; }

  /// Calls fn(outOffset, offsets) for rows [begin, end); offsets[k] is input k's element offset
  /// of the row's first element.
  template <class Fn>
  void forRows(int64_t begin, int64_t end, Fn&& fn) const {
    size_t n = innerStride_.size();
    size_t outer = dims_.size() - 1;
    std::vector<int64_t> index(outer, 0);
    std::vector<int64_t> offsets(n, 0);
    int64_t r = begin;
    for (size_t d = outer; d-- > 0;) {
      index[d] = r % dims_[d];
      r /= dims_[d];
      for (size_t k = 0; k < n; ++k) offsets[k] += index[d] * strides_[k][d];
    }
    for (int64_t row = begin; row < end; ++row) {
      fn(row * inner_, offsets.data());
      for (size_t d = outer; d-- > 0;) {
        for (size_t k = 0; k < n; ++k) offsets[k] += strides_[k][d];
        if (++index[d] < dims_[d]) break;
        for (size_t k = 0; k < n; ++k) offsets[k] -= strides_[k][d] * dims_[d];
        index[d] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> dims_;                  // collapsed output dims (last = inner)
  std::vector<std::vector<int64_t>> strides_;  // per input, per collapsed dim
  std::vector<int64_t> innerStride_;
  int64_t inner_ = 1;
  int64_t rows_ = 1;
  int64_t numel_ = 1;
};

// Inner loops of binaryBroadcast, one per stride pattern. Outputs are always fresh arrays, so
// the pointers never alias; saying so lets the compiler vectorize.
template <class A, class B, class O, class Op>
void rowBoth(const A* __restrict a, const B* __restrict b, O* __restrict o, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) o[i] = op(a[i], b[i]);
}
template <class A, class B, class O, class Op>
void rowScalarB(const A* __restrict a, B b, O* __restrict o, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) o[i] = op(a[i], b);
}
template <class A, class B, class O, class Op>
void rowScalarA(A a, const B* __restrict b, O* __restrict o, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) o[i] = op(a, b[i]);
}

/// out[i] = op(a[..], b[..]) over the broadcast of a and b; `o` has the broadcast shape.
template <class A, class B, class O, class Op>
void binaryBroadcast(const BroadcastLoop& loop, const A* a, const B* b, O* o, Op op,
                     ThreadPool* pool) {
  const int64_t n = loop.innerSize();
  const int64_t sa = loop.innerStride(0);
  const int64_t sb = loop.innerStride(1);
  auto row = [a, b, o, sa, sb, op](int64_t outOffset, const int64_t* offsets, int64_t i0,
                                   int64_t i1) {
    const A* pa = a + offsets[0];
    const B* pb = b + offsets[1];
    O* po = o + outOffset;
    int64_t count = i1 - i0;
    if (sa == 1 && sb == 1) {
      rowBoth(pa + i0, pb + i0, po + i0, count, op);
    } else if (sa == 1) {
      rowScalarB(pa + i0, pb[0], po + i0, count, op);
    } else if (sb == 1) {
      rowScalarA(pa[0], pb + i0, po + i0, count, op);
    } else {
      const O v = op(pa[0], pb[0]);
      std::fill(po + i0, po + i1, v);
    }
  };
  if (loop.rows() == 1) {
    int64_t zero[2] = {0, 0};
    parallelFor(pool, n, 1 << 15, [&](int64_t i0, int64_t i1) { row(0, zero, i0, i1); });
    return;
  }
  int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(n, 1));
  parallelFor(pool, loop.rows(), grain, [&](int64_t r0, int64_t r1) {
    loop.forRows(r0, r1, [&](int64_t off, const int64_t* offs) { row(off, offs, 0, n); });
  });
}

}  // namespace qopt::interp
