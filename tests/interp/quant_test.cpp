// QuantizeLinear / DequantizeLinear (per tensor, per axis, blocked; 4-, 8-, 16-bit and int32;
// the float8 types; float16 scales), half-to-even rounding with saturation, and
// DynamicQuantizeLinear.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../../interp/ops/QuantMath.h"
#include "qopt/ir/Float8.h"

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::errorMessage;
using testing::floats;
using testing::makeArray;
using testing::SingleOp;
using testing::values;

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  Array x = floats({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300, -300, 0.49f});
  Array y = SingleOp("QuantizeLinear", 13)
                .input(x)
                .input(floats({}, {1}))
                .input(makeArray<int8_t>(DataType::Int8, {}, {0}))
                .run1();
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{0, 2, 2, 0, -2, 127, -128, 0}));
  Array u = SingleOp("QuantizeLinear", 13)
                .input(x)
                .input(floats({}, {2}))
                .input(makeArray<uint8_t>(DataType::UInt8, {}, {10}))
                .run1();
  // x / 2 + 10: 10.25, 10.75, 11.25, 9.75, 9.25, 160, -140, 10.245.
  EXPECT_EQ(values<uint8_t>(u), (std::vector<uint8_t>{10, 11, 11, 10, 9, 160, 0, 10}));
}

TEST(QuantizeLinear, DefaultsToUint8WithoutZeroPoint) {
  Array y =
      SingleOp("QuantizeLinear", 13).input(floats({2}, {-1, 1000})).input(floats({}, {1})).run1();
  ASSERT_EQ(y.dataType(), DataType::UInt8);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{0, 255}));
}

TEST(QuantizeLinear, PerAxis) {
  Array x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Array y = SingleOp("QuantizeLinear", 13)
                .input(x)
                .input(floats({3}, {1, 2, 4}))
                .input(makeArray<int8_t>(DataType::Int8, {3}, {0, 1, -1}))
                .attr("axis", int64_t{1})
                .run1();
  // Column-wise: x / {1,2,4} + {0,1,-1}.
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{1, 2, 0, 4, 3, 1}));
}

TEST(QuantizeLinear, BlockedOpset21) {
  Array x = floats({1, 4}, {1, 2, 30, 40});
  Array y = SingleOp("QuantizeLinear", 21)
                .input(x)
                .input(floats({1, 2}, {1, 10}))
                .input(makeArray<int8_t>(DataType::Int8, {1, 2}, {0, 0}))
                .attr("axis", int64_t{1})
                .attr("block_size", int64_t{2})
                .run1();
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{1, 2, 3, 4}));
}

TEST(QuantizeLinear, FourAndSixteenBitTypes) {
  Array x = floats({4}, {-20, -3.5f, 2.5f, 20});
  Array i4 = SingleOp("QuantizeLinear", 21)
                 .input(x)
                 .input(floats({}, {1}))
                 .input(makeArray<int8_t>(DataType::Int4, {}, {0}))
                 .run1();
  ASSERT_EQ(i4.dataType(), DataType::Int4);
  EXPECT_EQ(values<int8_t>(i4), (std::vector<int8_t>{-8, -4, 2, 7}));
  Array u4 = SingleOp("QuantizeLinear", 21)
                 .input(x)
                 .input(floats({}, {1}))
                 .input(makeArray<uint8_t>(DataType::UInt4, {}, {8}))
                 .run1();
  EXPECT_EQ(values<uint8_t>(u4), (std::vector<uint8_t>{0, 4, 10, 15}));
  Array i16 = SingleOp("QuantizeLinear", 21)
                  .input(x)
                  .input(floats({}, {0.0001f}))
                  .input(makeArray<int16_t>(DataType::Int16, {}, {0}))
                  .run1();
  EXPECT_EQ(values<int16_t>(i16), (std::vector<int16_t>{-32768, -32768, 25000, 32767}));
  // 16-bit output types need opset 21.
  EXPECT_THROW(SingleOp("QuantizeLinear", 19)
                   .input(x)
                   .input(floats({}, {1}))
                   .input(makeArray<int16_t>(DataType::Int16, {}, {0}))
                   .run1(),
               Error);
}

