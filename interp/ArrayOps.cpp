#include "ArrayOps.h"

#include <fmt/format.h>

#include <cstring>

#include "qopt/ir/Error.h"

namespace qopt::interp {

std::vector<int64_t> contiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

void copyElements(const Array& src, int64_t srcOffset, Array& dst, int64_t dstOffset,
                  int64_t count) {
  if (count <= 0) return;
  if (src.dataType() == DataType::String) {
    const auto& in = src.strings();
    auto& out = dst.strings();
    std::copy_n(in.begin() + srcOffset, count, out.begin() + dstOffset);
    return;
  }
  size_t e = src.elementSize();
  std::memcpy(dst.bytes() + static_cast<size_t>(dstOffset) * e,
              src.bytes() + static_cast<size_t>(srcOffset) * e, static_cast<size_t>(count) * e);
}

namespace {

// Copies rows [rowBegin, rowEnd) of the collapsed output; T is an element-sized word.
template <class T>
void stridedRows(const T* in, int64_t base, T* out, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, int64_t rowBegin, int64_t rowEnd) {
  size_t rank = dims.size();
  int64_t inner = dims[rank - 1];
  int64_t innerStride = strides[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  int64_t offset = base;
  int64_t r = rowBegin;
  for (size_t d = rank - 1; d-- > 0;) {
    index[d] = r % dims[d];
    r /= dims[d];
    offset += index[d] * strides[d];
  }
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    T* o = out + row * inner;
    const T* p = in + offset;
    if (innerStride == 1) {
      std::memcpy(o, p, static_cast<size_t>(inner) * sizeof(T));
    } else if (innerStride == 0) {
      std::fill(o, o + inner, *p);
    } else {
      for (int64_t i = 0; i < inner; ++i) o[i] = p[i * innerStride];
    }
    for (size_t d = rank - 1; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace

void stridedCopy(const Array& in, int64_t base, const std::vector<int64_t>& strides, Array& out,
                 ThreadPool* pool) {
  const Shape& shape = out.shape();
  if (strides.size() != shape.size()) {
    throw Error(fmt::format("stridedCopy: {} strides for rank {}", strides.size(), shape.size()));
  }
  if (out.numel() == 0) return;
  // Collapse: drop unit dims, merge neighbours whose strides chain.
  std::vector<int64_t> dims, st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && st.back() == strides[d] * shape[d]) {
      dims.back() *= shape[d];
      st.back() = strides[d];
    } else {
      dims.push_back(shape[d]);
      st.push_back(strides[d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    st.push_back(1);
  }
  if (in.dataType() == DataType::String) {
    std::vector<int64_t> index(dims.size(), 0);
    auto& dst = out.strings();
    const auto& src = in.strings();
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t off = base;
      for (size_t d = 0; d < dims.size(); ++d) off += index[d] * st[d];
      dst[static_cast<size_t>(i)] = src[static_cast<size_t>(off)];
      for (size_t d = dims.size(); d-- > 0;) {
        if (++index[d] < dims[d]) break;
        index[d] = 0;
      }
    }
    return;
  }
  int64_t rows = out.numel() / dims.back();
  int64_t grain = std::max<int64_t>(1, (1 << 14) / dims.back());
  auto run = [&]<class T>(T*) {
    const T* src = reinterpret_cast<const T*>(in.bytes());
    T* dst = reinterpret_cast<T*>(out.bytes());
    parallelFor(pool, rows, grain,
                [&](int64_t r0, int64_t r1) { stridedRows(src, base, dst, dims, st, r0, r1); });
  };
  if (!dispatchWord(in.elementSize(), run)) {
    throw Error(fmt::format("cannot copy elements of {} bytes", in.elementSize()));
  }
}

Array transposeArray(const Array& a, const std::vector<int64_t>& perm, ThreadPool* pool) {
  int64_t rank = a.rank();
  if (static_cast<int64_t>(perm.size()) != rank) {
    throw Error(fmt::format("permutation [{}] does not match rank {}", fmt::join(perm, ","), rank));
  }
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      throw Error(fmt::format("[{}] is not a permutation of the axes of a rank {} tensor",
                              fmt::join(perm, ","), rank));
    }
    seen[static_cast<size_t>(p)] = 1;
  }
  std::vector<int64_t> inStrides = contiguousStrides(a.shape());
  Shape outShape(static_cast<size_t>(rank));
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i) {
    outShape[i] = a.shape()[static_cast<size_t>(perm[i])];
    strides[i] = inStrides[static_cast<size_t>(perm[i])];
    identity = identity && perm[i] == i;
  }
  if (identity) return a.reshaped(outShape);
  Array out(a.dataType(), outShape);
  stridedCopy(a, 0, strides, out, pool);
  return out;
}

}  // namespace qopt::interp
