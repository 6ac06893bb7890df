// GridSample (each padding mode out of range, halfway rounding, opset 20's 1-D and 3-D sampling),
// RoiAlign (avg and max pooling, coordinate modes, samples off the map) and MaxUnpool
// (output_shape, indices), with the errors for bad attributes and shapes: what the ONNX node
// tests leave out. Expected values are worked out by hand (and agree with ONNX Runtime).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::errorMessage;
using testing::floats;
using testing::halves;
using testing::int64s;
using testing::SingleOp;
using testing::values;

bool mentions(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// GridSample

// One row [1, 2, 3, 4] sampled at normalized x positions (y = 0, the row itself), opset 16,
// align_corners = 0: x = -1 is the left edge of pixel 0 (position -0.5), x = 1 the right edge
// of pixel 3 (position 3.5).
std::vector<float> sampleRow(const char* mode, const char* padding, std::vector<float> xs) {
  std::vector<float> grid;
  for (float x : xs) grid.insert(grid.end(), {x, 0.0f});
  const auto n = static_cast<int64_t>(xs.size());
  return values<float>(SingleOp("GridSample", 16)
                           .input(floats({1, 1, 1, 4}, {1, 2, 3, 4}))
                           .input(floats({1, 1, n, 2}, grid))
                           .attr("mode", mode)
                           .attr("padding_mode", padding)
                           .run1());
}

// Positions -1.5 (a pixel beyond the left edge), 4.5 (beyond the right), -0.25 (inside the left
// edge pixel's outer half) and -16.5 (four extents out).
const std::vector<float> kOutside = {-1.5f, 1.5f, -0.875f, -9.0f};

TEST(GridSample, BilinearOutsideTheInputPerPaddingMode) {
  // zeros: taps outside read 0; -0.25 mixes 0 (weight 0.25) with pixel 0.
  EXPECT_EQ(sampleRow("bilinear", "zeros", kOutside), (std::vector<float>{0, 0, 0.75f, 0}));
  EXPECT_EQ(sampleRow("bilinear", "border", kOutside), (std::vector<float>{1, 4, 1, 1}));
  // reflection about the pixel edges: -1.5 -> 0.5, 4.5 -> 2.5, -16.5 -> -0.5 (even flips).
  EXPECT_EQ(sampleRow("bilinear", "reflection", kOutside), (std::vector<float>{1.5f, 3.5f, 1, 1}));
}

TEST(GridSample, NearestRoundsHalfwayToEvenThenPads) {
  // -1.5 -> -2 and 4.5 -> 4 (ties to even), -0.25 -> 0; 0.5 -> 0 and 1.5 -> 2 inside.
  const std::vector<float> xs = {-1.5f, 1.5f, -0.875f, -0.5f, 0.0f};
  EXPECT_EQ(sampleRow("nearest", "zeros", xs), (std::vector<float>{0, 0, 1, 1, 3}));
  EXPECT_EQ(sampleRow("nearest", "border", xs), (std::vector<float>{1, 4, 1, 1, 3}));
  // Index -2 reflects about -0.5 to 1.
  EXPECT_EQ(sampleRow("nearest", "reflection", xs), (std::vector<float>{2, 4, 1, 1, 3}));
}

TEST(GridSample, BicubicPadsEachTapOfTheWindow) {
  // At -0.25 the window is pixels -2..1 with Keys weights for t = 0.75; border padding reads
  // pixel 0 for the three taps left of the input, so the result is 1 + w3 with
  // w3 = -0.10546875 (not 1, which clamping the position to the edge first would give).
  std::vector<float> border = sampleRow("bicubic", "border", {-0.875f});
  EXPECT_FLOAT_EQ(border[0], 0.89453125f);
  std::vector<float> zeros = sampleRow("bicubic", "zeros", {-0.875f, -9.0f});
  EXPECT_FLOAT_EQ(zeros[0], 0.66796875f);
  EXPECT_EQ(zeros[1], 0.0f);
  std::vector<float> reflection = sampleRow("bicubic", "reflection", {-1.5f, -9.0f});
  EXPECT_FLOAT_EQ(reflection[0], 1.40625f);
  EXPECT_FLOAT_EQ(reflection[1], 0.8125f);
}

TEST(GridSample, FarAndNonFinitePositions) {
  EXPECT_EQ(sampleRow("bilinear", "zeros", {1e30f, -1e30f}), (std::vector<float>{0, 0}));
  EXPECT_EQ(sampleRow("bicubic", "border", {1e30f, -INFINITY}), (std::vector<float>{4, 1}));
  std::vector<float> nan = sampleRow("bilinear", "border", {NAN});
  EXPECT_TRUE(std::isnan(nan[0]));
}

TEST(GridSample, AlignCornersMapsTheExtremaToPixelCentres) {
  auto run = [](int64_t align) {
    return values<float>(SingleOp("GridSample", 16)
                             .input(floats({1, 1, 1, 4}, {1, 2, 3, 4}))
                             .input(floats({1, 1, 3, 2}, {-1, 0, 1, 0, 0, 0}))
                             .attr("align_corners", align)
                             .run1());
  };
  EXPECT_EQ(run(1), (std::vector<float>{1, 4, 2.5f}));
  EXPECT_EQ(run(0), (std::vector<float>{0.5f, 2, 2.5f}));  // half of each edge pixel, zeros
}

TEST(GridSample, Opset20SamplesVolumes) {
  // X[d][h][w] = 4d + 2h + w; grid components run (x, y, z) = (w, h, d).
  Array x = floats({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Array grid = floats({1, 1, 1, 5, 3}, {0, 0, 0, 1, -1, -1, -1, 1, -1, -1, -1, 1, 1, 1, 1});
  Array y = SingleOp("GridSample", 20)
                .input(x)
                .input(grid)
                .attr("align_corners", int64_t{1})
                .attr("mode", "linear")
                .run1();
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 1, 5}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{3.5f, 1, 2, 4, 7}));
  Array nearest = SingleOp("GridSample", 20)
                      .input(x)
                      .input(floats({1, 1, 1, 1, 3}, {0.4f, -0.4f, 0.6f}))
                      .attr("align_corners", int64_t{1})
                      .attr("mode", "nearest")
                      .run1();
  // Positions w 0.7 -> 1, h 0.3 -> 0, d 0.8 -> 1.
  EXPECT_EQ(values<float>(nearest), (std::vector<float>{5}));
}

