// com.microsoft MatMulNBits against a direct double-precision reference built from unpacked
// codes: packing (low bits first, per column and block), block tails of a K that is not a
// multiple of block_size, default and packed zero points, float zero points, bias, float16 A,
// and the errors for malformed inputs. tests/ort/int4_weights_test.py checks the same kernel
// against ONNX Runtime itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::makeArray;
using testing::SingleOp;

struct Case {
  int64_t m, k, n, blockSize, bits;
  bool zeroPoints, bias;
};

struct Built {
  Array a, b, scales, zp, bias;
  std::vector<double> expected;  // m x n
};

// Packs codes (one per element, `bits` wide) low bits first into bytes of `count` codes.
std::vector<uint8_t> pack(const std::vector<int>& codes, int64_t bits) {
  const int64_t perByte = 8 / bits;
  std::vector<uint8_t> out(
      (codes.size() + static_cast<size_t>(perByte) - 1) / static_cast<size_t>(perByte), 0);
  for (size_t i = 0; i < codes.size(); ++i) {
    out[i / static_cast<size_t>(perByte)] |=
        static_cast<uint8_t>(codes[i] << ((static_cast<int64_t>(i) % perByte) * bits));
  }
  return out;
}

Built build(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(0, (1 << c.bits) - 1);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const int64_t blocks = (c.k + c.blockSize - 1) / c.blockSize;
  const int64_t blob = c.blockSize * c.bits / 8;
  Built out;
  std::vector<float> a(static_cast<size_t>(c.m * c.k));
  for (float& v : a) v = unit(rng);
  std::vector<float> scales(static_cast<size_t>(c.n * blocks));
  for (float& s : scales) s = 0.01f + std::fabs(unit(rng)) * 0.1f;
  std::vector<int> zps(static_cast<size_t>(c.n * blocks), 1 << (c.bits - 1));
  if (c.zeroPoints) {
    for (int& z : zps) z = code(rng);
  }
  std::vector<uint8_t> b;
  std::vector<double> w(static_cast<size_t>(c.n * c.k));  // n x k, dequantized
  for (int64_t col = 0; col < c.n; ++col) {
    for (int64_t blk = 0; blk < blocks; ++blk) {
      std::vector<int> codes(static_cast<size_t>(c.blockSize));
      for (int64_t i = 0; i < c.blockSize; ++i) {
        // Rows past K are padding: random there too, so reading them would show.
        codes[static_cast<size_t>(i)] = code(rng);
        const int64_t k = blk * c.blockSize + i;
        if (k >= c.k) continue;
        const size_t p = static_cast<size_t>(col * blocks + blk);
        w[static_cast<size_t>(col * c.k + k)] =
            (codes[static_cast<size_t>(i)] - zps[p]) * static_cast<double>(scales[p]);
      }
      std::vector<uint8_t> packed = pack(codes, c.bits);
      EXPECT_EQ(static_cast<int64_t>(packed.size()), blob);
      b.insert(b.end(), packed.begin(), packed.end());
    }
  }
  std::vector<float> bias(static_cast<size_t>(c.n));
  for (float& v : bias) v = unit(rng);
  out.expected.assign(static_cast<size_t>(c.m * c.n), 0.0);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = c.bias ? bias[static_cast<size_t>(j)] : 0.0;
      for (int64_t k = 0; k < c.k; ++k) {
        sum += static_cast<double>(a[static_cast<size_t>(i * c.k + k)]) *
               w[static_cast<size_t>(j * c.k + k)];
      }
      out.expected[static_cast<size_t>(i * c.n + j)] = sum;
    }
  }
  out.a = makeArray(DataType::Float, {c.m, c.k}, a);
  out.b = makeArray(DataType::UInt8, {c.n, blocks, blob}, b);
  out.scales = makeArray(DataType::Float, {c.n * blocks}, scales);
  if (c.zeroPoints) {
    // Per column ceil(blocks * bits / 8) bytes: the columns do not share a byte.
    std::vector<uint8_t> zpBytes;
    for (int64_t col = 0; col < c.n; ++col) {
      std::vector<int> column(zps.begin() + col * blocks, zps.begin() + (col + 1) * blocks);
      std::vector<uint8_t> packed = pack(column, c.bits);
      zpBytes.insert(zpBytes.end(), packed.begin(), packed.end());
    }
    out.zp = makeArray(DataType::UInt8, {static_cast<int64_t>(zpBytes.size())}, zpBytes);
  }
  if (c.bias) out.bias = makeArray(DataType::Float, {c.n}, bias);
  return out;
}

// A MatMulNBits node with the attributes of case c and these inputs (an invalid Array for an
// omitted one).
SingleOp nodeOf(const Case& c, const std::vector<Array>& inputs) {
  SingleOp node("MatMulNBits", 1, "com.microsoft");
  for (const Array& a : inputs) node.input(a);
  node.attr("K", c.k).attr("N", c.n).attr("bits", c.bits).attr("block_size", c.blockSize);
  return node;
}

