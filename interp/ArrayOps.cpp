#include "ArrayOps.h"

#include <fmt/format.h>

#include <cstring>

#include "qopt/ir/Error.h"

namespace qopt::interp {

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

// Copies with the innermost output axis strided in the input; T is an element-sized word.
template <class T>
void transposeLoop(const T* in, T* out, const std::vector<int64_t>& outDims,
                   const std::vector<int64_t>& inStrides, int64_t rowBegin, int64_t rowEnd) {
  size_t rank = outDims.size();
  int64_t inner = outDims[rank - 1];
  int64_t innerStride = inStrides[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  int64_t offset = 0;
  int64_t r = rowBegin;
  for (size_t d = rank - 1; d-- > 0;) {
    index[d] = r % outDims[d];
    r /= outDims[d];
    offset += index[d] * inStrides[d];
  }
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    T* o = out + row * inner;
    const T* p = in + offset;
    if (innerStride == 1) {
      std::memcpy(o, p, static_cast<size_t>(inner) * sizeof(T));
    } else {
      for (int64_t i = 0; i < inner; ++i) o[i] = p[i * innerStride];
    }
    for (size_t d = rank - 1; d-- > 0;) {
      offset += inStrides[d];
      if (++index[d] < outDims[d]) break;
      offset -= inStrides[d] * outDims[d];
      index[d] = 0;
    }
  }
}

struct Bytes16 {
  uint64_t lo, hi;
};

}  // namespace

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
  Shape outShape(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) outShape[i] = a.shape()[static_cast<size_t>(perm[i])];
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i) identity = identity && perm[i] == i;
  if (identity) return a.reshaped(outShape);

  // Collapse: drop unit axes; merge output-adjacent axes that are adjacent in the input too.
  std::vector<int64_t> inStrideOf(static_cast<size_t>(rank), 1);
  for (int64_t d = rank - 2; d >= 0; --d) inStrideOf[d] = inStrideOf[d + 1] * a.shape()[d + 1];
  std::vector<int64_t> dims, strides, axes;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t axis = perm[i];
    int64_t size = a.shape()[static_cast<size_t>(axis)];
    if (size == 1) continue;
    if (!axes.empty() && axes.back() + 1 == axis) {
      dims.back() *= size;
      strides.back() = inStrideOf[axis];
    } else {
      dims.push_back(size);
      strides.push_back(inStrideOf[axis]);
    }
    axes.push_back(axis);
  }
  Array out(a.dataType(), outShape);
  if (out.numel() == 0) return out;
  if (dims.size() <= 1) {
    copyElements(a, 0, out, 0, a.numel());
    return out;
  }
  int64_t rows = out.numel() / dims.back();
  int64_t grain = std::max<int64_t>(1, (1 << 14) / dims.back());
  auto run = [&]<class T>(T*) {
    const T* in = reinterpret_cast<const T*>(a.bytes());
    T* o = reinterpret_cast<T*>(out.bytes());
    parallelFor(pool, rows, grain, [&](int64_t r0, int64_t r1) {
      transposeLoop(in, o, dims, strides, r0, r1);
    });
  };
  if (a.dataType() == DataType::String) {
    // Strings: index arithmetic through a permutation of element indices.
    std::vector<int64_t> index(dims.size(), 0);
    auto& dst = out.strings();
    const auto& src = a.strings();
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < dims.size(); ++d) off += index[d] * strides[d];
      dst[static_cast<size_t>(i)] = src[static_cast<size_t>(off)];
      for (size_t d = dims.size(); d-- > 0;) {
        if (++index[d] < dims[d]) break;
        index[d] = 0;
      }
    }
    return out;
  }
  switch (a.elementSize()) {
    case 1: run(static_cast<uint8_t*>(nullptr)); break;
    case 2: run(static_cast<uint16_t*>(nullptr)); break;
    case 4: run(static_cast<uint32_t*>(nullptr)); break;
    case 8: run(static_cast<uint64_t*>(nullptr)); break;
    case 16: run(static_cast<Bytes16*>(nullptr)); break;
    default:
      throw Error(fmt::format("cannot transpose elements of {} bytes", a.elementSize()));
  }
  return out;
}

}  // namespace qopt::interp
