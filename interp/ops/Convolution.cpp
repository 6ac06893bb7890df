#include "Convolution.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "DepthwiseBlocked.h"
#include "DirectBlocked.h"
#include "Epilogue.h"
#include "Im2col.h"
#include "MatrixMultiply.h"
#include "ScratchBuffer.h"
#include "ThreadPool.h"
#include "VectorClones.h"

namespace qopt::interp {

namespace {

// im2col buffers are sized to stay within L2-ish sizes; smaller tiles cost GEMM efficiency.
constexpr int64_t kColumnBufferBytes = int64_t{1} << 20;
constexpr int64_t kMinTile = 64;

int64_t roundUp(int64_t v, int64_t to) {
  return (v + to - 1) / to * to;
}

// A 1-D window as a 2-D one of height 1, so that 1-D convolutions use the 2-D fast paths.
WindowGeometry as2d(const WindowGeometry& g) {
  if (g.spatialRank != 1) return g;
  WindowGeometry r;
  r.spatialRank = 2;
  r.input = {1, g.input[0]};
  r.kernel = {1, g.kernel[0]};
  r.strides = {1, g.strides[0]};
  r.dilations = {1, g.dilations[0]};
  r.padsBegin = {0, g.padsBegin[0]};
  r.padsEnd = {0, g.padsEnd[0]};
  r.output = {1, g.output[0]};
  return r;
}

// How the output columns of each (image, group) are cut into work items.
struct Tiling {
  int64_t tile = 0;
  int64_t tilesPerImage = 0;
  int64_t items = 0;  // batch * groups * tilesPerImage
};

Tiling tiling(int64_t batch, int64_t groups, int64_t columns, int64_t rowsOfCol,
              int64_t elementSize, bool needsBuffer, int threads) {
  Tiling t;
  t.tile = columns;
  if (needsBuffer) {
    const int64_t fit = kColumnBufferBytes / std::max<int64_t>(1, rowsOfCol * elementSize);
    t.tile = std::clamp(roundUp(fit, 16), kMinTile, std::max<int64_t>(columns, 1));
  }
  const int64_t images = batch * groups;
  if (threads > 1 && images * ((columns + t.tile - 1) / t.tile) < threads) {
    const int64_t perImage = (threads + images - 1) / images;
    t.tile = std::max<int64_t>(16, roundUp((columns + perImage - 1) / perImage, 16));
  }
  t.tile = std::max<int64_t>(1, std::min(t.tile, columns));
  t.tilesPerImage = (columns + t.tile - 1) / t.tile;
  t.items = images * t.tilesPerImage;
  return t;
}

// The im2col + GEMM walk of convolve and convolveInteger: calls body(n, grp, first, count, b,
// ldb) for the output columns [first, first + count) of image n's group grp, one tile of `t` per
// work item in parallel. b (leading dimension ldb) is the GEMM's right operand of k rows: the
// input itself for a pointwise convolution, else its im2col columns padded with `padValue`.
template <class T, class Body>
void forEachColumnTile(const T* x, T padValue, const ConvShape& s, const WindowGeometry& g,
                       const Tiling& t, int64_t k, ThreadPool* pool, Body&& body) {
  const int64_t cg = s.channels / s.groups;
  const int64_t cols = g.outputSize();
  const int64_t inSize = g.inputSize();
  const bool pointwise = g.isPointwise();
  parallelFor(pool, t.items, 1, [&](int64_t i0, int64_t i1) {
    T* col = pointwise ? nullptr : threadScratch<T>(k * t.tile);
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t image = item / t.tilesPerImage;  // n * groups + group
      const int64_t n = image / s.groups, grp = image % s.groups;
      const int64_t first = (item % t.tilesPerImage) * t.tile;
      const int64_t count = std::min(t.tile, cols - first);
      const T* xg = x + (n * s.channels + grp * cg) * inSize;
      const T* b = xg + first;
      int64_t ldb = cols;
      if (!pointwise) {
        im2col(xg, cg, g, first, count, padValue, col);
        b = col;
        ldb = count;
      }
      body(n, grp, first, count, b, ldb);
    }
  });
}

int threadsOf(ThreadPool* pool) {
  return pool == nullptr ? 1 : pool->size();
}

// Valid output range [begin, end) for a tap at `offset` (see im2col_detail::validRange).
using im2col_detail::validRange;

// 2-D depthwise convolution of one plane by phase decomposition. The zero-padded input is split
// into strides_h * strides_w phases (phase (a, b) holds padded rows a, a + sh, ... and columns
// b, b + sw, ...), each `phaseWidth` wide. Tap (ky, kx) then reads phase
// ((ky * dh) % sh, (kx * dw) % sw) at a constant offset from the output position, so that with
// output rows laid out `phaseWidth` apart, every tap is one long contiguous multiply-add over a
// block of output rows, whatever the stride, dilation or width (short rows of 7 or 14 pixels
// would otherwise leave the vector units idle). Columns past the output width are scratch.
struct DepthwisePlan {
  int64_t phaseRows = 0, phaseWidth = 0;
  int64_t phaseSize = 0;            // elements per phase, with slack for the scratch columns
  int64_t blockRows = 0;            // output rows per block (keeps the block in L1)
  int64_t blockSize = 0;            // elements of a block buffer (a multiple of kChunk)
  std::vector<int64_t> tapOffsets;  // per tap: where its phase data starts, for output (0, 0)
};

// Output elements computed together, in registers: one AVX-512 vector of floats; kGroup chunks
// are in flight at once.
constexpr int64_t kChunk = 16;
constexpr int64_t kGroup = 4;
// Horizontal strides handled by the phase split (larger ones take the im2col path).
constexpr int64_t kMaxStride = 8;
// Depthwise convolutions with stride 1 and at least this many output pixels per plane run a
// plane at a time; the others 16 channels at a time, with a padded buffer of at most
// kBlockedBufferBytes per 16 channels.
constexpr int64_t kPlaneKernelMinPixels = 4096;
constexpr int64_t kBlockedBufferBytes = int64_t{1} << 20;
// Ordinary convolutions with at most this many products per output run direct.
constexpr int64_t kDirectMaxReduction = 32;

DepthwisePlan depthwisePlan(const WindowGeometry& g) {
  DepthwisePlan p;
  const int64_t sh = g.strides[0], sw = g.strides[1];
  const int64_t paddedRows = std::max(
      g.input[0] + g.padsBegin[0], (g.output[0] - 1) * sh + (g.kernel[0] - 1) * g.dilations[0] + 1);
  const int64_t paddedCols = std::max(
      g.input[1] + g.padsBegin[1], (g.output[1] - 1) * sw + (g.kernel[1] - 1) * g.dilations[1] + 1);
  p.phaseRows = (paddedRows + sh - 1) / sh;
  p.phaseWidth = (paddedCols + sw - 1) / sw;
  // A block's last chunk may run up to kChunk - 1 elements past the last row.
  p.phaseSize = (p.phaseRows + 2) * p.phaseWidth + kChunk;
  p.blockRows = std::max<int64_t>(1, 2048 / p.phaseWidth);
  p.blockSize = roundUp(p.blockRows * p.phaseWidth, kChunk);
  for (int64_t ky = 0; ky < g.kernel[0]; ++ky) {
    for (int64_t kx = 0; kx < g.kernel[1]; ++kx) {
      const int64_t ry = ky * g.dilations[0], rx = kx * g.dilations[1];
      p.tapOffsets.push_back(((ry % sh) * sw + rx % sw) * p.phaseSize + (ry / sh) * p.phaseWidth +
                             rx / sw);
    }
  }
  return p;
}

// Writes `count` outputs of a block row to y, through the channel's epilogue when there is one
// (float only: the block is in L1, so this saves the epilogue a pass over the plane).
template <class T>
[[gnu::always_inline]] inline void writeRow(const T* __restrict from, T* __restrict to,
                                            int64_t count, const ChannelEpilogue* epilogue,
                                            const T* residual) {
  if constexpr (std::is_same_v<T, float>) {
    if (epilogue != nullptr) {
      applyChannelEpilogue(*epilogue, from, to, residual, count);
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) to[i] = from[i];
}

template <class T>
[[gnu::always_inline]] inline void depthwisePlaneImpl(const T* __restrict x, const T* __restrict w,
                                                      T b, T* __restrict y, const WindowGeometry& g,
                                                      const DepthwisePlan& p, T* __restrict phases,
                                                      T* __restrict block,
                                                      const ChannelEpilogue* epilogue,
                                                      const T* residual) {
  const int64_t ih = g.input[0], iw = g.input[1];
  const int64_t oh = g.output[0], ow = g.output[1];
  const int64_t sh = g.strides[0], sw = g.strides[1];
  const int64_t ph = g.padsBegin[0], pw = g.padsBegin[1];
  const int64_t qw = p.phaseWidth;
  const int64_t taps = static_cast<int64_t>(p.tapOffsets.size());
  const int64_t* offsets = p.tapOffsets.data();
  if (sh == 1 && sw == 1) {
    // One phase: only the padding needs zeros, the interior is overwritten.
    for (int64_t i = 0; i < ph * qw + pw; ++i) phases[i] = T(0);
    for (int64_t iy = 0; iy < ih; ++iy) {
      T* __restrict row = phases + (iy + ph) * qw + pw;
      const T* __restrict src = x + iy * iw;
      for (int64_t ix = 0; ix < iw; ++ix) row[ix] = src[ix];
      // The right padding of this row and the left padding of the next are adjacent.
      for (int64_t j = iw; j < qw; ++j) row[j] = T(0);
    }
    for (int64_t i = (ih + ph) * qw + pw; i < p.phaseSize; ++i) phases[i] = T(0);
  } else {
    for (int64_t i = 0; i < sh * sw * p.phaseSize; ++i) phases[i] = T(0);
    // Input columns ix with (ix + pw) % sw == phase land at (ix + pw) / sw of that phase: per
    // phase, the first such column and where it lands (the same for every row).
    int64_t firstColumn[kMaxStride], landing[kMaxStride], count[kMaxStride];
    for (int64_t phase = 0; phase < sw; ++phase) {
      firstColumn[phase] = ((phase - pw) % sw + sw) % sw;
      landing[phase] = phase * p.phaseSize + (firstColumn[phase] + pw) / sw;
      count[phase] = firstColumn[phase] < iw ? (iw - firstColumn[phase] + sw - 1) / sw : 0;
    }
    for (int64_t iy = 0; iy < ih; ++iy) {
      const int64_t py = iy + ph;
      T* __restrict row = phases + (py % sh) * sw * p.phaseSize + (py / sh) * qw;
      const T* __restrict src = x + iy * iw;
      for (int64_t phase = 0; phase < sw; ++phase) {
        T* __restrict dst = row + landing[phase];
        const T* __restrict from = src + firstColumn[phase];
        const int64_t n = count[phase];
        if (sw == 2) {  // a constant stride lets the compiler vectorize the gather
          for (int64_t j = 0; j < n; ++j) dst[j] = from[2 * j];
        } else {
          for (int64_t j = 0; j < n; ++j) dst[j] = from[j * sw];
        }
      }
    }
  }
  for (int64_t oy0 = 0; oy0 < oh; oy0 += p.blockRows) {
    const int64_t rows = std::min(p.blockRows, oh - oy0);
    const int64_t n = roundUp(rows * qw, kChunk);
    const T* base = phases + oy0 * qw;
    // kGroup chunks at a time: independent accumulators hide the multiply-add latency (one
    // chain of taps per chunk would wait on each previous result).
    int64_t i = 0;
    for (; i + kGroup * kChunk <= n; i += kGroup * kChunk) {
      T acc[kGroup][kChunk];
      for (int64_t g = 0; g < kGroup; ++g) {
        for (int64_t j = 0; j < kChunk; ++j) acc[g][j] = b;
      }
      for (int64_t t = 0; t < taps; ++t) {
        const T wv = w[t];
        const T* __restrict src = base + offsets[t] + i;
        for (int64_t g = 0; g < kGroup; ++g) {
          for (int64_t j = 0; j < kChunk; ++j) acc[g][j] += wv * src[g * kChunk + j];
        }
      }
      for (int64_t g = 0; g < kGroup; ++g) {
        for (int64_t j = 0; j < kChunk; ++j) block[i + g * kChunk + j] = acc[g][j];
      }
    }
    for (; i < n; i += kChunk) {
      T acc[kChunk];
      for (int64_t j = 0; j < kChunk; ++j) acc[j] = b;
      for (int64_t t = 0; t < taps; ++t) {
        const T wv = w[t];
        const T* __restrict src = base + offsets[t] + i;
        for (int64_t j = 0; j < kChunk; ++j) acc[j] += wv * src[j];
      }
      for (int64_t j = 0; j < kChunk; ++j) block[i + j] = acc[j];
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = (oy0 + r) * ow;
      writeRow(block + r * qw, y + at, ow, epilogue, residual != nullptr ? residual + at : nullptr);
    }
  }
}

QOPT_VECTOR_CLONES
void depthwisePlane(const float* x, const float* w, float b, float* y, const WindowGeometry& g,
                    const DepthwisePlan& p, float* phases, float* block,
                    const ChannelEpilogue* epilogue, const float* residual) {
  depthwisePlaneImpl(x, w, b, y, g, p, phases, block, epilogue, residual);
}

void depthwisePlane(const double* x, const double* w, double b, double* y, const WindowGeometry& g,
                    const DepthwisePlan& p, double* phases, double* block,
                    const ChannelEpilogue* epilogue, const double* residual) {
  depthwisePlaneImpl(x, w, b, y, g, p, phases, block, epilogue, residual);
}

template <class T>
void depthwise2d(const T* x, const T* w, const T* bias, T* y, const ConvShape& s,
                 const WindowGeometry& g, ThreadPool* pool, const ConvEpilogue* epilogue,
                 const T* residual) {
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const int64_t taps = g.kernelSize();
  const int64_t multiplier = s.filters / s.channels;
  const int64_t planes = s.batch * s.filters;
  const DepthwisePlan plan = depthwisePlan(g);
  const int64_t phaseFloats = g.strides[0] * g.strides[1] * plan.phaseSize;
  const int64_t blockFloats = plan.blockSize;
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, outSize * taps));
  parallelFor(pool, planes, grain, [&](int64_t p0, int64_t p1) {
    T* scratch = threadScratch<T>(phaseFloats + blockFloats);
    for (int64_t plane = p0; plane < p1; ++plane) {
      const int64_t n = plane / s.filters, m = plane % s.filters;
      ChannelEpilogue channelEpilogue;
      if constexpr (std::is_same_v<T, float>) {
        if (epilogue != nullptr) channelEpilogue = epilogue->forChannel(m);
      }
      depthwisePlane(x + (n * s.channels + m / multiplier) * inSize, w + m * taps,
                     bias != nullptr ? bias[m] : T(0), y + plane * outSize, g, plan, scratch,
                     scratch + phaseFloats, epilogue != nullptr ? &channelEpilogue : nullptr,
                     residual != nullptr ? residual + plane * outSize : nullptr);
    }
  });
}

}  // namespace

