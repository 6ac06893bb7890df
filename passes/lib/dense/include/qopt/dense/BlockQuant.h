// Blockwise 4-bit quantization of a K x N weight along K, and the two ways qopt stores it: the
// ONNX int4/uint4 tensor that a blocked DequantizeLinear (opset 21) reads, and ONNX Runtime's
// MatMulNBits packing. Pure arithmetic on doubles; no graph here.
#pragma once

#include <cstdint>
#include <vector>

#include "qopt/ir/DataType.h"

namespace qopt::wq {

/// A K x N matrix, row-major (row k is input channel k).
struct Matrix {
  int64_t rows = 0;  // K
  int64_t cols = 0;  // N
  std::vector<double> values;

  double at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
  double& at(int64_t r, int64_t c) { return values[static_cast<size_t>(r * cols + c)]; }
};

struct BlockScheme {
  int64_t blockSize = 128;
  bool symmetric = true;
  /// The type the scales are stored in (float or float16): each scale is rounded to it before
  /// the codes are chosen, so the stored codes are the nearest for the stored scale.
  DataType scaleType = DataType::Float;
  /// Symmetric only: choose each block's scale among absmax / d, d in {7, 7.25, 7.5, 7.75, 8},
  /// by the block's squared error (a positive extreme may then clip to +7 by under one step).
  /// Off, absmax / 8 where that fits and else absmax / 7, never clipping: what AWQ needs, whose
  /// scaled-up salient weights are the extremes and must not clip.
  bool searchScale = false;
};

struct BlockParams;

/// The blocks of column n cover rows [b * blockSize, min(K, (b + 1) * blockSize)): the last block
/// of a K that is not a multiple of blockSize is shorter (ONNX's rule for blocked scales).
struct BlockQuantized {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t blockSize = 0;
  int64_t blocks = 0;  // ceil(K / blockSize)
  bool symmetric = true;
  /// Codes, K x N row-major: signed [-8, 7] when symmetric, unsigned [0, 15] otherwise.
  std::vector<int8_t> codes;
  /// blocks x N row-major: scales[b * N + n], zero points likewise (0 when symmetric).
  std::vector<double> scales;
  std::vector<int8_t> zeroPoints;

  double scale(int64_t block, int64_t col) const {
    return scales[static_cast<size_t>(block * cols + col)];
  }
  int8_t zeroPoint(int64_t block, int64_t col) const {
    return zeroPoints[static_cast<size_t>(block * cols + col)];
  }
  int8_t code(int64_t row, int64_t col) const {
    return codes[static_cast<size_t>(row * cols + col)];
  }
  void setParams(int64_t block, int64_t col, const BlockParams& params);
};

/// One (block, column)'s quantizer: codes in [qmin, qmax] standing for (code - zeroPoint) * scale.
struct BlockParams {
  double scale = 1.0;
  int64_t zeroPoint = 0;
  int64_t qmin = -8;
  int64_t qmax = 7;

  /// The nearest code (half to even), clamped to [qmin, qmax].
  int8_t code(double value) const;
  double value(int8_t code) const { return static_cast<double>(code - zeroPoint) * scale; }
};

/// The quantizer of rows [first, last) of column `col`, as quantizeBlockwise chooses it.
BlockParams chooseBlockParams(const Matrix& w, int64_t col, int64_t first, int64_t last,
                              const BlockScheme& scheme);

/// The blocks of `w` under `scheme`, every code 0 and every scale 1, to be filled.
BlockQuantized emptyBlockQuantized(const Matrix& w, const BlockScheme& scheme);

/// Round to nearest (half to even). Symmetric: codes in [-8, 7], the scale as searchScale says
/// (absmax / 8 puts a negative extreme exactly on -8, ONNX Runtime's 16-level symmetric scheme,
/// without its negative scales, which TensorRT refuses). Asymmetric:
/// the block's range widened to include 0, scale = (max - min) / 15, zero point round(-min /
/// scale) in [0, 15]. A block of zeros gets scale 1 (TensorRT needs positive scales).
BlockQuantized quantizeBlockwise(const Matrix& w, const BlockScheme& scheme);

/// The values the codes stand for: (code - zero point) * scale.
Matrix dequantize(const BlockQuantized& q);

/// The codes as DequantizeLinear reads them, in the layout of the weight as stored: K x N, or
/// N x K when `transposed` (a Gemm with transB=1). Scales and zero points take the blocked shape
/// ONNX wants for axis 0 ([blocks, N]) or, transposed, axis 1 ([N, blocks]).
std::vector<int64_t> qdqCodes(const BlockQuantized& q, bool transposed);
std::vector<double> qdqScales(const BlockQuantized& q, bool transposed);
std::vector<int64_t> qdqZeroPoints(const BlockQuantized& q, bool transposed);

/// ONNX Runtime's MatMulNBits layout (4 bits): B uint8 [N, blocks, blockSize / 2], unsigned
/// codes (symmetric codes shifted by 8, MatMulNBits' default zero point), two per byte, the
/// element of even K index in the low nibble; the rows past K in the last block hold the code
/// of 0 (the zero point), as ONNX Runtime's quantizer pads the weight with zeros.
struct OrtPacked {
  std::vector<uint8_t> b;
  std::vector<double> scales;       // [N * blocks], column-major over blocks (n * blocks + b)
  std::vector<uint8_t> zeroPoints;  // [N * ceil(blocks / 2)], empty when symmetric
};
OrtPacked packForOrt(const BlockQuantized& q);

/// 10 * log10(|reference|^2 / |reference - approx|^2); +inf when equal.
double sqnrDb(const std::vector<double>& reference, const std::vector<double>& approx);

}  // namespace qopt::wq