TEST(QuantizeLinear, Float16ScaleAndInput) {
  Array x(DataType::Float16, {2});
  x.data<uint16_t>()[0] = floatToHalfBits(3.0f);
  x.data<uint16_t>()[1] = floatToHalfBits(-1.0f);
  Array s(DataType::Float16, {});
  s.data<uint16_t>()[0] = floatToHalfBits(0.5f);
  Array y = SingleOp("QuantizeLinear", 19)
                .input(x)
                .input(s)
                .input(makeArray<int8_t>(DataType::Int8, {}, {1}))
                .run1();
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{7, -1}));
}

TEST(DequantizeLinear, PerTensorPerAxisAndInt32) {
  Array x = makeArray<uint8_t>(DataType::UInt8, {2, 2}, {0, 128, 255, 130});
  Array y = SingleOp("DequantizeLinear", 13)
                .input(x)
                .input(floats({}, {0.5f}))
                .input(makeArray<uint8_t>(DataType::UInt8, {}, {128}))
                .run1();
  EXPECT_EQ(values<float>(y), (std::vector<float>{-64, 0, 63.5f, 1}));
  Array ya = SingleOp("DequantizeLinear", 13)
                 .input(x)
                 .input(floats({2}, {1, 2}))
                 .input(makeArray<uint8_t>(DataType::UInt8, {2}, {0, 128}))
                 .attr("axis", int64_t{0})
                 .run1();
  EXPECT_EQ(values<float>(ya), (std::vector<float>{0, 128, 254, 4}));
  Array i32 = makeArray<int32_t>(DataType::Int32, {2}, {-1000000, 7});
  Array yi = SingleOp("DequantizeLinear", 13).input(i32).input(floats({}, {0.001f})).run1();
  EXPECT_NEAR(yi.data<float>()[0], -1000.0f, 1e-3);
  EXPECT_NEAR(yi.data<float>()[1], 0.007f, 1e-6);
}

TEST(DequantizeLinear, Int4PerAxisAndBlockedWithAPartialBlock) {
  Array x = makeArray<int8_t>(DataType::Int4, {2, 3}, {-8, 7, 1, 2, -2, 0});
  Array y = SingleOp("DequantizeLinear", 21)
                .input(x)
                .input(floats({2}, {0.5f, 2}))
                .input(makeArray<int8_t>(DataType::Int4, {2}, {0, -1}))
                .attr("axis", int64_t{0})
                .run1();
  EXPECT_EQ(values<float>(y), (std::vector<float>{-4, 3.5f, 0.5f, 6, -2, 2}));
  // Blocks of 2 along axis 1 of length 3: columns {0, 1} and {2}.
  Array b = SingleOp("DequantizeLinear", 21)
                .input(x)
                .input(floats({2, 2}, {1, 10, 100, 1000}))
                .attr("axis", int64_t{1})
                .attr("block_size", int64_t{2})
                .run1();
  EXPECT_EQ(values<float>(b), (std::vector<float>{-8, 7, 10, 200, -200, 0}));
}

TEST(DequantizeLinear, OutputTakesTheScaleType) {
  Array x = makeArray<int8_t>(DataType::Int8, {2}, {-4, 6});
  Array s(DataType::Float16, {});
  s.data<uint16_t>()[0] = floatToHalfBits(0.25f);
  Array y = SingleOp("DequantizeLinear", 19).input(x).input(s).run1();
  ASSERT_EQ(y.dataType(), DataType::Float16);
  EXPECT_EQ(halfBitsToFloat(y.data<uint16_t>()[0]), -1.0f);
  EXPECT_EQ(halfBitsToFloat(y.data<uint16_t>()[1]), 1.5f);
}

TEST(DequantizeLinear, WrongScaleLengthIsAnError) {
  Array x = makeArray<int8_t>(DataType::Int8, {2, 3}, {1, 2, 3, 4, 5, 6});
  try {
    SingleOp("DequantizeLinear", 13)
        .input(x)
        .input(floats({2}, {1, 2}))
        .attr("axis", int64_t{1})
        .run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("per-axis scale"), std::string::npos) << e.what();
  }
}

