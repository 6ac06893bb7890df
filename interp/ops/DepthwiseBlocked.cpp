#include "DepthwiseBlocked.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "Epilogue.h"
#include "Lanes.h"
#include "ScratchBuffer.h"
#include "ThreadPool.h"
#include "VectorClones.h"

namespace qopt::interp {

namespace {

using lanes::kLanes;
using lanes::load;
using lanes::store;
using lanes::storeChannels;
using lanes::transpose;
using lanes::Vec;

// Output rows are computed in bands whose padded input rows take about this much buffer, so
// that the buffer stays in L2 between its filling and its use.
constexpr int64_t kBandBytes = int64_t{96} << 10;

struct Layout {
  int64_t paddedCols = 0;
  int64_t windowRows = 0;           // padded input rows one output row reads
  int64_t bandRows = 0;             // output rows per band
  int64_t bandInputRows = 0;        // padded input rows per band
  std::vector<int64_t> tapOffsets;  // per tap, in floats from the window's corner
};

Layout layoutOf(const WindowGeometry& g) {
  Layout l;
  l.paddedCols = std::max(g.input[1] + g.padsBegin[1], (g.output[1] - 1) * g.strides[1] +
                                                           (g.kernel[1] - 1) * g.dilations[1] + 1);
  l.windowRows = (g.kernel[0] - 1) * g.dilations[0] + 1;
  const int64_t rowBytes = l.paddedCols * kLanes * static_cast<int64_t>(sizeof(float));
  const int64_t fit = std::max<int64_t>(0, kBandBytes / rowBytes - l.windowRows);
  l.bandRows = std::clamp<int64_t>(fit / g.strides[0] + 1, 1, std::max<int64_t>(g.output[0], 1));
  l.bandInputRows = (l.bandRows - 1) * g.strides[0] + l.windowRows;
  for (int64_t ky = 0; ky < g.kernel[0]; ++ky) {
    for (int64_t kx = 0; kx < g.kernel[1]; ++kx) {
      l.tapOffsets.push_back((ky * g.dilations[0] * l.paddedCols + kx * g.dilations[1]) * kLanes);
    }
  }
  return l;
}

// One group of up to 16 output channels: the filters, and where each channel's input plane
// starts (null past the group's end).
struct Group {
  lanes::FilterLanes filters;
  const float* planes[kLanes];
};

// The padded input rows of output rows [oy0, oy1): zero padding around the interior, and the
// 16 planes' rows transposed into it. Local row r is padded row oy0 * stride + r.
[[gnu::always_inline]] inline void fillBand(const Group& grp, const WindowGeometry& g,
                                            const Layout& l, float* buf, int64_t oy0, int64_t oy1) {
  const int64_t ih = g.input[0], iw = g.input[1];
  const int64_t ph = g.padsBegin[0], pw = g.padsBegin[1];
  const int64_t cols = l.paddedCols;
  const int64_t first = oy0 * g.strides[0];  // first padded row
  const int64_t rows = (oy1 - 1 - oy0) * g.strides[0] + l.windowRows;
  const Vec zero = {};
  for (int64_t r = 0; r < rows; ++r) {
    float* row = buf + r * cols * kLanes;
    const int64_t iy = first + r - ph;
    if (iy < 0 || iy >= ih) {
      for (int64_t c = 0; c < cols; ++c) store(row + c * kLanes, zero);
      continue;
    }
    for (int64_t c = 0; c < pw; ++c) store(row + c * kLanes, zero);
    for (int64_t c = pw + iw; c < cols; ++c) store(row + c * kLanes, zero);
  }
  const int64_t iyBegin = std::clamp<int64_t>(first - ph, 0, ih);
  const int64_t iyEnd = std::clamp<int64_t>(first + rows - ph, 0, ih);
  const int64_t end = iyEnd * iw;
  static const float kZeros[kLanes] = {};
  float tail[kLanes][kLanes] = {};
  float discard[kLanes];
  int64_t iy = iyBegin, ix = 0;
  for (int64_t p0 = iyBegin * iw; p0 < end; p0 += kLanes) {
    const int64_t n = std::min(kLanes, end - p0);
    const float* src[kLanes];
    float* dst[kLanes];
    for (int64_t c = 0; c < kLanes; ++c) {
      if (c >= grp.filters.count) {
        src[c] = kZeros;
      } else if (n == kLanes) {
        src[c] = grp.planes[c] + p0;
      } else {
        std::memcpy(tail[c], grp.planes[c] + p0, static_cast<size_t>(n) * sizeof(float));
        src[c] = tail[c];
      }
    }
    for (int64_t i = 0; i < kLanes; ++i) {
      if (i >= n) {
        dst[i] = discard;
        continue;
      }
      dst[i] = buf + ((iy + ph - first) * cols + ix + pw) * kLanes;
      if (++ix == iw) {
        ix = 0;
        ++iy;
      }
    }
    transpose(src, dst);
  }
}

// Output pixels [q0, q1) (flattened) of the band starting at output row oy0, every tap with
// its own loads: any stride and dilation.
[[gnu::always_inline]] inline void depthwiseBand(const Group& grp, const WindowGeometry& g,
                                                 const Layout& l, const float* buf, int64_t q0,
                                                 int64_t q1, int64_t oy0) {
  const int64_t ow = g.output[1];
  const int64_t sh = g.strides[0], sw = g.strides[1];
  const int64_t taps = static_cast<int64_t>(l.tapOffsets.size());
  const int64_t* offsets = l.tapOffsets.data();
  const float* weights = grp.filters.weights.data();
  for (int64_t p0 = q0; p0 < q1; p0 += kLanes) {
    const int64_t n = std::min(kLanes, q1 - p0);
    const float* base[kLanes];
    lanes::windowStarts(base, buf, p0, n, ow, oy0, sh * l.paddedCols * kLanes, sw * kLanes);
    Vec acc[kLanes];
    lanes::multiplyAccumulate<false>(acc, base, grp.filters.bias, weights, offsets, taps,
                                     lanes::wideRegisters());
    storeChannels(acc, grp.filters, p0, n);
  }
}

// Output pixels x0 ... x0 + 7 of one output row, lanes [h, h + W) of the 16: the row's KW-wide
// kernel rows slide over input columns that each load once and serve the taps that read them
// (8 + KW - 1 loads per kernel row instead of 8 * KW). Each output still adds bias, then its
// taps row by row and, within a row, left to right: the sums of multiplyAccumulate, bit for
// bit. Horizontal stride and dilation 1; `row` is the padded input row of kernel row 0 at
// column x0.
template <int W, int KW>
[[gnu::always_inline]] inline void slideRows(Vec* acc, const float* row, int64_t rowStep,
                                             int64_t kernelRows, const float* weights,
                                             const float* bias, int64_t h) {
  using P = lanes::Part<W>;
  static_assert(sizeof(P) == W * sizeof(float));
  constexpr int kPixels = static_cast<int>(lanes::kInFlight);
  P part[kPixels];
  P b;
  std::memcpy(&b, bias + h, sizeof b);
#pragma GCC unroll 8
  for (int i = 0; i < kPixels; ++i) part[i] = b;
  for (int64_t ky = 0; ky < kernelRows; ++ky) {
    const float* in = row + ky * rowStep + h;
    P wk[KW];
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx)
      std::memcpy(&wk[kx], weights + (ky * KW + kx) * kLanes + h, sizeof(P));
#pragma GCC unroll 16
    for (int c = 0; c < kPixels + KW - 1; ++c) {
      P v;
      std::memcpy(&v, in + c * kLanes, sizeof v);
#pragma GCC unroll 8
      for (int kx = 0; kx < KW; ++kx) {
        const int i = c - kx;
        if (i >= 0 && i < kPixels) part[i] += wk[kx] * v;
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kPixels; ++i) {
    std::memcpy(reinterpret_cast<float*>(&acc[i]) + h, &part[i], sizeof(P));
  }
}

// The band's output rows [oy0, oy1) by slideRows, 16 pixels of a row at a time (fewer at the
// row's end).
template <int W, int KW>
[[gnu::always_inline]] inline void slideBand(const Group& grp, const WindowGeometry& g,
                                             const Layout& l, const float* buf, int64_t oy0,
                                             int64_t oy1) {
  const int64_t ow = g.output[1];
  const int64_t rowFloats = l.paddedCols * kLanes;
  const int64_t rowStep = g.dilations[0] * rowFloats;
  const float* weights = grp.filters.weights.data();
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const float* row = buf + (oy - oy0) * g.strides[0] * rowFloats;
    for (int64_t x0 = 0; x0 < ow; x0 += kLanes) {
      const int64_t n = std::min(kLanes, ow - x0);
      Vec acc[kLanes];
      // Pixels past n are transposed with the others and dropped: defined values, no work.
      if (n <= lanes::kInFlight) std::fill(acc + lanes::kInFlight, acc + kLanes, Vec{});
      for (int64_t i0 = 0; i0 < n; i0 += lanes::kInFlight) {
        for (int64_t h = 0; h < kLanes; h += W) {
          slideRows<W, KW>(acc + i0, row + (x0 + i0) * kLanes, rowStep, g.kernel[0], weights,
                           grp.filters.bias, h);
        }
      }
      storeChannels(acc, grp.filters, oy * ow + x0, n);
    }
  }
}

// Columns past a padded row's end that slideRows reads (into the next row, or the slack after
// the buffer), for outputs it discards.
constexpr int64_t kSlackColumns = lanes::kInFlight - 1;

// Which of the kernels above computes a group: slideBand<W, KW> for horizontal stride and
// dilation 1 and kernel widths 3 and 5 (W: AVX-512's 16 lanes, or 8), else depthwiseBand.
enum class Slide { None, W8K3, W8K5, W16K3, W16K5 };

Slide slideOf(const WindowGeometry& g) {
  if (g.strides[1] != 1 || g.dilations[1] != 1) return Slide::None;
  const bool wide = lanes::wideRegisters();
  switch (g.kernel[1]) {
    case 3:
      return wide ? Slide::W16K3 : Slide::W8K3;
    case 5:
      return wide ? Slide::W16K5 : Slide::W8K5;
    default:
      return Slide::None;
  }
}

QOPT_VECTOR_CLONES
void depthwiseGroup(const Group& grp, const WindowGeometry& g, const Layout& l, Slide slide,
                    float* buf) {
  const int64_t oh = g.output[0], ow = g.output[1];
  for (int64_t oy0 = 0; oy0 < oh; oy0 += l.bandRows) {
    const int64_t oy1 = std::min(oh, oy0 + l.bandRows);
    fillBand(grp, g, l, buf, oy0, oy1);
    switch (slide) {
      case Slide::None:
        depthwiseBand(grp, g, l, buf, oy0 * ow, oy1 * ow, oy0);
        break;
      case Slide::W8K3:
        slideBand<8, 3>(grp, g, l, buf, oy0, oy1);
        break;
      case Slide::W8K5:
        slideBand<8, 5>(grp, g, l, buf, oy0, oy1);
        break;
      case Slide::W16K3:
        slideBand<16, 3>(grp, g, l, buf, oy0, oy1);
        break;
      case Slide::W16K5:
        slideBand<16, 5>(grp, g, l, buf, oy0, oy1);
        break;
    }
  }
}

}  // namespace

bool depthwiseBlockedFits(const ConvShape& s, const WindowGeometry& g, int64_t maxBufferBytes) {
  if (g.spatialRank != 2 || s.groups != s.channels || s.filters % s.channels != 0) return false;
  const Layout l = layoutOf(g);
  return l.bandInputRows * l.paddedCols * kLanes * static_cast<int64_t>(sizeof(float)) <=
         maxBufferBytes;
}

void depthwiseBlocked(const float* x, const float* w, const float* bias, float* y,
                      const ConvShape& s, const WindowGeometry& g, ThreadPool* pool,
                      const ConvEpilogue* epilogue, const float* residual, bool columnReuse) {
  const Layout layout = layoutOf(g);
  const int64_t taps = g.kernelSize();
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const int64_t multiplier = s.filters / s.channels;
  const int64_t groupsPerImage = (s.filters + kLanes - 1) / kLanes;
  const Slide slide = columnReuse ? slideOf(g) : Slide::None;
  const int64_t bufferFloats = (layout.bandInputRows * layout.paddedCols + kSlackColumns) * kLanes;
  parallelFor(pool, s.batch * groupsPerImage, 1, [&](int64_t i0, int64_t i1) {
    float* buf = threadScratch<float>(bufferFloats);
    Group grp;
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t n = item / groupsPerImage;
      const int64_t m0 = (item % groupsPerImage) * kLanes;
      grp.filters.setFilters(w, taps, bias, epilogue, m0, s.filters);
      grp.filters.setOutputs(y, residual, n, m0, s.filters, outSize);
      for (int64_t c = 0; c < kLanes; ++c) {
        grp.planes[c] =
            c < grp.filters.count ? x + (n * s.channels + (m0 + c) / multiplier) * inSize : nullptr;
      }
      depthwiseGroup(grp, g, layout, slide, buf);
    }
  });
}

}  // namespace qopt::interp