TEST(GridSample, Opset20SamplesLinesAndCubicVolumes) {
  // One spatial axis: [10, 20, 30, 40] at positions -0.5, 1.5 and 2.5.
  Array line = SingleOp("GridSample", 20)
                   .input(floats({1, 1, 4}, {10, 20, 30, 40}))
                   .input(floats({1, 3, 1}, {-1, 0, 0.5f}))
                   .run1();
  EXPECT_EQ(line.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(values<float>(line), (std::vector<float>{5, 25, 35}));
  // A ramp X[d][h][w] = d + h + w sampled cubically: the weights sum to 1 on each axis, so the
  // result is the sum of the three 1-D interpolations of i at the positions (w, h, d) =
  // (1.65, 1.2, 1.575). Keys' kernel with a = -0.75 bends a ramp slightly: the weights give
  // 1.615875 + 1.248 + 1.556671875.
  std::vector<float> ramp(4 * 4 * 4);
  for (size_t i = 0; i < ramp.size(); ++i)
    ramp[i] = static_cast<float>(i / 16 + (i / 4) % 4 + i % 4);
  Array cubic = SingleOp("GridSample", 20)
                    .input(floats({1, 1, 4, 4, 4}, ramp))
                    .input(floats({1, 1, 1, 1, 3}, {0.1f, -0.2f, 0.05f}))
                    .attr("mode", "cubic")
                    .attr("padding_mode", "border")
                    .attr("align_corners", int64_t{1})
                    .run1();
  EXPECT_NEAR(cubic.getDouble(0), 1.615875 + 1.248 + 1.556671875, 2e-5);
}

TEST(GridSample, Float16AndDoubleMatchFloat) {
  const std::vector<float> xv = {0.5f, -1.25f, 2, 3.5f, -0.75f, 1};
  const std::vector<float> gv = {-0.9f, 0.3f, 0.6f, -0.7f, 1.2f, 0.1f};
  Array expected = SingleOp("GridSample", 16)
                       .input(floats({1, 1, 2, 3}, xv))
                       .input(floats({1, 1, 3, 2}, gv))
                       .attr("mode", "bicubic")
                       .run1();
  Array half = SingleOp("GridSample", 16)
                   .input(halves({1, 1, 2, 3}, xv))
                   .input(halves({1, 1, 3, 2}, gv))
                   .attr("mode", "bicubic")
                   .run1();
  EXPECT_EQ(half.dataType(), DataType::Float16);
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(half.getDouble(i), expected.getDouble(i), 2e-2);
  std::vector<double> xd(xv.begin(), xv.end()), gd(gv.begin(), gv.end());
  Array dbl = SingleOp("GridSample", 16)
                  .input(testing::makeArray<double>(DataType::Double, {1, 1, 2, 3}, xd))
                  .input(testing::makeArray<double>(DataType::Double, {1, 1, 3, 2}, gd))
                  .attr("mode", "bicubic")
                  .run1();
  EXPECT_EQ(dbl.dataType(), DataType::Double);
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(dbl.getDouble(i), expected.getDouble(i), 1e-5);
}

TEST(GridSample, ThreadsSplitTheWorkWithoutChangingIt) {
  Array x = testing::randomFloats({2, 3, 9, 11}, 1);
  Array grid = testing::randomFloats({2, 40, 50, 2}, 2, -1.3f, 1.3f);
  auto run = [&](int threads) {
    return SingleOp("GridSample", 16)
        .input(x)
        .input(grid)
        .attr("mode", "bicubic")
        .attr("padding_mode", "reflection")
        .run1(threads);
  };
  EXPECT_TRUE(testing::bitwiseEqual(run(1), run(4)));
}

TEST(GridSample, RejectsBadAttributesAndShapes) {
  Array x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Array grid = floats({1, 1, 1, 2}, {0, 0});
  auto fails = [](auto&& op) { return errorMessage([&] { op.run(); }); };
  // Opset 16 only knows 2-D sampling and the 2-D mode names; opset 20 only the general names.
  EXPECT_TRUE(mentions(fails(SingleOp("GridSample", 16)
                                 .input(floats({1, 1, 2, 2, 2}, std::vector<float>(8, 1)))
                                 .input(floats({1, 1, 1, 1, 3}, {0, 0, 0}))),
                       "4-D"));
  EXPECT_TRUE(
      mentions(fails(SingleOp("GridSample", 20).input(x).input(grid).attr("mode", "bilinear")),
               "unknown mode 'bilinear'"));
  EXPECT_TRUE(
      mentions(fails(SingleOp("GridSample", 16).input(x).input(grid).attr("mode", "linear")),
               "unknown mode 'linear'"));
  EXPECT_TRUE(
      mentions(fails(SingleOp("GridSample", 16).input(x).input(grid).attr("padding_mode", "wrap")),
               "unknown padding_mode 'wrap'"));
  EXPECT_TRUE(mentions(
      fails(SingleOp("GridSample", 16).input(x).input(grid).attr("align_corners", int64_t{2})),
      "align_corners must be 0 or 1"));
  EXPECT_TRUE(mentions(
      fails(SingleOp("GridSample", 16).input(x).input(floats({1, 1, 1, 3}, {0, 0, 0}))), "grid"));
  EXPECT_TRUE(
      mentions(fails(SingleOp("GridSample", 16).input(x).input(floats({2, 1, 1, 2}, {0, 0, 0, 0}))),
               "grid"));
  EXPECT_TRUE(mentions(
      fails(SingleOp("GridSample", 16).input(int64s({1, 1, 2, 2}, {1, 2, 3, 4})).input(grid)),
      "not supported"));
}

// ---------------------------------------------------------------------------------------------
// RoiAlign

// X[y][x] = 4y + x on a 4x4 map: bilinear interpolation reproduces the plane exactly.
Array plane4x4() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return floats({1, 1, 4, 4}, v);
}

