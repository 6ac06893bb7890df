// Conv, ConvTranspose, ConvInteger and QLinearConv against hand-computed values and a naive
// N-D reference convolution (double accumulation) over strides, dilations, pads, auto_pad,
// groups (depthwise included) and 1-D/2-D/3-D inputs.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using testing::floats;
using testing::randomFloats;
using testing::SingleOp;

struct ConvCase {
  std::string name;
  Shape x;  // N, C, spatial...
  int64_t filters;
  std::vector<int64_t> kernel, strides, dilations, padsBegin, padsEnd;
  int64_t groups = 1;
  bool bias = true;
};

std::vector<int64_t> spatialOut(const ConvCase& c) {
  std::vector<int64_t> out;
  for (size_t a = 0; a < c.kernel.size(); ++a) {
    const int64_t extent = (c.kernel[a] - 1) * c.dilations[a] + 1;
    out.push_back((c.x[a + 2] + c.padsBegin[a] + c.padsEnd[a] - extent) / c.strides[a] + 1);
  }
  return out;
}

int64_t elementCount(const std::vector<int64_t>& dims) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  return total;
}

// Visits every index of `dims` in row-major order.
template <class Fn>
void forEachIndex(const std::vector<int64_t>& dims, Fn&& fn) {
  const int64_t total = elementCount(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(idx);
    for (size_t a = dims.size(); a-- > 0;) {
      if (++idx[a] < dims[a]) break;
      idx[a] = 0;
    }
  }
}

int64_t flatten(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t off = 0;
  for (size_t a = 0; a < dims.size(); ++a) off = off * dims[a] + idx[a];
  return off;
}

// The sizes both references index with (read into plain locals: clang 14 cannot capture
// structured bindings in lambdas): spatial input and output dims, batch, channels,
// channels per group (in and out) and the element counts of input, output and kernel.
struct ReferenceLayout {
  std::vector<int64_t> in, out;
  int64_t n, ch, cg, mg, inSize, outSize, ks;
};

template <class Case>
ReferenceLayout referenceLayout(const Case& c, std::vector<int64_t> out) {
  ReferenceLayout l;
  l.in.assign(c.x.begin() + 2, c.x.end());
  l.out = std::move(out);
  l.n = c.x[0];
  l.ch = c.x[1];
  l.cg = l.ch / c.groups;
  l.mg = c.filters / c.groups;
  l.inSize = elementCount(l.in);
  l.outSize = elementCount(l.out);
  l.ks = elementCount(c.kernel);
  return l;
}

// x, w and b of a case, random in [-1, 1) with seeds seed, seed + 1 and seed + 2; w has the
// dims `wShape` followed by the kernel's.
template <class Case>
std::array<Array, 3> randomOperands(const Case& c, Shape wShape, uint32_t seed) {
  wShape.insert(wShape.end(), c.kernel.begin(), c.kernel.end());
  return {randomFloats(c.x, seed, -1.0f, 1.0f), randomFloats(wShape, seed + 1, -1.0f, 1.0f),
          randomFloats({c.filters}, seed + 2, -1.0f, 1.0f)};
}

// y has shape [N, filters, spatial...] and the reference's values.
template <class Case>
void expectReference(const Array& y, const Case& c, const std::vector<int64_t>& spatial,
                     const std::vector<double>& expected) {
  Shape expectShape{c.x[0], c.filters};
  for (int64_t d : spatial) expectShape.push_back(d);
  EXPECT_EQ(y.shape(), expectShape);
  QOPT_EXPECT_CLOSE(y, expected, 1e-5);
}

