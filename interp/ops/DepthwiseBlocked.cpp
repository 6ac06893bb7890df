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
  int64_t iy = iyBegin, ix = 0;
  for (int64_t p0 = iyBegin * iw; p0 < end; p0 += kLanes) {
    const int64_t n = std::min(kLanes, end - p0);
    Vec rowsOf[kLanes];
    for (int64_t c = 0; c < kLanes; ++c) {
      if (c >= grp.filters.count) {
        rowsOf[c] = zero;
      } else if (n == kLanes) {
        load(rowsOf[c], grp.planes[c] + p0);
      } else {
        float tail[kLanes] = {};
        std::memcpy(tail, grp.planes[c] + p0, static_cast<size_t>(n) * sizeof(float));
        load(rowsOf[c], tail);
      }
    }
    transpose(rowsOf);
    for (int64_t i = 0; i < n; ++i) {
      store(buf + ((iy + ph - first) * cols + ix + pw) * kLanes, rowsOf[i]);
      if (++ix == iw) {
        ix = 0;
        ++iy;
      }
    }
  }
}

// Output pixels [q0, q1) (flattened) of the band starting at output row oy0.
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
    lanes::multiplyAccumulate<false>(acc, base, grp.filters.bias, weights, offsets, taps);
    storeChannels(acc, grp.filters, p0, n);
  }
}

QOPT_VECTOR_CLONES
void depthwiseGroup(const Group& grp, const WindowGeometry& g, const Layout& l, float* buf) {
  const int64_t oh = g.output[0], ow = g.output[1];
  for (int64_t oy0 = 0; oy0 < oh; oy0 += l.bandRows) {
    const int64_t oy1 = std::min(oh, oy0 + l.bandRows);
    fillBand(grp, g, l, buf, oy0, oy1);
    depthwiseBand(grp, g, l, buf, oy0 * ow, oy1 * ow, oy0);
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
                      const ConvEpilogue* epilogue, const float* residual) {
  const Layout layout = layoutOf(g);
  const int64_t taps = g.kernelSize();
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const int64_t multiplier = s.filters / s.channels;
  const int64_t groupsPerImage = (s.filters + kLanes - 1) / kLanes;
  const int64_t bufferFloats = layout.bandInputRows * layout.paddedCols * kLanes;
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
      depthwiseGroup(grp, g, layout, buf);
    }
  });
}

}  // namespace qopt::interp
