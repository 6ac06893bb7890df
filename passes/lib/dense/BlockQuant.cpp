#include "qopt/dense/BlockQuant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qopt/ir/Tensor.h"

namespace qopt::wq {
namespace {

// The value a scale has once stored in `type`.
double storedScale(double scale, DataType type) {
  if (type == DataType::Float16) {
    return static_cast<double>(halfBitsToFloat(floatToHalfBits(static_cast<float>(scale))));
  }
  if (type == DataType::BFloat16) {
    return static_cast<double>(bfloat16BitsToFloat(floatToBFloat16Bits(static_cast<float>(scale))));
  }
  return static_cast<double>(static_cast<float>(scale));
}

// The stored scale must stay positive and finite: a tiny range would round to 0 in float16.
double positiveStoredScale(double scale, DataType type) {
  double stored = storedScale(scale, type);
  if (!(stored > 0) || !std::isfinite(stored)) {
    stored = storedScale(type == DataType::Float16 ? 6.103515625e-05 /* float16's smallest normal */
                                                   : std::numeric_limits<float>::min(),
                         type);
  }
  return stored;
}

// Divisors of the block's largest magnitude tried by searchScale: 7 puts it on +7 or -7, 8 on -8
// (exact for a negative extreme; a positive one clips to +7).
constexpr double kSymmetricDivisors[] = {7.0, 7.25, 7.5, 7.75, 8.0};

// The symmetric scale of column n's block [first, last), range [lo, hi] (lo <= 0 <= hi,
// amax = max(-lo, hi) > 0), as stored in `type` (BlockScheme::searchScale).
double symmetricScale(const Matrix& w, int64_t n, int64_t first, int64_t last, double lo, double hi,
                      double amax, DataType type, bool search) {
  if (!search) {
    const double scale = positiveStoredScale(amax / 8.0, type);
    if (-lo >= hi && std::nearbyint(hi / scale) <= 7 && std::nearbyint(lo / scale) >= -8) {
      return scale;
    }
    return positiveStoredScale(amax / 7.0, type);
  }
  double best = 0, bestError = std::numeric_limits<double>::infinity();
  for (double divisor : kSymmetricDivisors) {
    const double scale = positiveStoredScale(amax / divisor, type);
    double error = 0;
    for (int64_t k = first; k < last; ++k) {
      const double v = w.at(k, n);
      const double code = std::clamp(std::nearbyint(v / scale), -8.0, 7.0);
      error += (v - code * scale) * (v - code * scale);
    }
    if (error < bestError) {  // the first divisor on ties
      bestError = error;
      best = scale;
    }
  }
  return best;
}

}  // namespace

int8_t BlockParams::code(double value) const {
  const auto code = static_cast<int64_t>(std::nearbyint(value / scale)) + zeroPoint;
  return static_cast<int8_t>(std::clamp<int64_t>(code, qmin, qmax));
}

BlockParams chooseBlockParams(const Matrix& w, int64_t col, int64_t first, int64_t last,
                              const BlockScheme& scheme) {
  double lo = 0, hi = 0;  // the range always holds 0, so that 0 is exact
  for (int64_t k = first; k < last; ++k) {
    lo = std::min(lo, w.at(k, col));
    hi = std::max(hi, w.at(k, col));
  }
  BlockParams p;
  if (scheme.symmetric) {
    const double amax = std::max(-lo, hi);
    if (amax > 0) {
      p.scale =
          symmetricScale(w, col, first, last, lo, hi, amax, scheme.scaleType, scheme.searchScale);
    }
  } else {
    p.qmin = 0;
    p.qmax = 15;
    if (hi > lo) {
      p.scale = positiveStoredScale((hi - lo) / 15.0, scheme.scaleType);
      p.zeroPoint = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(-lo / p.scale)), 0, 15);
    }
  }
  return p;
}

BlockQuantized emptyBlockQuantized(const Matrix& w, const BlockScheme& scheme) {
  BlockQuantized q;
  q.rows = w.rows;
  q.cols = w.cols;
  q.blockSize = scheme.blockSize;
  q.blocks = (w.rows + scheme.blockSize - 1) / scheme.blockSize;
  q.symmetric = scheme.symmetric;
  q.codes.assign(static_cast<size_t>(w.rows * w.cols), 0);
  q.scales.assign(static_cast<size_t>(q.blocks * w.cols), 1.0);
  q.zeroPoints.assign(q.scales.size(), 0);
  return q;
}

void BlockQuantized::setParams(int64_t block, int64_t col, const BlockParams& p) {
  const auto at = static_cast<size_t>(block * cols + col);
  scales[at] = p.scale;
  zeroPoints[at] = static_cast<int8_t>(p.zeroPoint);
}