SingleOp roiAlign(int64_t opset, std::vector<float> box, const char* mode) {
  SingleOp op("RoiAlign", opset);
  op.input(plane4x4())
      .input(floats({1, 4}, box))
      .input(int64s({1}, {0}))
      .attr("mode", mode)
      .attr("sampling_ratio", int64_t{2});
  return op;
}

TEST(RoiAlign, AverageAndMaxOfOneBin) {
  // Region [0, 3] on both axes, one bin of 2x2 samples at 0.75 and 2.25: values 3.75, 5.25,
  // 9.75 and 11.25, mean 7.5.
  EXPECT_EQ(values<float>(roiAlign(10, {0, 0, 3, 3}, "avg").run1()), (std::vector<float>{7.5f}));
  // max takes, per sample, the largest weighted corner (as ONNX Runtime and ONNX's reference
  // do), here 0.5625 * X[2][2] = 5.625 at (2.25, 2.25).
  EXPECT_EQ(values<float>(roiAlign(10, {0, 0, 3, 3}, "max").run1()), (std::vector<float>{5.625f}));
}

TEST(RoiAlign, HalfPixelShiftsTheRegionFromOpset16) {
  // half_pixel (opset 16's default) moves the region by -0.5: [0.5, 3.5] samples as [0, 3].
  EXPECT_EQ(values<float>(roiAlign(16, {0.5f, 0.5f, 3.5f, 3.5f}, "avg").run1()),
            (std::vector<float>{7.5f}));
  EXPECT_EQ(values<float>(roiAlign(16, {0, 0, 3, 3}, "avg")
                              .attr("coordinate_transformation_mode", "output_half_pixel")
                              .run1()),
            (std::vector<float>{7.5f}));
  // Opset 10 has no such attribute and never shifts.
  EXPECT_EQ(values<float>(roiAlign(10, {0, 0, 3, 3}, "avg").run1()), (std::vector<float>{7.5f}));
}