template <class T>
void convolve(const T* x, const T* w, const T* bias, T* y, const ConvShape& s,
              const WindowGeometry& geometry, ThreadPool* pool, const ConvEpilogue* epilogue,
              const T* residual) {
  if constexpr (!std::is_same_v<T, float>) {
    if (epilogue != nullptr) throw std::logic_error("convolution epilogues are float only");
  }
  if (epilogue != nullptr && epilogue->empty()) epilogue = nullptr;
  const WindowGeometry g = as2d(geometry);
  const int64_t cg = s.channels / s.groups, mg = s.filters / s.groups;
  if (cg == 1 && s.groups == s.channels && g.spatialRank == 2 && !g.isPointwise() &&
      g.strides[1] <= kMaxStride) {
    if constexpr (std::is_same_v<T, float>) {
      // 16 channels at a time, except for large stride-1 planes: there the plane-at-a-time
      // kernel's per-plane work is small next to the plane, and it needs no transposes
      // (measured on MobileNetV2's layers, bench/README.md).
      const bool largeStride1 =
          g.strides[0] == 1 && g.strides[1] == 1 && g.outputSize() >= kPlaneKernelMinPixels;
      if (!largeStride1 && depthwiseBlockedFits(s, g, kBlockedBufferBytes)) {
        depthwiseBlocked(x, w, bias, y, s, g, pool, epilogue, residual);
        return;
      }
    }
    depthwise2d(x, w, bias, y, s, g, pool, epilogue, residual);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // A short reduction (a first layer's 3 channels x 3x3) is faster direct than through a
    // column matrix; pointwise ones stay with the GEMM, which is faster for them.
    if (!g.isPointwise() && directBlockedFits(s, g, kDirectMaxReduction)) {
      directBlocked(x, w, bias, y, s, g, pool, epilogue, residual);
      return;
    }
  }
  const int64_t k = cg * g.kernelSize();
  const int64_t cols = g.outputSize();
  const bool pointwise = g.isPointwise();
  // With an epilogue that has no affine map (a Q/DQ model's folded Conv), the bias becomes it:
  // v * 1 + bias is v + bias rounded once, as the separate addition below rounds it.
  std::optional<ConvEpilogue> withBias;
  if constexpr (std::is_same_v<T, float>) {
    if (epilogue != nullptr && bias != nullptr && epilogue->scale.empty()) {
      withBias.emplace(*epilogue);
      withBias->scale.assign(static_cast<size_t>(s.filters), 1.0f);
      withBias->shift.assign(bias, bias + s.filters);
      epilogue = &*withBias;
      bias = nullptr;
    }
  }
  // A pointwise convolution has no column buffer to size its tiles by; with an epilogue, the
  // output is cut into blocks instead, so that the epilogue finds its tile in cache.
  const Tiling t = pointwise && epilogue != nullptr
                       ? tiling(s.batch, s.groups, cols, mg, sizeof(T), true, threadsOf(pool))
                       : tiling(s.batch, s.groups, cols, k, sizeof(T), !pointwise, threadsOf(pool));
  forEachColumnTile(
      x, T(0), s, g, t, k, pool,
      [&](int64_t n, int64_t grp, int64_t first, int64_t count, const T* b, int64_t ldb) {
        T* yg = y + (n * s.filters + grp * mg) * cols + first;
        gemm(false, false, mg, count, k, T(1), w + grp * mg * k, k, b, ldb, T(0), yg, cols,
             nullptr);
        // The bias after the product, on the tile while it is in cache (a fill before it and a
        // product that adds to it cost a pass over the output).
        if (bias != nullptr) {
          for (int64_t m = 0; m < mg; ++m) {
            T* row = yg + m * cols;
            const T add = bias[grp * mg + m];
            for (int64_t j = 0; j < count; ++j) row[j] += add;
          }
        }
        if constexpr (std::is_same_v<T, float>) {
          if (epilogue != nullptr) {
            for (int64_t m = 0; m < mg; ++m) {
              const int64_t offset = (yg - y) + m * cols;
              epilogue->apply(yg + m * cols, residual ? residual + offset : nullptr, count,
                              grp * mg + m);
            }
          }
        }
      });
}