SingleOp op(const Case& c, const Built& built) {
  std::vector<Array> inputs = {built.a, built.b, built.scales};
  if (c.zeroPoints) {
    inputs.push_back(built.zp);
  } else if (c.bias) {
    inputs.emplace_back();
  }
  if (c.bias) {
    inputs.emplace_back();  // g_idx
    inputs.push_back(built.bias);
  }
  return nodeOf(c, inputs);
}

void expectClose(const Array& y, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(static_cast<size_t>(y.numel()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(y.getDouble(static_cast<int64_t>(i)), expected[i],
                tolerance * (1.0 + std::fabs(expected[i])))
        << "element " << i;
  }
}

Array halves(Shape shape, const std::vector<float>& values) {
  Array a(DataType::Float16, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) a.data<uint16_t>()[i] = floatToHalfBits(values[i]);
  return a;
}

class MatMulNBitsCases : public ::testing::TestWithParam<Case> {};

TEST_P(MatMulNBitsCases, MatchesDirectReference) {
  const Case c = GetParam();
  Built built = build(c, static_cast<uint32_t>(c.k * 131 + c.n * 7 + c.blockSize));
  Array y = op(c, built).run1();
  EXPECT_EQ(y.shape(), (Shape{c.m, c.n}));
  expectClose(y, built.expected, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatMulNBitsCases,
    ::testing::Values(Case{3, 64, 16, 16, 4, false, false},  // whole blocks, default zero point
                      Case{5, 37, 19, 16, 4, true, true},    // odd K (tail of 5) and N
                      Case{2, 100, 33, 32, 4, true, false},  // tail of 4, odd blocks: 4 per column
                      Case{4, 300, 17, 64, 4, false, true},  // tail of 44
                      Case{1, 129, 16, 128, 4, true, true},  // tail of 1
                      Case{3, 513, 21, 256, 4, true, false},
                      Case{2, 40, 16, 16, 8, true, true},    // 8-bit codes
                      Case{2, 70, 18, 32, 2, true, false}),  // 2-bit codes, 4 per byte
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      return "K" + std::to_string(c.k) + "N" + std::to_string(c.n) + "B" +
             std::to_string(c.blockSize) + "bits" + std::to_string(c.bits) +
             (c.zeroPoints ? "Zp" : "") + (c.bias ? "Bias" : "");
    });

TEST(MatMulNBits, BatchedInputKeepsLeadingDims) {
  Case c{6, 48, 16, 16, 4, true, true};
  Built built = build(c, 5);
  built.a = built.a.reshaped({2, 3, 48});
  Array y = op(c, built).run1();
  EXPECT_EQ(y.shape(), (Shape{2, 3, 16}));
  expectClose(y, built.expected, 1e-5);
}

TEST(MatMulNBits, FloatZeroPointsOfAsType) {
  Case c{2, 32, 16, 16, 4, false, false};
  Built built = build(c, 9);
  // Unpacked float zero points of 8 equal the default.
  std::vector<float> zp(static_cast<size_t>(16 * 2), 8.0f);
  Array y =
      nodeOf(c, {built.a, built.b, built.scales, makeArray(DataType::Float, {32}, zp)}).run1();
  expectClose(y, built.expected, 1e-5);
}

TEST(MatMulNBits, Float16InputRoundsOnceToHalf) {
  Case c{2, 32, 16, 16, 4, false, false};
  Built built = build(c, 11);
  std::vector<float> a = built.a.toFloatVector();
  std::vector<float> s = built.scales.toFloatVector();
  // The reference from the half-rounded inputs, computed in double.
  Array halfA = halves({2, 32}, a);
  Array halfS = halves({32}, s);
  Array y = nodeOf(c, {halfA, built.b, halfS}).run1();
  ASSERT_EQ(y.dataType(), DataType::Float16);
  Array yFloat = nodeOf(c, {testing::floats({2, 32}, halfA.toFloatVector()), built.b,
                            testing::floats({32}, halfS.toFloatVector())})
                     .run1();
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_EQ(floatToHalfBits(static_cast<float>(yFloat.getDouble(i))), y.data<uint16_t>()[i]);
  }
}

TEST(MatMulNBits, RejectsMalformedInputs) {
  Case c{2, 37, 16, 16, 4, true, true};
  Built built = build(c, 3);
  Case badBlockSize = c;
  badBlockSize.blockSize = 24;
  const std::vector<std::pair<Case, std::vector<Array>>> malformed = {
      // B with one block too few.
      {c,
       {built.a, makeArray(DataType::UInt8, {16, 2, 8}, std::vector<uint8_t>(256, 0)),
        built.scales}},
      // block_size not a power of two.
      {badBlockSize, {built.a, built.b, built.scales}},
      // g_idx (act order) present.
      {c,
       {built.a, built.b, built.scales, built.zp,
        makeArray(DataType::Int32, {37}, std::vector<int32_t>(37, 0))}},
      // A whose last dim is not K.
      {c, {testing::floats({1, 36}, std::vector<float>(36, 1.0f)), built.b, built.scales}},
  };
  for (size_t i = 0; i < malformed.size(); ++i) {
    EXPECT_THROW(nodeOf(malformed[i].first, malformed[i].second).run1(), Error) << "input " << i;
  }
}

}  // namespace
}  // namespace qopt::interp