TEST(RoiAlign, SamplesOffTheMapReadNothing) {
  // Samples beyond one pixel outside contribute zero; those within read the edge pixels.
  EXPECT_EQ(values<float>(roiAlign(10, {10, 10, 12, 12}, "avg").run1()), (std::vector<float>{0}));
  // Region [-1, 1] samples at -0.5 (clamped to 0) and 0.5 on each axis.
  EXPECT_EQ(values<float>(roiAlign(10, {-1, -1, 1, 1}, "avg").run1()),
            (std::vector<float>{(0 + 0.5f + 2 + 2.5f) / 4}));
}

TEST(RoiAlign, BinsChannelsAndBatchIndices) {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i % 16 + (i / 16) * 100);
  Array y = SingleOp("RoiAlign", 16)
                .input(floats({2, 1, 4, 4}, v))
                .input(floats({2, 4}, {0, 0, 4, 4, 0, 0, 4, 4}))
                .input(int64s({2}, {1, 0}))
                .attr("coordinate_transformation_mode", "output_half_pixel")
                .attr("output_height", int64_t{2})
                .attr("output_width", int64_t{1})
                .attr("sampling_ratio", int64_t{1})
                .run1();
  // Bins of 2 rows x 4 columns, sampled at their centres (1, 2) and (3, 2).
  EXPECT_EQ(y.shape(), (Shape{2, 1, 2, 1}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{106, 114, 6, 14}));
}

