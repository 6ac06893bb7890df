// Resize and Upsample: nearest rounding modes, linear and cubic interpolation under the
// coordinate transformations exporters emit, scales versus sizes, tf_crop_and_resize
// extrapolation, opset-18 axes, and the errors for what is not supported.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::floats;
using testing::SingleOp;
using testing::values;

Array row1234() {
  return floats({1, 4}, {1, 2, 3, 4});
}

std::vector<float> resizeScales(const char* mode, const char* coordinates, const char* nearest,
                                float scale) {
  return values<float>(SingleOp("Resize", 13)
                           .input(row1234())
                           .absent()
                           .input(floats({2}, {1, scale}))
                           .attr("mode", mode)
                           .attr("coordinate_transformation_mode", coordinates)
                           .attr("nearest_mode", nearest)
                           .run1());
}

std::vector<float> resizeSizes(const char* mode, const char* coordinates, int64_t size) {
  return values<float>(SingleOp("Resize", 13)
                           .input(row1234())
                           .absent()
                           .absent()
                           .input(testing::makeArray<int64_t>(DataType::Int64, {2}, {1, size}))
                           .attr("mode", mode)
                           .attr("coordinate_transformation_mode", coordinates)
                           .run1());
}

TEST(Resize, NearestRoundingModes) {
  using V = std::vector<float>;
  EXPECT_EQ(resizeScales("nearest", "half_pixel", "round_prefer_floor", 2),
            (V{1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(resizeScales("nearest", "asymmetric", "round_prefer_floor", 1.5f),
            (V{1, 2, 2, 3, 4, 4}));
  EXPECT_EQ(resizeScales("nearest", "asymmetric", "floor", 1.5f), (V{1, 1, 2, 3, 3, 4}));
  EXPECT_EQ(resizeScales("nearest", "asymmetric", "ceil", 1.5f), (V{1, 2, 3, 3, 4, 4}));
  EXPECT_EQ(resizeScales("nearest", "asymmetric", "round_prefer_floor", 2),
            (V{1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(resizeScales("nearest", "asymmetric", "round_prefer_ceil", 2),
            (V{1, 2, 2, 3, 3, 4, 4, 4}));
}

TEST(Resize, LinearCoordinateTransformations) {
  using V = std::vector<float>;
  EXPECT_EQ(resizeScales("linear", "half_pixel", "round_prefer_floor", 2),
            (V{1, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f, 4}));
  EXPECT_EQ(resizeSizes("linear", "align_corners", 7), (V{1, 1.5f, 2, 2.5f, 3, 3.5f, 4}));
  EXPECT_EQ(resizeScales("linear", "asymmetric", "round_prefer_floor", 2),
            (V{1, 1.5f, 2, 2.5f, 3, 3.5f, 4, 4}));
  // Down to one element: pytorch_half_pixel samples the first element, half_pixel the centre.
  EXPECT_EQ(resizeSizes("linear", "pytorch_half_pixel", 1), (V{1}));
  EXPECT_EQ(resizeSizes("linear", "half_pixel", 1), (V{2.5f}));
}

// Keys' cubic convolution with a = -0.5 reproduces linear functions exactly (with ONNX's
// default a = -0.75 it does not).
TEST(Resize, CubicWithHalfCoefficientReproducesLinearData) {
  std::vector<float> ramp(8);
  for (int i = 0; i < 8; ++i) ramp[static_cast<size_t>(i)] = static_cast<float>(i);
  for (int64_t exclude : {0, 1}) {
    Array y = SingleOp("Resize", 13)
                  .input(floats({1, 8}, ramp))
                  .absent()
                  .input(floats({2}, {1, 2}))
                  .attr("mode", "cubic")
                  .attr("cubic_coeff_a", -0.5f)
                  .attr("exclude_outside", exclude)
                  .run1();
    ASSERT_EQ(y.numel(), 16);
    // Output j samples input (j + 0.5) / 2 - 0.5; taps j/2 - 1 .. j/2 + 2 are inside for 4..11.
    for (int64_t j = 4; j < 12; ++j) {
      EXPECT_NEAR(y.data<float>()[j], (static_cast<float>(j) + 0.5f) / 2 - 0.5f, 1e-5) << j;
    }
  }
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  Array y = SingleOp("Resize", 13)
                .input(floats({4}, {1, 2, 3, 4}))
                .input(floats({2}, {0.5f, 1.5f}))
                .absent()
                .input(testing::makeArray<int64_t>(DataType::Int64, {1}, {3}))
                .attr("mode", "linear")
                .attr("coordinate_transformation_mode", "tf_crop_and_resize")
                .attr("extrapolation_value", 10.0f)
                .run1();
  // Samples at 1.5, 3 and 4.5 (outside).
  EXPECT_EQ(values<float>(y), (std::vector<float>{2.5f, 4, 10}));
}

TEST(Resize, Opset18AxesResizeOnlyTheListedAxes) {
  Array y = SingleOp("Resize", 18)
                .input(floats({2, 2}, {1, 2, 3, 4}))
                .absent()
                .absent()
                .input(testing::makeArray<int64_t>(DataType::Int64, {1}, {4}))
                .attr("axes", std::vector<int64_t>{-1})
                .run1();
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
}

TEST(Resize, NearestOnIntegers) {
  Array x = testing::makeArray<uint8_t>(DataType::UInt8, {1, 1, 1, 2}, {7, 9});
  Array y = SingleOp("Resize", 13).input(x).absent().input(floats({4}, {1, 1, 2, 2})).run1();
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{7, 7, 9, 9, 7, 7, 9, 9}));
}

// Nearest copies elements: -0.0 stays -0.0 and int64 values beyond float's 24-bit precision stay
// exact (a weighted sum in float would change both).
TEST(Resize, NearestCopiesValuesExactly) {
  Array x = floats({1, 2}, {-0.0f, 3.5f});
  Array y = SingleOp("Resize", 13).input(x).absent().input(floats({2}, {1, 2})).run1();
  std::vector<float> v = values<float>(y);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_TRUE(std::signbit(v[0]) && std::signbit(v[1]));
  EXPECT_EQ(v[2], 3.5f);
  const int64_t big = (int64_t{1} << 53) + 1;
  Array ints = testing::makeArray<int64_t>(DataType::Int64, {1, 1}, {big});
  Array z = SingleOp("Resize", 13).input(ints).absent().input(floats({2}, {2, 3})).run1();
  EXPECT_EQ(values<int64_t>(z), std::vector<int64_t>(6, big));
}

// Nearest over every axis of a 4-D tensor (the FPN upsampling of detectors), up and down, each
// output element the input element the ONNX formula names: x[n, c, floor(h / sh), floor(w / sw)].
TEST(Resize, NearestOverFourAxesIndexesEachAxis) {
  std::vector<float> data(2 * 3 * 4 * 5);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  Array x = floats({2, 3, 4, 5}, data);
  auto nearestFloor = [&](std::vector<float> scales) {
    return SingleOp("Resize", 13)
        .input(x)
        .absent()
        .input(floats({4}, std::move(scales)))
        .attr("coordinate_transformation_mode", "asymmetric")
        .attr("nearest_mode", "floor")
        .run1();
  };
  Array up = nearestFloor({1, 1, 2, 3});
  ASSERT_EQ(up.shape(), (Shape{2, 3, 8, 15}));
  std::vector<float> v = values<float>(up);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t h = 0; h < 8; ++h) {
        for (int64_t w = 0; w < 15; ++w) {
          const float expected = data[static_cast<size_t>(((n * 3 + c) * 4 + h / 2) * 5 + w / 3)];
          ASSERT_EQ(v[static_cast<size_t>(((n * 3 + c) * 8 + h) * 15 + w)], expected)
              << n << "," << c << "," << h << "," << w;
        }
      }
    }
  }
  Array down = nearestFloor({1, 1, 0.5f, 0.4f});
  ASSERT_EQ(down.shape(), (Shape{2, 3, 2, 2}));
  std::vector<float> d = values<float>(down);
  // w: floor(0 / 0.4) = 0, floor(1 / 0.4) = 2; h: 0, 2.
  EXPECT_EQ(d[0], data[0]);
  EXPECT_EQ(d[1], data[2]);
  EXPECT_EQ(d[2], data[10]);
  EXPECT_EQ(d[3], data[12]);
}

TEST(Resize, UnsupportedRequestsAreClearErrors) {
  try {
    SingleOp("Resize", 18)
        .input(row1234())
        .absent()
        .input(floats({2}, {1, 0.5f}))
        .attr("mode", "linear")
        .attr("antialias", int64_t{1})
        .run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("antialias"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SingleOp("Resize", 13)
                   .input(row1234())
                   .absent()
                   .input(floats({2}, {1, 2}))
                   .input(testing::makeArray<int64_t>(DataType::Int64, {2}, {1, 8}))
                   .run1(),
               Error);
  EXPECT_THROW(SingleOp("Resize", 13)
                   .input(row1234())
                   .absent()
                   .input(floats({2}, {1, 2}))
                   .attr("coordinate_transformation_mode", "sideways")
                   .run1(),
               Error);
}

TEST(Upsample, NearestAndLinearAreAsymmetric) {
  Array x = floats({1, 2}, {1, 3});
  Array n = SingleOp("Upsample", 9).input(x).input(floats({2}, {1, 2})).run1();
  EXPECT_EQ(values<float>(n), (std::vector<float>{1, 1, 3, 3}));
  Array l =
      SingleOp("Upsample", 9).input(x).input(floats({2}, {1, 2})).attr("mode", "linear").run1();
  EXPECT_EQ(values<float>(l), (std::vector<float>{1, 2, 3, 3}));
  Array a = SingleOp("Upsample", 7).input(x).attrFloats("scales", {1, 3}).run1();
  EXPECT_EQ(values<float>(a), (std::vector<float>{1, 1, 1, 3, 3, 3}));
}

}  // namespace
}  // namespace qopt::interp
