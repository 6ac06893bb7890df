// The scale arithmetic insert-qdq and static-quant share (qopt/qdq/QuantNumbers.h).
#include "qopt/qdq/QuantNumbers.h"

#include <gtest/gtest.h>

#include <vector>

#include "qopt/ir/Error.h"

namespace qopt::qdq {
namespace {

quant::TensorStatistics statsOf(std::vector<float> values) {
  quant::TensorStatistics stats;
  stats.add(values);
  return stats;
}

quant::CalibratorSpec maxSpec() {
  quant::CalibratorSpec spec;
  spec.kind = quant::CalibratorKind::Max;
  return spec;
}

TEST(ActivationParams, SymmetricScaleIsAmaxOver127) {
  ActivationParams p = activationParams(statsOf({-0.5f, 1.27f, 0.25f}), maxSpec(),
                                        ActivationScheme::SignedSymmetric);
  EXPECT_FLOAT_EQ(p.scale, 0.01f);
  EXPECT_EQ(p.zeroPoint, 0);
  EXPECT_FALSE(p.isUnsigned);
  EXPECT_FALSE(p.zeroRange);
}

TEST(ActivationParams, AsymmetricNonNegativeUsesZeroPointZero) {
  ActivationParams p = activationParams(statsOf({0.0f, 2.55f, 1.0f}), maxSpec(),
                                        ActivationScheme::UnsignedAsymmetric);
  EXPECT_FLOAT_EQ(p.scale, 0.01f);
  EXPECT_EQ(p.zeroPoint, 0);
  EXPECT_TRUE(p.isUnsigned);
}

TEST(ActivationParams, AsymmetricRangeWidenedToIncludeZero) {
  // All values negative: the range is [-2.55, 0] and zero maps to 255.
  ActivationParams p =
      activationParams(statsOf({-2.55f, -1.0f}), maxSpec(), ActivationScheme::UnsignedAsymmetric);
  EXPECT_FLOAT_EQ(p.scale, 0.01f);
  EXPECT_EQ(p.zeroPoint, 255);
  EXPECT_FLOAT_EQ(p.rangeMax, 0.0f);
}

TEST(ActivationParams, ZeroRangeGetsTinyPositiveScale) {
  for (ActivationScheme scheme :
       {ActivationScheme::SignedSymmetric, ActivationScheme::UnsignedAsymmetric}) {
    ActivationParams p = activationParams(statsOf({0.0f, 0.0f}), maxSpec(), scheme);
    EXPECT_TRUE(p.zeroRange);
    EXPECT_EQ(p.scale, kZeroRangeScale);
    EXPECT_GT(p.scale, 0.0f);
    EXPECT_EQ(p.zeroPoint, 0);
  }
}

TEST(QuantizeWeight, PerChannelRoundsHalfToEvenAndSaturates) {
  // Channel 0 (axis 0): amax 1 -> scale 1/127; -0.5 * 127 = -63.5 -> -64 (even).
  // Channel 1: amax 2 -> scale 2/127; 0.25 / (2/127) = 15.875 -> 16.
  std::vector<float> w{1.0f, -0.5f, 0.25f, 2.0f};
  QuantizedWeight q = quantizeWeight(Tensor::fromFloats({2, 2}, w), 0, "w");
  EXPECT_EQ(q.axis, 0);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_FLOAT_EQ(q.scales[0], 1.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[1], 2.0f / 127);
  EXPECT_EQ(q.values.dataType(), DataType::Int8);
  EXPECT_EQ(q.values.toInt64s(), (std::vector<int64_t>{127, -64, 16, 127}));
}

TEST(QuantizeWeight, LastAxisAndZeroChannel) {
  // [2, 3] on axis 1: columns {1, -4}, {0, 0}, {0.5, 0.25}.
  std::vector<float> w{1.0f, 0.0f, 0.5f, -4.0f, 0.0f, 0.25f};
  QuantizedWeight q = quantizeWeight(Tensor::fromFloats({2, 3}, w), 1, "w");
  ASSERT_EQ(q.scales.size(), 3u);
  EXPECT_FLOAT_EQ(q.scales[0], 4.0f / 127);
  EXPECT_EQ(q.scales[1], kZeroRangeScale);
  EXPECT_EQ(q.zeroChannels, 1);
  EXPECT_EQ(q.values.toInt64s(), (std::vector<int64_t>{32, 0, 127, -127, 0, 64}));
}

TEST(QuantizeWeight, PerTensor) {
  std::vector<float> w{0.5f, -1.0f, 0.25f};
  QuantizedWeight q = quantizeWeight(Tensor::fromFloats({3}, w), -1, "w");
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.values.toInt64s(), (std::vector<int64_t>{64, -127, 32}));
}

TEST(QuantizeBias, Int32WithProductScalePerChannel) {
  std::vector<float> b{0.1f, -0.1f};
  QuantizedBias q = quantizeBias(Tensor::fromFloats({2}, b), 0.01f, {0.01f, 0.02f}, "b");
  EXPECT_EQ(q.values.dataType(), DataType::Int32);
  EXPECT_EQ(q.values.toInt64s(), (std::vector<int64_t>{1000, -500}));
  EXPECT_FLOAT_EQ(q.scales[1], 0.0002f);
}

TEST(QuantizeBias, RejectsMismatchedChannels) {
  std::vector<float> b{0.1f, -0.1f, 0.0f};
  EXPECT_THROW(quantizeBias(Tensor::fromFloats({3}, b), 0.01f, {0.01f, 0.02f}, "b"), Error);
}

}  // namespace
}  // namespace qopt::qdq