TEST(DynamicQuantizeLinear, ScaleAndZeroPointFromTheRange) {
  Array x = floats({4}, {-1, 0, 1, 2.5f});
  std::vector<Array> r =
      SingleOp("DynamicQuantizeLinear", 11).input(x).outputs({true, true, true}).run();
  ASSERT_EQ(r.size(), 3u);
  const float scale = 3.5f / 255;
  EXPECT_EQ(r[1].data<float>()[0], scale);
  // zero point = round(0 - (-1) / scale) = round(72.857) = 73.
  EXPECT_EQ(r[2].data<uint8_t>()[0], 73);
  EXPECT_EQ(values<uint8_t>(r[0]), (std::vector<uint8_t>{0, 73, 146, 255}));
}

TEST(DynamicQuantizeLinear, AllZeroInputGetsScaleOne) {
  std::vector<Array> r = SingleOp("DynamicQuantizeLinear", 11)
                             .input(floats({3}, {0, 0, 0}))
                             .outputs({true, true, true})
                             .run();
  EXPECT_EQ(r[1].data<float>()[0], 1.0f);
  EXPECT_EQ(r[2].data<uint8_t>()[0], 0);
  EXPECT_EQ(values<uint8_t>(r[0]), (std::vector<uint8_t>{0, 0, 0}));
}

// ---------------------------------------------------------------------------------------------
// float8

constexpr DataType kFloat8Types[] = {DataType::Float8E4M3FN, DataType::Float8E4M3FNUZ,
                                     DataType::Float8E5M2, DataType::Float8E5M2FNUZ};

Array float8Zero(DataType type, Shape shape = {}) {
  return Array::zeros(type, std::move(shape));
}

// QuantizeLinear of `x` to `type` with scale 1 (or `scale`), opset 19, returning the codes.
std::vector<uint8_t> quantizeToFloat8(DataType type, const std::vector<float>& x,
                                      int64_t saturate = 1, float scale = 1) {
  Array y = SingleOp("QuantizeLinear", 19)
                .input(floats({static_cast<int64_t>(x.size())}, x))
                .input(floats({}, {scale}))
                .input(float8Zero(type))
                .attr("saturate", saturate)
                .run1();
  EXPECT_EQ(y.dataType(), type);
  return values<uint8_t>(y);
}

std::vector<float> dequantizeFloat8(DataType type, const std::vector<uint8_t>& codes,
                                    float scale = 1) {
  Array x = makeArray<uint8_t>(type, {static_cast<int64_t>(codes.size())}, codes);
  Array y = SingleOp("DequantizeLinear", 19).input(x).input(floats({}, {scale})).run1();
  return values<float>(y);
}

bool isNanCode(DataType type, uint8_t code) {
  return std::isnan(float8ToDouble(code, *float8Format(type)));
}

TEST(Float8, DecodesTheE4M3FNTable) {
  const Float8Format f = *float8Format(DataType::Float8E4M3FN);
  EXPECT_EQ(float8ToDouble(0x00, f), 0.0);
  EXPECT_TRUE(std::signbit(float8ToDouble(0x80, f)));
  EXPECT_EQ(float8ToDouble(0x01, f), std::ldexp(1.0, -9));  // the least subnormal
  EXPECT_EQ(float8ToDouble(0x07, f), 7 * std::ldexp(1.0, -9));
  EXPECT_EQ(float8ToDouble(0x08, f), std::ldexp(1.0, -6));  // the least normal
  EXPECT_EQ(float8ToDouble(0x38, f), 1.0);
  EXPECT_EQ(float8ToDouble(0x7E, f), 448.0);
  EXPECT_EQ(float8ToDouble(0xFE, f), -448.0);
  EXPECT_TRUE(std::isnan(float8ToDouble(0x7F, f)));
  EXPECT_TRUE(std::isnan(float8ToDouble(0xFF, f)));
  const Float8Format e5 = *float8Format(DataType::Float8E5M2);
  EXPECT_EQ(float8ToDouble(0x7B, e5), 57344.0);
  EXPECT_EQ(float8ToDouble(0x7C, e5), std::numeric_limits<double>::infinity());
  EXPECT_EQ(float8ToDouble(0xFC, e5), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(float8ToDouble(0x7D, e5)));
  EXPECT_EQ(float8ToDouble(0x7F, *float8Format(DataType::Float8E4M3FNUZ)), 240.0);
  EXPECT_TRUE(std::isnan(float8ToDouble(0x80, *float8Format(DataType::Float8E4M3FNUZ))));
  EXPECT_EQ(float8ToDouble(0x7F, *float8Format(DataType::Float8E5M2FNUZ)), 57344.0);
}

