// QuantizeLinear / DequantizeLinear (per tensor, per axis, blocked; 4-, 8-, 16-bit and int32;
// float16 scales), half-to-even rounding with saturation, and DynamicQuantizeLinear.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

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

}  // namespace
}  // namespace qopt::interp