template <class T>
void convolveTranspose(const T* x, const T* w, const T* bias, T* y, const ConvShape& s,
                       const WindowGeometry& geometry, ThreadPool* pool) {
  const WindowGeometry g = as2d(geometry);
  const int64_t cg = s.channels / s.groups, mg = s.filters / s.groups;
  const int64_t ks = g.kernelSize();
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const int64_t rows = mg * ks;
  std::vector<T> col(static_cast<size_t>(rows * inSize));
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t grp = 0; grp < s.groups; ++grp) {
      const T* xg = x + (n * s.channels + grp * cg) * inSize;
      const T* wg = w + grp * cg * rows;
      gemm(true, false, rows, inSize, cg, T(1), wg, rows, xg, inSize, T(0), col.data(), inSize,
           pool);
      T* yg = y + (n * s.filters + grp * mg) * outSize;
      // col2im: each output channel's rows scatter into that channel only.
      parallelFor(pool, mg, 1, [&](int64_t m0, int64_t m1) {
        std::vector<int64_t> kIdx(static_cast<size_t>(g.spatialRank));
        std::vector<int64_t> iIdx(static_cast<size_t>(g.spatialRank));
        for (int64_t m = m0; m < m1; ++m) {
          T* ym = yg + m * outSize;
          std::fill(ym, ym + outSize, bias != nullptr ? bias[grp * mg + m] : T(0));
          std::fill(kIdx.begin(), kIdx.end(), 0);
          for (int64_t kk = 0; kk < ks; ++kk) {
            const T* src = col.data() + (m * ks + kk) * inSize;
            if (g.spatialRank == 2) {
              const int64_t ky = kk / g.kernel[1], kx = kk % g.kernel[1];
              const int64_t xOffset = kx * g.dilations[1] - g.padsBegin[1];
              for (int64_t iy = 0; iy < g.input[0]; ++iy) {
                const int64_t oy = iy * g.strides[0] - g.padsBegin[0] + ky * g.dilations[0];
                if (oy < 0 || oy >= g.output[0]) continue;
                T* yrow = ym + oy * g.output[1];
                const T* srow = src + iy * g.input[1];
                for (int64_t ix = 0; ix < g.input[1]; ++ix) {
                  const int64_t ox = ix * g.strides[1] + xOffset;
                  if (ox >= 0 && ox < g.output[1]) yrow[ox] += srow[ix];
                }
              }
            } else {
              std::fill(iIdx.begin(), iIdx.end(), 0);
              for (int64_t p = 0; p < inSize; ++p) {
                int64_t offset = 0;
                bool inside = true;
                for (size_t a = 0; a < iIdx.size(); ++a) {
                  const int64_t o =
                      iIdx[a] * g.strides[a] - g.padsBegin[a] + kIdx[a] * g.dilations[a];
                  inside = inside && o >= 0 && o < g.output[a];
                  offset = offset * g.output[a] + o;
                }
                if (inside) ym[offset] += src[p];
                for (size_t a = iIdx.size(); a-- > 0;) {
                  if (++iIdx[a] < g.input[a]) break;
                  iIdx[a] = 0;
                }
              }
              for (size_t a = kIdx.size(); a-- > 0;) {
                if (++kIdx[a] < g.kernel[a]) break;
                kIdx[a] = 0;
              }
            }
          }
        }
      });
    }
  }
}