// Every finite code: DequantizeLinear gives its value exactly and QuantizeLinear gives it back,
// at scale 1 and at a power-of-two scale (both exact).
TEST(Float8, EveryValueRoundTripsInEachType) {
  for (DataType type : kFloat8Types) {
    for (float scale : {1.0f, 0.125f}) {
      std::vector<uint8_t> codes;
      for (int c = 0; c < 256; ++c) {
        if (!isNanCode(type, static_cast<uint8_t>(c))) codes.push_back(static_cast<uint8_t>(c));
      }
      std::vector<float> decoded = dequantizeFloat8(type, codes, scale);
      for (size_t i = 0; i < codes.size(); ++i) {
        const double expected = float8ToDouble(codes[i], *float8Format(type)) * scale;
        ASSERT_EQ(decoded[i], expected) << dataTypeName(type) << " code " << int(codes[i]);
        ASSERT_EQ(std::signbit(decoded[i]), std::signbit(expected));
      }
      std::vector<uint8_t> again = quantizeToFloat8(type, decoded, 0, scale);
      EXPECT_EQ(again, codes) << dataTypeName(type) << " scale " << scale;
    }
  }
}

// Halfway between two neighbours the even code wins; a hair off the middle, the nearer one.
TEST(Float8, RoundsHalfToEvenBetweenEveryPairOfNeighbours) {
  for (DataType type : kFloat8Types) {
    const Float8Format f = *float8Format(type);
    for (uint8_t c = 0; c < f.maxCode; ++c) {
      const double lo = float8ToDouble(c, f);
      const double hi = float8ToDouble(static_cast<uint8_t>(c + 1), f);
      const auto mid = static_cast<float>((lo + hi) / 2);  // exact: float has bits to spare
      ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
      const uint8_t even = (c % 2 == 0) ? c : static_cast<uint8_t>(c + 1);
      std::vector<uint8_t> got = quantizeToFloat8(
          type, {mid, std::nextafter(mid, 0.0f),
                 std::nextafter(mid, std::numeric_limits<float>::infinity()), -mid});
      ASSERT_EQ(got[0], even) << dataTypeName(type) << " between codes " << int(c);
      EXPECT_EQ(got[1], c);
      EXPECT_EQ(got[2], c + 1);
      EXPECT_EQ(got[3], f.fnuz && even == 0 ? 0 : (even | 0x80));
    }
  }
}

TEST(Float8, SubnormalsAndSignedZero) {
  const float tiny = std::ldexp(1.0f, -9);  // E4M3FN's least subnormal
  std::vector<uint8_t> got = quantizeToFloat8(
      DataType::Float8E4M3FN, {tiny, tiny / 2, tiny * 1.5f, tiny * 2.5f, tiny / 2 * 1.001f,
                               -tiny / 4, -0.0f, 0.0f, std::ldexp(1.0f, -6), 7.5f * tiny});
  // 2^-10 is a tie with 0 (even); 1.5 and 2.5 steps go to 2; -2^-11 is -0; 7.5 steps round up
  // into the first normal binade (0x08 = 2^-6).
  EXPECT_EQ(got,
            (std::vector<uint8_t>{0x01, 0x00, 0x02, 0x02, 0x01, 0x80, 0x80, 0x00, 0x08, 0x08}));
  // The FNUZ types have no -0.
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E4M3FNUZ, {-0.0f, -std::ldexp(1.0f, -12)}),
            (std::vector<uint8_t>{0x00, 0x00}));
}