std::vector<double> referenceConv(const ConvCase& c, const Array& x, const Array& w,
                                  const Array* b) {
  const ReferenceLayout layout = referenceLayout(c, spatialOut(c));
  const std::vector<int64_t>& in = layout.in;
  const std::vector<int64_t>& out = layout.out;
  const int64_t n = layout.n, ch = layout.ch, cg = layout.cg, mg = layout.mg,
                inSize = layout.inSize, outSize = layout.outSize, ks = layout.ks;
  std::vector<double> y(static_cast<size_t>(n * c.filters * outSize));
  for (int64_t bn = 0; bn < n; ++bn) {
    for (int64_t m = 0; m < c.filters; ++m) {
      const int64_t grp = m / mg;
      forEachIndex(out, [&](const std::vector<int64_t>& o) {
        double sum = b ? b->getDouble(m) : 0.0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          forEachIndex(c.kernel, [&](const std::vector<int64_t>& k) {
            std::vector<int64_t> pos(in.size());
            for (size_t a = 0; a < in.size(); ++a) {
              pos[a] = o[a] * c.strides[a] - c.padsBegin[a] + k[a] * c.dilations[a];
              if (pos[a] < 0 || pos[a] >= in[a]) return;
            }
            const double xv = x.getDouble((bn * ch + grp * cg + ci) * inSize + flatten(pos, in));
            const double wv = w.getDouble((m * cg + ci) * ks + flatten(k, c.kernel));
            sum += xv * wv;
          });
        }
        y[static_cast<size_t>((bn * c.filters + m) * outSize + flatten(o, out))] = sum;
      });
    }
  }
  return y;
}

