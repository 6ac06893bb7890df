// 16 float lanes as a GCC vector, for kernels that keep 16 channels side by side: loads,
// stores and a 16x16 transpose. Include only into code built per instruction set
// (QOPT_VECTOR_CLONES functions), inlined.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
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

// One stage of a 16x16 transpose: rows i and i + B (for i with bit B clear) swap their
// off-diagonal blocks of B lanes. The stages B = 8, 4, 2, 1 together transpose.
constexpr int lowIndex(int j, int b) {
  return (j / b) % 2 == 0 ? j : kLanes + j - b;
}
constexpr int highIndex(int j, int b) {
  return (j / b) % 2 == 0 ? j + b : kLanes + j;
}

template <int B, size_t... I>
[[gnu::always_inline]] inline void transposeStage(Vec* r, std::index_sequence<I...>) {
  for (int i = 0; i < kLanes; ++i) {
    if ((i / B) % 2 != 0) continue;
    const Vec a = r[i], b = r[i + B];
    r[i] = __builtin_shufflevector(a, b, lowIndex(I, B)...);
    r[i + B] = __builtin_shufflevector(a, b, highIndex(I, B)...);
  }
}

[[gnu::always_inline]] inline void transpose(Vec* r) {
  constexpr auto lanes = std::make_index_sequence<kLanes>{};
  transposeStage<8>(r, lanes);
  transposeStage<4>(r, lanes);
  transposeStage<2>(r, lanes);
  transposeStage<1>(r, lanes);
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

/// acc[i] = bias + sum over t, in order, of weights[t] * x(base[i] + offsets[t]), for 16 pixels
/// i, 8 at a time. x is the 16 lanes at that address, or with `Broadcast` the one float there
/// in every lane. bias and weights hold 16 lanes each (weights: per t).
template <bool Broadcast>
[[gnu::always_inline]] inline void multiplyAccumulate(Vec* acc, const float* const* base,
                                                      const float* bias, const float* weights,
                                                      const int64_t* offsets, int64_t products) {
  for (int64_t half = 0; half < kLanes; half += kInFlight) {
    Vec part[kInFlight];
#pragma GCC unroll 8
    for (int64_t i = 0; i < kInFlight; ++i) load(part[i], bias);
    for (int64_t t = 0; t < products; ++t) {
      Vec wv;
      load(wv, weights + t * kLanes);
      const int64_t offset = offsets[t];
#pragma GCC unroll 8
      for (int64_t i = 0; i < kInFlight; ++i) {
        if constexpr (Broadcast) {
          part[i] += wv * base[half + i][offset];
        } else {
          Vec v;
          load(v, base[half + i] + offset);
          part[i] += wv * v;
        }
      }
    }
#pragma GCC unroll 8
    for (int64_t i = 0; i < kInFlight; ++i) acc[half + i] = part[i];
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
[[gnu::always_inline]] inline void storeChannels(Vec* acc, const FilterLanes& f, int64_t q0,
                                                 int64_t n) {
  transpose(acc);  // acc[c]: channel c at pixels q0 ...
  for (int64_t c = 0; c < f.count; ++c) {
    float values[kLanes];
    store(values, acc[c]);
    float* out = f.outputs[c] + q0;
    if (f.hasEpilogue) {
      const float* residual = f.residuals[c] != nullptr ? f.residuals[c] + q0 : nullptr;
      applyChannelEpilogue(f.epilogues[c], values, out, residual, n);
    } else if (n == kLanes) {
      store(out, acc[c]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = values[i];
    }
  }
}

}  // namespace qopt::interp::lanes
