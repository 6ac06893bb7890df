// 16 float lanes as a GCC vector, for kernels that keep 16 channels side by side: loads,
// stores and a 16x16 transpose. Include only into code built per instruction set
// (QOPT_VECTOR_CLONES functions), inlined.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "Epilogue.h"

namespace qopt::interp::lanes {

constexpr int64_t kLanes = 16;
// Output pixels whose accumulators a kernel keeps in flight at once: enough to hide the
// multiply-add latency, few enough to stay in registers with AVX2 too.
constexpr int64_t kInFlight = 8;

typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

// Vectors go through memory by reference: passing them by value would tie the functions' ABI
// to the instruction set they are built for.
[[gnu::always_inline]] inline void load(Vec& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}

[[gnu::always_inline]] inline void store(float* p, const Vec& v) {
  std::memcpy(p, &v, sizeof v);
}

// Half of the 16 lanes: one AVX2 register. Transposes work on these: GCC lowers a shuffle of
// 16 floats element by element through memory where no 16-float register exists.
typedef float Half __attribute__((vector_size(kLanes / 2 * sizeof(float))));

/// cols[j][0 ... 7] = rows[0 ... 7][j] for j < 8: unpacks, shuffles within 128-bit blocks and
/// block swaps, one instruction each on AVX2.
[[gnu::always_inline]] inline void transpose8(const float* const* rows, float* const* cols) {
  Half r[8], t[8], u[8];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) std::memcpy(&r[k], rows[k], sizeof(Half));
#pragma GCC unroll 4
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  // u[4m + q]: column q (first 128 bits) and column 4 + q (last) of rows 4m ... 4m + 3.
#pragma GCC unroll 2
  for (int m = 0; m < 8; m += 4) {
    u[m] = __builtin_shufflevector(t[m], t[m + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[m + 1] = __builtin_shufflevector(t[m], t[m + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[m + 2] = __builtin_shufflevector(t[m + 1], t[m + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[m + 3] = __builtin_shufflevector(t[m + 1], t[m + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const Half low = __builtin_shufflevector(u[q], u[q + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    const Half high = __builtin_shufflevector(u[q], u[q + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    std::memcpy(cols[q], &low, sizeof low);
    std::memcpy(cols[q + 4], &high, sizeof high);
  }
}

/// cols[j][0 ... 15] = rows[0 ... 15][j] for j < 16, as four 8x8 blocks.
[[gnu::always_inline]] inline void transpose(const float* const* rows, float* const* cols) {
#pragma GCC unroll 2
  for (int bi = 0; bi < kLanes; bi += 8) {
#pragma GCC unroll 2
    for (int bj = 0; bj < kLanes; bj += 8) {
      const float* r[8];
      float* c[8];
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        r[k] = rows[bi + k] + bj;
        c[k] = cols[bj + k] + bi;
      }
      transpose8(r, c);
    }
  }
}

/// Where the windows of output pixels q0 ... q0 + 15 (row-major over `width` columns) start:
/// origin + (row - firstRow) * rowStep + column * columnStep. Pixels from q0 + n on repeat the
/// last one (their results are discarded). Stepped, not divided, per pixel.
[[gnu::always_inline]] inline void windowStarts(const float** base, const float* origin, int64_t q0,
                                                int64_t n, int64_t width, int64_t firstRow,
                                                int64_t rowStep, int64_t columnStep) {
  int64_t row = q0 / width, column = q0 % width;
  for (int64_t i = 0; i < kLanes; ++i) {
    base[i] = origin + (row - firstRow) * rowStep + column * columnStep;
    if (i + 1 < n && ++column == width) {
      column = 0;
      ++row;
    }
  }
}

/// Whether the CPU has 16-float registers (AVX-512). Without them a 16-lane vector takes two
/// registers, and kernels keep fewer in flight.
inline bool wideRegisters() {
  static const bool wide = __builtin_cpu_supports("avx512f");
  return wide;
}

/// W of the 16 lanes in one register: all 16 (Vec, AVX-512) or 8 (Half, AVX2).
template <int W>
using Part = std::conditional_t<W == kLanes, Vec, Half>;

/// acc[0 ... Pixels) = bias + sum over t, in order, of weights[t] * x(base[i] + offsets[t]),
/// each pixel's 16 lanes as parts of W lanes. x is the 16 lanes at that address, or with
/// `Broadcast` the one float there in every lane. bias and weights hold 16 lanes each (weights:
/// per t).
template <bool Broadcast, int W, int Pixels>
[[gnu::always_inline]] inline void accumulatePixels(Vec* acc, const float* const* base,
                                                    const float* bias, const float* weights,
                                                    const int64_t* offsets, int64_t products) {
  using P = Part<W>;
  static_assert(sizeof(P) == W * sizeof(float));
  constexpr int kParts = static_cast<int>(kLanes) / W;
  P part[Pixels][kParts];
#pragma GCC unroll 8
  for (int i = 0; i < Pixels; ++i) {
#pragma GCC unroll 2
    for (int k = 0; k < kParts; ++k) std::memcpy(&part[i][k], bias + k * W, sizeof(P));
  }
  for (int64_t t = 0; t < products; ++t) {
    P w[kParts];
#pragma GCC unroll 2
    for (int k = 0; k < kParts; ++k) std::memcpy(&w[k], weights + t * kLanes + k * W, sizeof(P));
    const int64_t offset = offsets[t];
#pragma GCC unroll 8
    for (int i = 0; i < Pixels; ++i) {
      const float* x = base[i] + offset;
#pragma GCC unroll 2
      for (int k = 0; k < kParts; ++k) {
        if constexpr (Broadcast) {
          part[i][k] += w[k] * x[0];
        } else {
          P v;
          std::memcpy(&v, x + k * W, sizeof v);
          part[i][k] += w[k] * v;
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < Pixels; ++i) {
#pragma GCC unroll 2
    for (int k = 0; k < kParts; ++k) {
      std::memcpy(reinterpret_cast<float*>(&acc[i]) + k * W, &part[i][k], sizeof(P));
    }
  }
}

/// accumulatePixels for 16 pixels: 8 at a time with `wide` registers, else 4 at a time as two
/// halves each (8 accumulators, two weight halves and the input in 11 of AVX2's 16 registers;
/// 8 pixels by 16 lanes would spill every accumulator).
template <bool Broadcast>
[[gnu::always_inline]] inline void multiplyAccumulate(Vec* acc, const float* const* base,
                                                      const float* bias, const float* weights,
                                                      const int64_t* offsets, int64_t products,
                                                      bool wide) {
  if (wide) {
    for (int64_t q = 0; q < kLanes; q += kInFlight) {
      accumulatePixels<Broadcast, kLanes, kInFlight>(acc + q, base + q, bias, weights, offsets,
                                                     products);
    }
    return;
  }
  for (int64_t q = 0; q < kLanes; q += kInFlight / 2) {
    accumulatePixels<Broadcast, kLanes / 2, kInFlight / 2>(acc + q, base + q, bias, weights,
                                                           offsets, products);
  }
}

/// Up to 16 output channels (filters) computed side by side: their weights and bias in lanes,
/// where each writes, and its epilogue.
struct FilterLanes {
  int64_t count = 0;           // filters in use (lanes past it are zero and written nowhere)
  std::vector<float> weights;  // [product][lane]
  float bias[kLanes] = {};     // plain floats: a Vec member would need 64-byte aligned storage
  bool hasEpilogue = false;
  ChannelEpilogue epilogues[kLanes];
  float* outputs[kLanes] = {};
  const float* residuals[kLanes] = {};  // null when the epilogue adds none

  /// Filters m0 ... of w (`filters` x `products`), with `bias` and `epilogue` (either may be
  /// null).
  void setFilters(const float* w, int64_t products, const float* bias, const ConvEpilogue* epilogue,
                  int64_t m0, int64_t filters) {
    count = std::min(kLanes, filters - m0);
    weights.assign(static_cast<size_t>(products * kLanes), 0.0f);
    std::fill(this->bias, this->bias + kLanes, 0.0f);
    hasEpilogue = epilogue != nullptr;
    for (int64_t c = 0; c < count; ++c) {
      for (int64_t t = 0; t < products; ++t) {
        weights[static_cast<size_t>(t * kLanes + c)] = w[(m0 + c) * products + t];
      }
      if (bias != nullptr) this->bias[c] = bias[m0 + c];
      if (epilogue != nullptr) epilogues[c] = epilogue->forChannel(m0 + c);
    }
  }

  /// Where filters m0 ... write in image `image` of y (and read the residual): plane
  /// image * filters + m, of `planeSize` elements.
  void setOutputs(float* y, const float* residual, int64_t image, int64_t m0, int64_t filters,
                  int64_t planeSize) {
    for (int64_t c = 0; c < kLanes; ++c) {
      const int64_t at = (image * filters + m0 + c) * planeSize;
      outputs[c] = c < count ? y + at : nullptr;
      residuals[c] = c < count && residual != nullptr ? residual + at : nullptr;
    }
  }
};

/// acc[i] holds 16 channels of output pixel q0 + i; transposes them and writes each filter's n
/// pixels (n <= 16) to its output at q0, through its epilogue.
[[gnu::always_inline]] inline void storeChannels(const Vec* acc, const FilterLanes& f, int64_t q0,
                                                 int64_t n) {
  float values[kLanes][kLanes];  // [channel][pixel]
  const float* rows[kLanes];
  float* cols[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) {
    rows[i] = reinterpret_cast<const float*>(&acc[i]);
    cols[i] = values[i];
  }
  transpose(rows, cols);
  for (int64_t c = 0; c < f.count; ++c) {
    float* out = f.outputs[c] + q0;
    if (f.hasEpilogue) {
      const float* residual = f.residuals[c] != nullptr ? f.residuals[c] + q0 : nullptr;
      applyChannelEpilogue(f.epilogues[c], values[c], out, residual, n);
    } else {
      std::memcpy(out, values[c], static_cast<size_t>(n) * sizeof(float));
    }
  }
}

}  // namespace qopt::interp::lanes