BlockQuantized quantizeBlockwise(const Matrix& w, const BlockScheme& scheme) {
  BlockQuantized q = emptyBlockQuantized(w, scheme);
  for (int64_t b = 0; b < q.blocks; ++b) {
    const int64_t first = b * scheme.blockSize;
    const int64_t last = std::min(w.rows, first + scheme.blockSize);
    for (int64_t n = 0; n < w.cols; ++n) {
      const BlockParams p = chooseBlockParams(w, n, first, last, scheme);
      q.setParams(b, n, p);
      for (int64_t k = first; k < last; ++k) {
        q.codes[static_cast<size_t>(k * w.cols + n)] = p.code(w.at(k, n));
      }
    }
  }
  return q;
}

Matrix dequantize(const BlockQuantized& q) {
  Matrix w{q.rows, q.cols, std::vector<double>(static_cast<size_t>(q.rows * q.cols))};
  for (int64_t k = 0; k < q.rows; ++k) {
    const int64_t b = k / q.blockSize;
    for (int64_t n = 0; n < q.cols; ++n) {
      w.at(k, n) = static_cast<double>(q.code(k, n) - q.zeroPoint(b, n)) * q.scale(b, n);
    }
  }
  return w;
}

std::vector<int64_t> qdqCodes(const BlockQuantized& q, bool transposed) {
  std::vector<int64_t> out(q.codes.size());
  for (int64_t k = 0; k < q.rows; ++k) {
    for (int64_t n = 0; n < q.cols; ++n) {
      const size_t at = static_cast<size_t>(transposed ? n * q.rows + k : k * q.cols + n);
      out[at] = q.code(k, n);
    }
  }
  return out;
}

namespace {

// One value per (block, column), blocks x N row-major, or N x blocks when transposed.
template <class T, class Get>
std::vector<T> perBlock(const BlockQuantized& q, bool transposed, Get get) {
  std::vector<T> out(static_cast<size_t>(q.blocks * q.cols));
  for (int64_t b = 0; b < q.blocks; ++b) {
    for (int64_t n = 0; n < q.cols; ++n) {
      out[static_cast<size_t>(transposed ? n * q.blocks + b : b * q.cols + n)] = get(b, n);
    }
  }
  return out;
}

}  // namespace

std::vector<double> qdqScales(const BlockQuantized& q, bool transposed) {
  return perBlock<double>(q, transposed, [&](int64_t b, int64_t n) { return q.scale(b, n); });
}

std::vector<int64_t> qdqZeroPoints(const BlockQuantized& q, bool transposed) {
  return perBlock<int64_t>(q, transposed,
                           [&](int64_t b, int64_t n) { return int64_t{q.zeroPoint(b, n)}; });
}

OrtPacked packForOrt(const BlockQuantized& q) {
  OrtPacked packed;
  const int64_t blob = q.blockSize / 2;
  packed.b.assign(static_cast<size_t>(q.cols * q.blocks * blob), 0);
  packed.scales.resize(static_cast<size_t>(q.cols * q.blocks));
  const int64_t zeroBytes = (q.blocks + 1) / 2;
  if (!q.symmetric) packed.zeroPoints.assign(static_cast<size_t>(q.cols * zeroBytes), 0);
  for (int64_t n = 0; n < q.cols; ++n) {
    for (int64_t b = 0; b < q.blocks; ++b) {
      packed.scales[static_cast<size_t>(n * q.blocks + b)] = q.scale(b, n);
      // Symmetric codes [-7, 7] become [1, 15] around MatMulNBits' default zero point 8.
      const int64_t zero = q.symmetric ? 8 : q.zeroPoint(b, n);
      if (!q.symmetric) {
        uint8_t& byte = packed.zeroPoints[static_cast<size_t>(n * zeroBytes + b / 2)];
        byte = static_cast<uint8_t>(byte | (zero << (4 * (b % 2))));
      }
      uint8_t* out = packed.b.data() + (n * q.blocks + b) * blob;
      for (int64_t i = 0; i < q.blockSize; ++i) {
        const int64_t k = b * q.blockSize + i;
        const int64_t code = k < q.rows ? q.code(k, n) + (q.symmetric ? 8 : 0) : zero;
        out[i / 2] = static_cast<uint8_t>(out[i / 2] | (code << (4 * (i % 2))));
      }
    }
  }
  return packed;
}

double sqnrDb(const std::vector<double>& reference, const std::vector<double>& approx) {
  double signal = 0, noise = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    signal += reference[i] * reference[i];
    const double d = reference[i] - approx[i];
    noise += d * d;
  }
  if (noise == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

}  // namespace qopt::wq