template <class TX, class TW>
void convolveInteger(const TX* x, TX xZero, const TW* w, const TW* wZero, int64_t wZeroStride,
                     int32_t* acc, const ConvShape& s, const WindowGeometry& geometry,
                     ThreadPool* pool) {
  const WindowGeometry g = as2d(geometry);
  const int64_t cg = s.channels / s.groups, mg = s.filters / s.groups;
  const int64_t k = cg * g.kernelSize();
  const int64_t cols = g.outputSize();
  const bool pointwise = g.isPointwise();
  const Tiling t = tiling(s.batch, s.groups, cols, k, sizeof(TX), !pointwise, threadsOf(pool));
  forEachColumnTile(
      x, xZero, s, g, t, k, pool,
      [&](int64_t n, int64_t grp, int64_t first, int64_t count, const TX* b, int64_t ldb) {
        int32_t* ag = acc + (n * s.filters + grp * mg) * cols + first;
        integerGemm<TW, TX>(mg, count, k, w + grp * mg * k, k, wZero + grp * mg * wZeroStride,
                            wZeroStride, b, ldb, &xZero, 0, ag, cols, nullptr);
      });
}

template void convolve<float>(const float*, const float*, const float*, float*, const ConvShape&,
                              const WindowGeometry&, ThreadPool*, const ConvEpilogue*,
                              const float*);
template void convolve<double>(const double*, const double*, const double*, double*,
                               const ConvShape&, const WindowGeometry&, ThreadPool*,
                               const ConvEpilogue*, const double*);
template void convolveTranspose<float>(const float*, const float*, const float*, float*,
                                       const ConvShape&, const WindowGeometry&, ThreadPool*);
template void convolveTranspose<double>(const double*, const double*, const double*, double*,
                                        const ConvShape&, const WindowGeometry&, ThreadPool*);
#define QOPT_INSTANTIATE_INTEGER_CONV(TX, TW)                                                   \
  template void convolveInteger<TX, TW>(const TX*, TX, const TW*, const TW*, int64_t, int32_t*, \
                                        const ConvShape&, const WindowGeometry&, ThreadPool*);
QOPT_INSTANTIATE_INTEGER_CONV(uint8_t, uint8_t)
QOPT_INSTANTIATE_INTEGER_CONV(uint8_t, int8_t)
QOPT_INSTANTIATE_INTEGER_CONV(int8_t, uint8_t)
QOPT_INSTANTIATE_INTEGER_CONV(int8_t, int8_t)
#undef QOPT_INSTANTIATE_INTEGER_CONV

}  // namespace qopt::interp
