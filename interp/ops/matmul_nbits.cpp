// ONNX Runtime's com.microsoft MatMulNBits: Y = A * dequantize(B)^T + bias, with B an N x K weight
// quantized blockwise along K into `bits`-bit unsigned codes.
//
// Layout (ONNX Runtime's docs/ContribOperators.md and its matmul_nbits quantizer):
//   B            uint8 [N, k_blocks, blob_size], k_blocks = ceil(K / block_size),
//                blob_size = block_size * bits / 8; codes packed low bits first along K. The last
//                block of a K that is not a multiple of block_size is padded (never read).
//   scales       [N * k_blocks] (or [N, k_blocks]) of A's type.
//   zero_points  optional: uint8 packed like B, ceil(k_blocks * bits / 8) bytes per column, or
//                unpacked [N * k_blocks] of A's type; absent means 2^(bits-1) (8 for 4 bits).
//   g_idx        deprecated act-order indices: refused.
//   bias         optional [N] of A's type.
// Element (n, k) dequantizes to (code - zero_point) * scale in float; the product runs in float
// (accuracy_level 0, ONNX Runtime's most accurate mode) and rounds once to A's type.
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "KernelSupport.h"
#include "MatrixMultiply.h"
#include "ThreadPool.h"

namespace qopt::interp {

namespace {

struct NBitsLayout {
  int64_t k = 0;
  int64_t n = 0;
  int64_t bits = 4;
  int64_t blockSize = 0;
  int64_t blocksPerColumn = 0;
  int64_t blobSize = 0;
  int64_t zeroPointBytesPerColumn = 0;
};

NBitsLayout readLayout(const KernelContext& ctx) {
  NBitsLayout l;
  l.k = ctx.node.attrInt("K", -1);
  l.n = ctx.node.attrInt("N", -1);
  l.bits = ctx.node.attrInt("bits", 4);
  l.blockSize = ctx.node.attrInt("block_size", -1);
  if (l.k <= 0 || l.n <= 0) {
    ctx.fail(fmt::format("attributes K and N must be positive, got K={} N={}", l.k, l.n));
  }
  if (l.bits != 2 && l.bits != 4 && l.bits != 8) {
    ctx.fail(fmt::format("bits must be 2, 4 or 8, got {}", l.bits));
  }
  // ONNX Runtime's kernels take power-of-two blocks of at least 16 elements.
  if (l.blockSize < 16 || (l.blockSize & (l.blockSize - 1)) != 0) {
    ctx.fail(fmt::format("block_size must be a power of two >= 16, got {}", l.blockSize));
  }
  l.blocksPerColumn = (l.k + l.blockSize - 1) / l.blockSize;
  l.blobSize = l.blockSize * l.bits / 8;
  l.zeroPointBytesPerColumn = (l.blocksPerColumn * l.bits + 7) / 8;
  return l;
}

// Code `index` of a low-bits-first packed byte stream.
inline int32_t unpackCode(const uint8_t* packed, int64_t index, int64_t bits) {
  const int64_t perByte = 8 / bits;
  const uint8_t byte = packed[index / perByte];
  const auto shift = static_cast<unsigned>((index % perByte) * bits);
  return static_cast<int32_t>((byte >> shift) & ((1u << bits) - 1u));
}

std::vector<float> floatsOf(const Array& a) {
  std::vector<float> out(static_cast<size_t>(a.numel()));
  dispatchFloat(a.dataType(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = a.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(toCompute(p[i]));
  });
  return out;
}

// The dequantized weight as a K x N row-major float matrix (what MatMul would multiply by).
std::vector<float> dequantizeWeight(const KernelContext& ctx, const NBitsLayout& l,
                                    DataType floatType) {
  const Array& b = ctx.in(1);
  const Array& scalesArray = ctx.in(2);
  const Array* zp = ctx.optIn(3);
  if (b.dataType() != DataType::UInt8) {
    ctx.fail(fmt::format("B must be uint8, got {}", dataTypeName(b.dataType())));
  }
  if (b.shape() != Shape{l.n, l.blocksPerColumn, l.blobSize}) {
    ctx.fail(fmt::format("B must have shape [{},{},{}] (N, k_blocks, blob_size), got {}", l.n,
                         l.blocksPerColumn, l.blobSize, shapeString(b.shape())));
  }
  const int64_t paramCount = l.n * l.blocksPerColumn;
  if (scalesArray.dataType() != floatType) {
    ctx.fail(fmt::format("scales must have A's type {}, got {}", dataTypeName(floatType),
                         dataTypeName(scalesArray.dataType())));
  }
  if (scalesArray.numel() != paramCount) {
    ctx.fail(fmt::format("scales must hold N * k_blocks = {} values, got shape {}", paramCount,
                         shapeString(scalesArray.shape())));
  }
  const std::vector<float> scales = floatsOf(scalesArray);
  // Zero point per (column, block), as float so that unpacked float zero points fit too.
  std::vector<float> zeroPoints(static_cast<size_t>(paramCount),
                                static_cast<float>(1 << (l.bits - 1)));
  if (zp != nullptr && zp->numel() > 0) {
    if (zp->dataType() == DataType::UInt8) {
      if (zp->numel() != l.n * l.zeroPointBytesPerColumn) {
        ctx.fail(
            fmt::format("packed uint8 zero_points must hold N * ceil(k_blocks * bits / 8) = "
                        "{} bytes, got shape {}",
                        l.n * l.zeroPointBytesPerColumn, shapeString(zp->shape())));
      }
      const uint8_t* packed = zp->data<uint8_t>();
      for (int64_t col = 0; col < l.n; ++col) {
        for (int64_t blk = 0; blk < l.blocksPerColumn; ++blk) {
          zeroPoints[static_cast<size_t>(col * l.blocksPerColumn + blk)] =
              static_cast<float>(unpackCode(packed + col * l.zeroPointBytesPerColumn, blk, l.bits));
        }
      }
    } else if (zp->dataType() == floatType) {
      if (zp->numel() != paramCount) {
        ctx.fail(fmt::format("zero_points of A's type must hold N * k_blocks = {} values, got {}",
                             paramCount, shapeString(zp->shape())));
      }
      zeroPoints = floatsOf(*zp);
    } else {
      ctx.fail(fmt::format("zero_points must be uint8 or A's type {}, got {}",
                           dataTypeName(floatType), dataTypeName(zp->dataType())));
    }
  }
  const auto* packed = b.data<uint8_t>();
  std::vector<float> w(static_cast<size_t>(l.k * l.n));
  for (int64_t col = 0; col < l.n; ++col) {
    for (int64_t blk = 0; blk < l.blocksPerColumn; ++blk) {
      const size_t p = static_cast<size_t>(col * l.blocksPerColumn + blk);
      const uint8_t* blob = packed + (col * l.blocksPerColumn + blk) * l.blobSize;
      const int64_t first = blk * l.blockSize;
      const int64_t count = std::min(l.blockSize, l.k - first);
      for (int64_t i = 0; i < count; ++i) {
        const float code = static_cast<float>(unpackCode(blob, i, l.bits));
        w[static_cast<size_t>((first + i) * l.n + col)] = (code - zeroPoints[p]) * scales[p];
      }
    }
  }
  return w;
}

void matMulNBitsKernel(KernelContext& ctx) {
  const Array& a = ctx.in(0);
  const DataType floatType = a.dataType();
  if (floatType != DataType::Float && floatType != DataType::Float16 &&
      floatType != DataType::BFloat16) {
    ctx.fail(fmt::format("A must be float, float16 or bfloat16, got {}", dataTypeName(floatType)));
  }
  const NBitsLayout l = readLayout(ctx);
  if (a.rank() < 1 || a.dim(-1) != l.k) {
    ctx.fail(fmt::format("A's last dim must be K={}, got shape {}", l.k, shapeString(a.shape())));
  }
  if (const Array* gIdx = ctx.optIn(4); gIdx != nullptr && gIdx->numel() > 0) {
    ctx.fail("g_idx (act-order) is not supported");
  }
  const std::vector<float> w = dequantizeWeight(ctx, l, floatType);
  const std::vector<float> x = floatsOf(a);
  const int64_t m = a.numel() / l.k;
  std::vector<float> y(static_cast<size_t>(m * l.n), 0.0f);
  gemm(false, false, m, l.n, l.k, 1.0f, x.data(), l.k, w.data(), l.n, 0.0f, y.data(), l.n,
       ctx.pool);
  if (const Array* bias = ctx.optIn(5); bias != nullptr && bias->numel() > 0) {
    if (bias->dataType() != floatType || bias->numel() != l.n) {
      ctx.fail(fmt::format("bias must be {} of N={} values, got {} of shape {}",
                           dataTypeName(floatType), l.n, dataTypeName(bias->dataType()),
                           shapeString(bias->shape())));
    }
    const std::vector<float> bv = floatsOf(*bias);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < l.n; ++j)
        y[static_cast<size_t>(i * l.n + j)] += bv[static_cast<size_t>(j)];
    }
  }
  Shape outShape = a.shape();
  outShape.back() = l.n;
  Array out(floatType, outShape);
  dispatchFloat(floatType, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    for (size_t i = 0; i < y.size(); ++i) p[i] = fromCompute<T>(y[i]);
  });
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void registerMatMulNBitsKernels(KernelRegistry& registry) {
  registry.add("com.microsoft", "MatMulNBits", 1, matMulNBitsKernel);
}

}  // namespace qopt::interp