std::vector<int64_t> concat(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

class ConvReference : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvReference, MatchesNaiveConvolution) {
  const ConvCase& c = GetParam();
  const auto [x, w, b] = randomOperands(c, {c.filters, c.x[1] / c.groups}, 1);
  const std::vector<double> expected = referenceConv(c, x, w, c.bias ? &b : nullptr);
  for (int threads : {1, 2}) {
    SingleOp op("Conv", 11);
    op.input(x).input(w);
    if (c.bias) op.input(b);
    op.attr("kernel_shape", c.kernel)
        .attr("strides", c.strides)
        .attr("dilations", c.dilations)
        .attr("pads", concat(c.padsBegin, c.padsEnd))
        .attr("group", c.groups);
    Array y = op.run1(threads);
    expectReference(y, c, spatialOut(c), expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvReference,
    ::testing::Values(
        ConvCase{"basic3x3", {1, 3, 7, 6}, 4, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
        ConvCase{
            "stride2_dilation2_asym", {2, 4, 11, 9}, 6, {3, 2}, {2, 3}, {2, 1}, {2, 0}, {1, 3}},
        ConvCase{"grouped", {1, 6, 8, 8}, 4, {3, 3}, {1, 1}, {1, 1}, {0, 1}, {1, 0}, 2},
        ConvCase{"depthwise", {2, 8, 9, 10}, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 8},
        ConvCase{"depthwise_stride2", {1, 5, 12, 11}, 5, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 1}, 5},
        ConvCase{"depthwise_wide", {1, 3, 5, 37}, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 3},
        ConvCase{"depthwise_wide_stride2_dilated",
                 {1, 2, 9, 41},
                 2,
                 {3, 3},
                 {2, 2},
                 {1, 2},
                 {1, 2},
                 {0, 1},
                 2},
        ConvCase{"depthwise_multiplier",
                 {1, 3, 6, 7},
                 6,
                 {5, 3},
                 {1, 2},
                 {2, 1},
                 {2, 1},
                 {2, 1},
                 3,
                 false},
        ConvCase{"depthwise_stride3", {1, 3, 13, 17}, 3, {3, 3}, {3, 3}, {1, 1}, {1, 2}, {0, 1}, 3},
        ConvCase{"depthwise_stride2_large",
                 {1, 4, 56, 57},
                 4,
                 {3, 3},
                 {2, 2},
                 {1, 1},
                 {1, 1},
                 {1, 1},
                 4},
        ConvCase{"depthwise_stride1_large",
                 {1, 2, 40, 70},
                 2,
                 {3, 3},
                 {1, 1},
                 {1, 1},
                 {1, 1},
                 {1, 1},
                 2},
        ConvCase{
            "depthwise_same_1x1_plane", {1, 2, 1, 1}, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2},
        ConvCase{"depthwise_same_5x5_small_plane",
                 {1, 2, 2, 3},
                 2,
                 {5, 5},
                 {1, 1},
                 {1, 1},
                 {2, 2},
                 {2, 2},
                 2},
        ConvCase{"depthwise_same_5x5", {2, 3, 9, 20}, 3, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 3},
        ConvCase{
            "depthwise_same_3x5", {1, 3, 12, 50}, 3, {3, 5}, {1, 1}, {1, 1}, {1, 2}, {1, 2}, 3},
        ConvCase{"depthwise_stride9", {1, 2, 20, 30}, 2, {3, 3}, {9, 9}, {1, 1}, {1, 1}, {1, 1}, 2},
        // 16 channels at a time: a group of 16 and a partial one, two images.
        ConvCase{"depthwise_blocked_partial_group",
                 {2, 20, 9, 11},
                 20,
                 {3, 3},
                 {1, 1},
                 {1, 1},
                 {1, 1},
                 {1, 1},
                 20},
        ConvCase{"depthwise_blocked_multiplier_stride2",
                 {1, 9, 7, 8},
                 18,
                 {3, 3},
                 {2, 2},
                 {1, 1},
                 {1, 0},
                 {0, 1},
                 9},
        // Stride 1 and at least 4096 outputs per plane: the plane-at-a-time kernel.
        ConvCase{
            "depthwise_plane_kernel", {1, 2, 64, 70}, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2},
        // At most 32 products per output: the direct kernel, 16 filters at a time.
        ConvCase{"direct_partial_filter_group",
                 {2, 3, 17, 19},
                 20,
                 {3, 3},
                 {2, 2},
                 {1, 1},
                 {1, 0},
                 {0, 1}},
        ConvCase{"direct_dilated_no_bias",
                 {1, 2, 12, 13},
                 17,
                 {3, 3},
                 {1, 2},
                 {2, 1},
                 {2, 1},
                 {1, 2},
                 1,
                 false},
        ConvCase{
            "direct_many_pixel_blocks", {1, 1, 40, 45}, 4, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},
        ConvCase{"pointwise", {2, 16, 5, 7}, 24, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
        ConvCase{"pointwise_strided", {1, 8, 9, 9}, 4, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
        ConvCase{"large_tiles", {1, 32, 40, 40}, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
        ConvCase{"conv1d", {2, 3, 17}, 5, {4}, {2}, {3}, {2}, {1}},
        ConvCase{"depthwise1d", {1, 4, 20}, 4, {3}, {1}, {1}, {1}, {1}, 4},
        ConvCase{
            "conv3d", {1, 2, 5, 6, 4}, 3, {3, 2, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1}, {1, 1, 0}},
        ConvCase{"depthwise3d",
                 {1, 3, 4, 5, 6},
                 3,
                 {3, 3, 3},
                 {1, 1, 1},
                 {1, 1, 1},
                 {1, 1, 1},
                 {1, 1, 1},
                 3}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

TEST(Conv, HandComputedSumOfWindows) {
  // 3x3 input 0..8, 2x2 kernel of ones, no padding: each output is a window sum.
  Array x = floats({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Array w = floats({1, 1, 2, 2}, {1, 1, 1, 1});
  Array y = SingleOp("Conv", 11).input(x).input(w).run1();
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(testing::values<float>(y), (std::vector<float>{8, 12, 20, 24}));
}

TEST(Conv, AutoPadSameUpperAndLower) {
  // 1-D, length 4, kernel 2, stride 1: total pad 1, at the end (UPPER) or the start (LOWER).
  Array x = floats({1, 1, 4}, {1, 2, 3, 4});
  Array w = floats({1, 1, 2}, {1, 10});
  Array upper = SingleOp("Conv", 11).input(x).input(w).attr("auto_pad", "SAME_UPPER").run1();
  EXPECT_EQ(testing::values<float>(upper), (std::vector<float>{21, 32, 43, 4}));
  Array lower = SingleOp("Conv", 11).input(x).input(w).attr("auto_pad", "SAME_LOWER").run1();
  EXPECT_EQ(testing::values<float>(lower), (std::vector<float>{10, 21, 32, 43}));
  Array valid = SingleOp("Conv", 11)
                    .input(x)
                    .input(w)
                    .attr("auto_pad", "VALID")
                    .attr("pads", std::vector<int64_t>{5, 5})
                    .run1();
  EXPECT_EQ(testing::values<float>(valid), (std::vector<float>{21, 32, 43}));
}

TEST(Conv, DoubleAndFloat16) {
  Array x = floats({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Array w = floats({1, 1, 2, 2}, {1, 1, 1, 1});
  Array xd(DataType::Double, x.shape()), wd(DataType::Double, w.shape());
  Array xh(DataType::Float16, x.shape()), wh(DataType::Float16, w.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    xd.data<double>()[i] = x.data<float>()[i];
    xh.data<uint16_t>()[i] = floatToHalfBits(x.data<float>()[i]);
  }
  for (int64_t i = 0; i < w.numel(); ++i) {
    wd.data<double>()[i] = 1.0;
    wh.data<uint16_t>()[i] = floatToHalfBits(1.0f);
  }
  Array yd = SingleOp("Conv", 11).input(xd).input(wd).run1();
  EXPECT_EQ(testing::values<double>(yd), (std::vector<double>{8, 12, 20, 24}));
  Array yh = SingleOp("Conv", 11).input(xh).input(wh).run1();
  ASSERT_EQ(yh.dataType(), DataType::Float16);
  EXPECT_EQ(halfBitsToFloat(yh.data<uint16_t>()[3]), 24.0f);
}

TEST(Conv, MismatchedChannelsNameTheNode) {
  Array x = randomFloats({1, 3, 5, 5}, 1, -1.0f, 1.0f);
  Array w = randomFloats({2, 4, 3, 3}, 2, -1.0f, 1.0f);
  try {
    SingleOp("Conv", 11).input(x).input(w).run1();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Conv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("input channels"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose: scatter reference.

struct TransposeCase {
  std::string name;
  Shape x;
  int64_t filters;
  std::vector<int64_t> kernel, strides, dilations, padsBegin, padsEnd, outputPadding;
  int64_t groups = 1;
};

std::vector<int64_t> transposeOut(const TransposeCase& c) {
  std::vector<int64_t> out;
  for (size_t a = 0; a < c.kernel.size(); ++a) {
    out.push_back(c.strides[a] * (c.x[a + 2] - 1) + c.outputPadding[a] +
                  (c.kernel[a] - 1) * c.dilations[a] + 1 - c.padsBegin[a] - c.padsEnd[a]);
  }
  return out;
}

std::vector<double> referenceTranspose(const TransposeCase& c, const Array& x, const Array& w,
                                       const Array& b) {
  const ReferenceLayout layout = referenceLayout(c, transposeOut(c));
  const std::vector<int64_t>& in = layout.in;
  const std::vector<int64_t>& out = layout.out;
  const int64_t n = layout.n, ch = layout.ch, cg = layout.cg, mg = layout.mg,
                inSize = layout.inSize, outSize = layout.outSize, ks = layout.ks;
  std::vector<double> y(static_cast<size_t>(n * c.filters * outSize));
  for (int64_t bn = 0; bn < n; ++bn) {
    for (int64_t m = 0; m < c.filters; ++m) {
      for (int64_t p = 0; p < outSize; ++p)
        y[static_cast<size_t>((bn * c.filters + m) * outSize + p)] = b.getDouble(m);
    }
    for (int64_t ci = 0; ci < ch; ++ci) {
      const int64_t grp = ci / cg;
      forEachIndex(in, [&](const std::vector<int64_t>& i) {
        const double xv = x.getDouble((bn * ch + ci) * inSize + flatten(i, in));
        for (int64_t mm = 0; mm < mg; ++mm) {
          forEachIndex(c.kernel, [&](const std::vector<int64_t>& k) {
            std::vector<int64_t> o(in.size());
            for (size_t a = 0; a < in.size(); ++a) {
              o[a] = i[a] * c.strides[a] - c.padsBegin[a] + k[a] * c.dilations[a];
              if (o[a] < 0 || o[a] >= out[a]) return;
            }
            const int64_t m = grp * mg + mm;
            y[static_cast<size_t>((bn * c.filters + m) * outSize + flatten(o, out))] +=
                xv * w.getDouble((ci * mg + mm) * ks + flatten(k, c.kernel));
          });
        }
      });
    }
  }
  return y;
}

class ConvTransposeReference : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(ConvTransposeReference, MatchesScatterReference) {
  const TransposeCase& c = GetParam();
  const auto [x, w, b] = randomOperands(c, {c.x[1], c.filters / c.groups}, 4);
  const std::vector<double> expected = referenceTranspose(c, x, w, b);
  for (int threads : {1, 2}) {
    Array y = SingleOp("ConvTranspose", 11)
                  .input(x)
                  .input(w)
                  .input(b)
                  .attr("strides", c.strides)
                  .attr("dilations", c.dilations)
                  .attr("pads", concat(c.padsBegin, c.padsEnd))
                  .attr("output_padding", c.outputPadding)
                  .attr("group", c.groups)
                  .run1(threads);
    expectReference(y, c, transposeOut(c), expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTransposeReference,
    ::testing::Values(
        TransposeCase{"basic", {1, 2, 3, 3}, 3, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}},
        TransposeCase{"stride2_padding_outpad",
                      {2, 3, 4, 5},
                      2,
                      {3, 3},
                      {2, 2},
                      {1, 1},
                      {1, 1},
                      {1, 0},
                      {1, 1}},
        TransposeCase{
            "dilated_grouped", {1, 4, 5, 4}, 6, {2, 3}, {1, 2}, {2, 1}, {0, 1}, {1, 0}, {0, 1}, 2},
        TransposeCase{"conv1d", {1, 3, 7}, 2, {4}, {3}, {1}, {1}, {2}, {2}},
        TransposeCase{"conv3d",
                      {1, 2, 3, 2, 3},
                      2,
                      {2, 2, 2},
                      {2, 1, 2},
                      {1, 1, 1},
                      {0, 0, 1},
                      {0, 1, 0},
                      {1, 0, 0}}),
    [](const ::testing::TestParamInfo<TransposeCase>& info) { return info.param.name; });

TEST(ConvTranspose, OutputShapeAndAutoPadFollowTheSpec) {
  // Input length 3, kernel 3, stride 2: the full output is 7. output_shape 6 removes one pad;
  // without auto_pad (or SAME_LOWER) it goes at the beginning, with SAME_UPPER at the end.
  Array x = floats({1, 1, 3}, {1, 2, 3});
  Array w = floats({1, 1, 3}, {1, 10, 100});
  auto full = testing::values<float>(SingleOp("ConvTranspose", 11)
                                         .input(x)
                                         .input(w)
                                         .attr("strides", std::vector<int64_t>{2})
                                         .run1());
  ASSERT_EQ(full, (std::vector<float>{1, 10, 102, 20, 203, 30, 300}));
  auto lower = testing::values<float>(SingleOp("ConvTranspose", 11)
                                          .input(x)
                                          .input(w)
                                          .attr("strides", std::vector<int64_t>{2})
                                          .attr("output_shape", std::vector<int64_t>{6})
                                          .run1());
  EXPECT_EQ(lower, (std::vector<float>{10, 102, 20, 203, 30, 300}));
  auto upper = testing::values<float>(SingleOp("ConvTranspose", 11)
                                          .input(x)
                                          .input(w)
                                          .attr("strides", std::vector<int64_t>{2})
                                          .attr("auto_pad", "SAME_UPPER")
                                          .run1());
  EXPECT_EQ(upper, (std::vector<float>{1, 10, 102, 20, 203, 30}));
}

// ---------------------------------------------------------------------------------------------
// ConvInteger and QLinearConv: exact integer reference.

TEST(ConvInteger, PerChannelWeightZeroPointsAndPaddingWithInputZeroPoint) {
  ConvCase c{"int", {1, 4, 6, 5}, 3, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {1, 0}, 1, false};
  Array x = testing::randomIntegers<uint8_t>(DataType::UInt8, c.x, 7, 0, 255);
  Array w = testing::randomIntegers<int8_t>(DataType::Int8, {3, 4, 3, 3}, 8, -128, 127);
  Array xz = testing::makeArray<uint8_t>(DataType::UInt8, {}, {131});
  Array wz = testing::makeArray<int8_t>(DataType::Int8, {3}, {-3, 0, 5});
  // Reference: shift in double, then the float reference convolution (exact for these sizes).
  Array xs(DataType::Double, c.x), ws(DataType::Double, w.shape());
  for (int64_t i = 0; i < x.numel(); ++i) xs.data<double>()[i] = x.data<uint8_t>()[i] - 131.0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    ws.data<double>()[i] = w.data<int8_t>()[i] - wz.data<int8_t>()[i / 36];
  }
  const std::vector<double> expected = referenceConv(c, xs, ws, nullptr);
  for (int threads : {1, 2}) {
    Array y = SingleOp("ConvInteger", 10)
                  .input(x)
                  .input(w)
                  .input(xz)
                  .input(wz)
                  .attr("strides", c.strides)
                  .attr("pads", concat(c.padsBegin, c.padsEnd))
                  .run1(threads);
    ASSERT_EQ(y.dataType(), DataType::Int32);
    ASSERT_EQ(y.numel(), static_cast<int64_t>(expected.size()));
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_EQ(y.data<int32_t>()[i], static_cast<int32_t>(expected[static_cast<size_t>(i)]))
          << "element " << i;
    }
  }
}

TEST(QLinearConv, RequantizesWithBiasAndPerChannelScales) {
  // One output pixel per channel so that the expected values are easy to state.
  Array x = testing::makeArray<uint8_t>(DataType::UInt8, {1, 2, 1, 1}, {140, 120});
  Array w = testing::makeArray<int8_t>(DataType::Int8, {2, 2, 1, 1}, {3, -2, 5, 7});
  Array xs = floats({}, {0.5f});
  Array xz = testing::makeArray<uint8_t>(DataType::UInt8, {}, {128});
  Array wsc = floats({2}, {0.1f, 0.2f});
  Array wz = testing::makeArray<int8_t>(DataType::Int8, {2}, {0, 1});
  Array ys = floats({}, {0.25f});
  Array yz = testing::makeArray<uint8_t>(DataType::UInt8, {}, {100});
  Array bias = testing::makeArray<int32_t>(DataType::Int32, {2}, {10, -1000});
  Array y = SingleOp("QLinearConv", 10)
                .input(x)
                .input(xs)
                .input(xz)
                .input(w)
                .input(wsc)
                .input(wz)
                .input(ys)
                .input(yz)
                .input(bias)
                .run1();
  // ch0: acc = 12*3 + (-8)*(-2) + 10 = 62; 62 * (0.5*0.1/0.25 = 0.2) = 12.4 -> 12 + 100 = 112.
  // ch1: acc = 12*4 + (-8)*6 - 1000 = -1000; -1000 * 0.4 = -400 -> saturates to 0.
  EXPECT_EQ(testing::values<uint8_t>(y), (std::vector<uint8_t>{112, 0}));
}

TEST(QLinearConv, RoundsHalfToEven) {
  Array x = testing::makeArray<int8_t>(DataType::Int8, {1, 1, 1, 4}, {1, 3, 5, -5});
  Array w = testing::makeArray<int8_t>(DataType::Int8, {1, 1, 1, 1}, {1});
  Array one = floats({}, {1.0f});
  Array half = floats({}, {0.5f});
  Array z8 = testing::makeArray<int8_t>(DataType::Int8, {}, {0});
  Array y = SingleOp("QLinearConv", 10)
                .input(x)
                .input(half)
                .input(z8)
                .input(w)
                .input(one)
                .input(z8)
                .input(one)
                .input(z8)
                .run1();
  // 0.5, 1.5, 2.5, -2.5 round to 0, 2, 2, -2.
  EXPECT_EQ(testing::values<int8_t>(y), (std::vector<int8_t>{0, 2, 2, -2}));
}

}  // namespace
}  // namespace qopt::interp