TEST(Float8, SaturateClampsAndOtherwiseOverflowsAsTheTypeSays) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {464, 465, 1e6f, -1e6f, inf, -inf, 480, 449};
  // 464 is the tie between 448 and the (NaN) code above it: even, so 448 in both modes.
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E4M3FN, x, 1),
            (std::vector<uint8_t>{0x7E, 0x7E, 0x7E, 0xFE, 0x7E, 0xFE, 0x7E, 0x7E}));
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E4M3FN, x, 0),
            (std::vector<uint8_t>{0x7E, 0x7F, 0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0x7E}));
  // E5M2: 61440 is the tie between 57344 (odd mantissa) and infinity, so it overflows.
  const std::vector<float> big = {61440, 61439, 1e6f, -inf};
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E5M2, big, 1),
            (std::vector<uint8_t>{0x7B, 0x7B, 0x7B, 0xFB}));
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E5M2, big, 0),
            (std::vector<uint8_t>{0x7C, 0x7B, 0x7C, 0xFC}));
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E4M3FNUZ, {250, -inf}, 1),
            (std::vector<uint8_t>{0x7F, 0xFF}));
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E4M3FNUZ, {250, -inf}, 0),
            (std::vector<uint8_t>{0x80, 0x80}));
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E5M2FNUZ, {1e6f}, 0), (std::vector<uint8_t>{0x80}));
  // The default is saturate=1; scales apply before the rounding.
  Array y = SingleOp("QuantizeLinear", 19)
                .input(floats({2}, {1000, -900}))
                .input(floats({}, {2}))
                .input(float8Zero(DataType::Float8E4M3FN))
                .run1();
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{0x7E, 0xFE}));
}

TEST(Float8, NaNKeepsItsSignWhereTheTypeHasOne) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E4M3FN, {nan, -nan}),
            (std::vector<uint8_t>{0x7F, 0xFF}));
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E5M2, {nan, -nan}),
            (std::vector<uint8_t>{0x7F, 0xFF}));
  EXPECT_EQ(quantizeToFloat8(DataType::Float8E4M3FNUZ, {nan, -nan}),
            (std::vector<uint8_t>{0x80, 0x80}));
  std::vector<float> back = dequantizeFloat8(DataType::Float8E4M3FN, {0x7F, 0xFF, 0x7E});
  EXPECT_TRUE(std::isnan(back[0]));
  EXPECT_TRUE(std::isnan(back[1]));
  EXPECT_EQ(back[2], 448);
}