TEST(RoiAlign, ThreadsSplitTheWorkWithoutChangingIt) {
  std::vector<float> boxes;
  std::vector<int64_t> batch;
  for (int i = 0; i < 24; ++i) {
    const float a = static_cast<float>(i % 5), b = static_cast<float>(i % 7);
    boxes.insert(boxes.end(), {a, b, a + 3.5f + static_cast<float>(i % 3), b + 4.25f});
    batch.push_back(i % 2);
  }
  Array x = testing::randomFloats({2, 3, 12, 14}, 3);
  auto run = [&](int threads) {
    return SingleOp("RoiAlign", 16)
        .input(x)
        .input(floats({24, 4}, boxes))
        .input(int64s({24}, batch))
        .attr("output_height", int64_t{3})
        .attr("output_width", int64_t{2})
        .run1(threads);
  };
  EXPECT_TRUE(testing::bitwiseEqual(run(1), run(4)));
}

TEST(RoiAlign, RejectsBadAttributesAndInputs) {
  auto fails = [](auto&& op) { return errorMessage([&] { op.run(); }); };
  EXPECT_TRUE(mentions(fails(roiAlign(16, {0, 0, 3, 3}, "min")), "unknown mode 'min'"));
  EXPECT_TRUE(mentions(
      fails(roiAlign(16, {0, 0, 3, 3}, "avg").attr("coordinate_transformation_mode", "asymmetric")),
      "coordinate_transformation_mode"));
  EXPECT_TRUE(mentions(fails(roiAlign(16, {0, 0, 3, 3}, "avg").attr("output_height", int64_t{0})),
                       "output_height"));
  EXPECT_TRUE(mentions(fails(roiAlign(16, {0, 0, 3, 3}, "avg").attr("sampling_ratio", int64_t{-1})),
                       "sampling_ratio"));
  EXPECT_TRUE(mentions(fails(SingleOp("RoiAlign", 16)
                                 .input(plane4x4())
                                 .input(floats({1, 4}, {0, 0, 1, 1}))
                                 .input(int64s({1}, {1}))),
                       "batch_indices[0] = 1"));
  EXPECT_TRUE(mentions(fails(SingleOp("RoiAlign", 16)
                                 .input(plane4x4())
                                 .input(floats({1, 3}, {0, 0, 1}))
                                 .input(int64s({1}, {0}))),
                       "rois must have shape"));
  EXPECT_TRUE(mentions(fails(SingleOp("RoiAlign", 16)
                                 .input(plane4x4())
                                 .input(floats({1, 4}, {0, 0, NAN, 1}))
                                 .input(int64s({1}, {0}))),
                       "non-finite"));
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool

TEST(MaxUnpool, ScattersToTheIndicesOfTheInferredShape) {
  Array y = SingleOp("MaxUnpool", 11)
                .input(floats({1, 1, 2, 2}, {1, 2, 3, 4}))
                .input(int64s({1, 1, 2, 2}, {0, 3, 9, 14}))
                .attr("kernel_shape", std::vector<int64_t>{2, 2})
                .attr("strides", std::vector<int64_t>{2, 2})
                .run1();
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0}));
}

