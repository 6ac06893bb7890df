// im2col: lays out the input windows of a range of output positions as the columns of a matrix,
// so that a convolution becomes one GEMM. Row r = (channel, kernel offset) of the window; column
// j = output position first + j. Positions in the padding take `padValue` (0 for float, the
// input zero point for quantized convolutions, so that padding contributes nothing).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "WindowGeometry.h"

namespace qopt::interp {

namespace im2col_detail {

/// Output positions o with 0 <= o * stride + offset < in, as [begin, end) clipped to [0, out).
inline void validRange(int64_t offset, int64_t stride, int64_t in, int64_t out, int64_t& begin,
                       int64_t& end) {
  // o * stride + offset >= 0  <=>  o >= ceil(-offset / stride)
  begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // o * stride + offset <= in - 1  <=>  o <= floor((in - 1 - offset) / stride)
  end = in - 1 - offset < 0 ? 0 : (in - 1 - offset) / stride + 1;
  begin = std::min(begin, out);
  end = std::clamp(end, begin, out);
}

template <class T>
void im2col2d(const T* x, int64_t channels, const WindowGeometry& g, int64_t first, int64_t count,
              T padValue, T* col) {
  const int64_t ih = g.input[0], iw = g.input[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1];
  const int64_t sh = g.strides[0], sw = g.strides[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1];
  const int64_t ph = g.padsBegin[0], pw = g.padsBegin[1];
  const int64_t ow = g.output[1];
  const int64_t oyFirst = first / ow;
  const int64_t oxFirst = first % ow;
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * ih * iw;
    for (int64_t ky = 0; ky < kh; ++ky) {
      for (int64_t kx = 0; kx < kw; ++kx) {
        T* dst = col + ((c * kh + ky) * kw + kx) * count;
        const int64_t xOffset = kx * dw - pw;
        int64_t oxBegin, oxEnd;
        validRange(xOffset, sw, iw, ow, oxBegin, oxEnd);
        int64_t j = 0;
        for (int64_t oy = oyFirst; j < count; ++oy) {
          const int64_t rowStart = oy == oyFirst ? oxFirst : 0;
          const int64_t rowEnd = std::min(ow, rowStart + (count - j));
          const int64_t iy = oy * sh - ph + ky * dh;
          if (iy < 0 || iy >= ih) {
            std::fill(dst + j, dst + j + (rowEnd - rowStart), padValue);
            j += rowEnd - rowStart;
            continue;
          }
          const T* xrow = xc + iy * iw + xOffset;
          const int64_t lo = std::clamp(oxBegin, rowStart, rowEnd);
          const int64_t hi = std::clamp(oxEnd, lo, rowEnd);
          for (int64_t ox = rowStart; ox < lo; ++ox) dst[j++] = padValue;
          if (sw == 1) {
            std::memcpy(dst + j, xrow + lo, static_cast<size_t>(hi - lo) * sizeof(T));
            j += hi - lo;
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) dst[j++] = xrow[ox * sw];
          }
          for (int64_t ox = hi; ox < rowEnd; ++ox) dst[j++] = padValue;
        }
      }
    }
  }
}

template <class T>
void im2colNd(const T* x, int64_t channels, const WindowGeometry& g, int64_t first, int64_t count,
              T padValue, T* col) {
  const size_t rank = static_cast<size_t>(g.spatialRank);
  const int64_t inputSize = g.inputSize();
  const int64_t kernelSize = g.kernelSize();
  std::vector<int64_t> k(rank), o(rank);
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(k.begin(), k.end(), 0);
    for (int64_t kidx = 0; kidx < kernelSize; ++kidx) {
      T* dst = col + (c * kernelSize + kidx) * count;
      int64_t rest = first;
      for (size_t a = rank; a-- > 0;) {
        o[a] = rest % g.output[a];
        rest /= g.output[a];
      }
      for (int64_t j = 0; j < count; ++j) {
        int64_t offset = 0;
        bool inside = true;
        for (size_t a = 0; a < rank; ++a) {
          const int64_t i = o[a] * g.strides[a] - g.padsBegin[a] + k[a] * g.dilations[a];
          inside = inside && i >= 0 && i < g.input[a];
          offset = offset * g.input[a] + i;
        }
        dst[j] = inside ? x[c * inputSize + offset] : padValue;
        for (size_t a = rank; a-- > 0;) {
          if (++o[a] < g.output[a]) break;
          o[a] = 0;
        }
      }
      for (size_t a = rank; a-- > 0;) {
        if (++k[a] < g.kernel[a]) break;
        k[a] = 0;
      }
    }
  }
}

}  // namespace im2col_detail

/// Fills col[(c * kernelSize + kernelOffset) * count + j] for output positions
/// [first, first + count) of one image (`x` points at its first channel).
template <class T>
void im2col(const T* x, int64_t channels, const WindowGeometry& g, int64_t first, int64_t count,
            T padValue, T* col) {
  if (g.spatialRank == 2) {
    im2col_detail::im2col2d(x, channels, g, first, count, padValue, col);
  } else {
    im2col_detail::im2colNd(x, channels, g, first, count, padValue, col);
  }
}

}  // namespace qopt::interp