TEST(Float8, PerAxisAndBlocked) {
  Array x = floats({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // Quantize or dequantize along axis 0 with scales 1 and 1/4 and float8 zero points.
  auto perRow = [](const char* op, const Array& in) {
    return SingleOp(op, 19)
        .input(in)
        .input(floats({2}, {1, 0.25f}))
        .input(float8Zero(DataType::Float8E4M3FN, {2}))
        .attr("axis", int64_t{0})
        .run1();
  };
  Array perAxis = perRow("QuantizeLinear", x);
  // Row 0 at scale 1: 1, 2, 3, 4; row 1 at scale 1/4: 20, 24, 28, 32 (28 is exact: 1.75 * 16).
  EXPECT_EQ(values<uint8_t>(perAxis),
            (std::vector<uint8_t>{0x38, 0x40, 0x44, 0x48, 0x5A, 0x5C, 0x5E, 0x60}));
  Array back = perRow("DequantizeLinear", perAxis);
  EXPECT_EQ(values<float>(back), values<float>(x));
  Array blocked = SingleOp("QuantizeLinear", 21)
                      .input(x)
                      .input(floats({2, 2}, {1, 0.5f, 2, 4}))
                      .attr("axis", int64_t{1})
                      .attr("block_size", int64_t{2})
                      .attr("output_dtype", int64_t{17})
                      .run1();
  ASSERT_EQ(blocked.dataType(), DataType::Float8E4M3FN);
  // Blocks {1,2}/1, {3,4}/0.5, {5,6}/2, {7,8}/4: 1, 2, 6, 8, 2.5, 3, 1.75, 2.
  EXPECT_EQ(values<uint8_t>(blocked),
            (std::vector<uint8_t>{0x38, 0x40, 0x4C, 0x50, 0x42, 0x44, 0x3E, 0x40}));
}

TEST(Float8, Float16ScaleGivesFloat16Output) {
  Array s(DataType::Float16, {});
  s.data<uint16_t>()[0] = floatToHalfBits(0.5f);
  Array y = SingleOp("DequantizeLinear", 19)
                .input(makeArray<uint8_t>(DataType::Float8E4M3FN, {2}, {0x38, 0xFE}))
                .input(s)
                .run1();
  ASSERT_EQ(y.dataType(), DataType::Float16);
  EXPECT_EQ(halfBitsToFloat(y.data<uint16_t>()[0]), 0.5f);
  EXPECT_EQ(halfBitsToFloat(y.data<uint16_t>()[1]), -224.0f);
}

TEST(Float8, NonZeroZeroPointAndOldOpsetsAreErrors) {
  // Running `op` on `inputs` fails with a message that contains `expected`.
  auto expectError = [](const char* op, int64_t opset, std::vector<Array> inputs,
                        const char* expected) {
    SingleOp node(op, opset);
    for (Array& a : inputs) node.input(std::move(a));
    const std::string message = errorMessage([&] { node.run1(); });
    EXPECT_NE(message.find(expected), std::string::npos) << op << ": " << message;
  };
  expectError(
      "QuantizeLinear", 19,
      {floats({1}, {1}), floats({}, {1}), makeArray<uint8_t>(DataType::Float8E4M3FN, {}, {0x38})},
      "zero point must be 0");
  expectError("DequantizeLinear", 19,
              {makeArray<uint8_t>(DataType::Float8E5M2, {1}, {0x3C}), floats({}, {1}),
               makeArray<uint8_t>(DataType::Float8E5M2, {}, {0x3C})},
              "zero point must be 0");
  expectError("DequantizeLinear", 18,
              {makeArray<uint8_t>(DataType::Float8E4M3FN, {1}, {0x38}), floats({}, {1})},
              "needs opset 19");
}

// The per-row QuantizeLinear loop rounds with the float adder; it must give what the library's
// nearbyint gives: every tie k + 0.5 across the 16-bit ranges, values next to each tie, random
// values, saturation, infinities and NaN, with zero points inside the range.
TEST(QuantizeRounding, SmallRangeMatchesNearbyint) {
  struct Case {
    QuantRange range;
    int32_t zeroPoint;
  };
  const Case cases[] = {{{-128, 127}, 0}, {{0, 255}, 128},      {{-8, 7}, 0},
                        {{0, 15}, 3},     {{-32768, 32767}, 0}, {{0, 65535}, 40000}};
  std::vector<float> values = {0.0f,
                               -0.0f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               1e30f,
                               -1e30f,
                               std::numeric_limits<float>::denorm_min()};
  for (int k = -70000; k <= 70000; ++k) {
    const float tie = static_cast<float>(k) + 0.5f;
    values.push_back(tie);
    values.push_back(std::nextafter(tie, 1e9f));
    values.push_back(std::nextafter(tie, -1e9f));
  }
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(static_cast<float>(static_cast<int32_t>(state)) / 16384.0f);
  }
  for (const Case& c : cases) {
    ASSERT_TRUE(isSmallRange(c.range));
    const float lo = static_cast<float>(static_cast<int64_t>(c.range.min) - c.zeroPoint);
    const float hi = static_cast<float>(static_cast<int64_t>(c.range.max) - c.zeroPoint);
    for (float v : values) {
      ASSERT_EQ(quantizeSmallRange(v, c.zeroPoint, lo, hi), quantizeValue(v, c.zeroPoint, c.range))
          << "v = " << v << ", range [" << c.range.min << ", " << c.range.max << "], zero point "
          << c.zeroPoint;
    }
  }
  EXPECT_FALSE(isSmallRange({std::numeric_limits<int32_t>::min(), 0}));
}

}  // namespace
}  // namespace qopt::interp