TEST(MaxUnpool, PadsShrinkAndOutputShapeSetsTheOutput) {
  // (2 - 1) * 2 - 1 + 3 = 4 rows and (2 - 1) * 1 + 3 = 4 columns.
  Array padded = SingleOp("MaxUnpool", 11)
                     .input(floats({1, 1, 2, 2}, {1, 2, 3, 4}))
                     .input(int64s({1, 1, 2, 2}, {0, 1, 2, 3}))
                     .attr("kernel_shape", std::vector<int64_t>{3, 3})
                     .attr("strides", std::vector<int64_t>{2, 1})
                     .attr("pads", std::vector<int64_t>{1, 0, 0, 0})
                     .run1();
  EXPECT_EQ(padded.shape(), (Shape{1, 1, 4, 4}));
  // Strides default to 1: (2 - 1) + 2 = 3.
  Array unstrided = SingleOp("MaxUnpool", 11)
                        .input(floats({1, 1, 2, 2}, {1, 2, 3, 4}))
                        .input(int64s({1, 1, 2, 2}, {0, 2, 6, 8}))
                        .attr("kernel_shape", std::vector<int64_t>{2, 2})
                        .run1();
  EXPECT_EQ(values<float>(unstrided), (std::vector<float>{1, 0, 2, 0, 0, 0, 3, 0, 4}));
  // output_shape allocates that shape; the indices are linear in it, so index 6 of a 5x5
  // output is row 1, column 1.
  Array shaped = SingleOp("MaxUnpool", 11)
                     .input(floats({1, 1, 1, 1}, {7}))
                     .input(int64s({1, 1, 1, 1}, {6}))
                     .input(int64s({4}, {1, 1, 5, 5}))
                     .attr("kernel_shape", std::vector<int64_t>{2, 2})
                     .attr("strides", std::vector<int64_t>{2, 2})
                     .run1();
  EXPECT_EQ(shaped.shape(), (Shape{1, 1, 5, 5}));
  EXPECT_EQ(shaped.getDouble(6), 7.0);
  EXPECT_EQ(shaped.getDouble(0), 0.0);
}

TEST(MaxUnpool, Float16AndOneSpatialAxis) {
  Array y = SingleOp("MaxUnpool", 9)
                .input(halves({1, 2, 2}, {1.5f, -2, 3, 0.25f}))
                .input(int64s({1, 2, 2}, {1, 2, 4, 7}))
                .attr("kernel_shape", std::vector<int64_t>{2})
                .attr("strides", std::vector<int64_t>{2})
                .run1();
  EXPECT_EQ(y.dataType(), DataType::Float16);
  EXPECT_EQ(testing::doubles(y), (std::vector<double>{0, 1.5, -2, 0, 3, 0, 0, 0.25}));
}

TEST(MaxUnpool, RejectsBadAttributesAndIndices) {
  Array x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  auto unpool = [&](Array indices) {
    SingleOp op("MaxUnpool", 11);
    op.input(x).input(std::move(indices)).attr("kernel_shape", std::vector<int64_t>{2, 2});
    op.attr("strides", std::vector<int64_t>{2, 2});
    return op;
  };
  auto fails = [](auto&& op) { return errorMessage([&] { op.run(); }); };
  EXPECT_TRUE(mentions(fails(unpool(int64s({1, 1, 2, 2}, {0, 1, 2, 16}))), "index 16"));
  EXPECT_TRUE(mentions(fails(unpool(int64s({1, 1, 2, 2}, {0, 1, 2, -1}))), "index -1"));
  EXPECT_TRUE(mentions(fails(unpool(int64s({1, 1, 4}, {0, 1, 2, 3}))), "I must have X's shape"));
  EXPECT_TRUE(
      mentions(fails(SingleOp("MaxUnpool", 11).input(x).input(int64s({1, 1, 2, 2}, {0, 1, 2, 3}))),
               "kernel_shape"));
  EXPECT_TRUE(mentions(
      fails(unpool(int64s({1, 1, 2, 2}, {0, 1, 2, 3})).attr("pads", std::vector<int64_t>{0, 0})),
      "pads must have 4 values"));
  EXPECT_TRUE(mentions(fails(unpool(int64s({1, 1, 2, 2}, {0, 1, 2, 3})).input(int64s({2}, {4, 4}))),
                       "output_shape"));
  EXPECT_TRUE(
      mentions(fails(unpool(int64s({1, 1, 2, 2}, {0, 1, 2, 3})).input(int64s({4}, {1, 2, 4, 4}))),
               "batch and channels"));
}

}  // namespace
}  // namespace qopt::interp
