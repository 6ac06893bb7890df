// Images to model inputs through loadMedia: resize against hand-computed values (half-pixel
// bilinear as OpenCV's INTER_LINEAR), letterbox and crop geometry, channel order and layout,
// normalization, element types, and the shape checks.
#include <gtest/gtest.h>

#include "MediaTestFiles.h"
#include "qopt/ir/Error.h"
#include "qopt/media/Media.h"

namespace qopt::media {
namespace {

using test::Bytes;

InputShapeInfo input(std::vector<std::optional<int64_t>> dims, DataType type = DataType::Float) {
  return {"x", type, std::move(dims), true};
}

constexpr std::nullopt_t kOpen = std::nullopt;

class ImageInput : public ::testing::Test {
 protected:
  // Loads a gray (1 channel) or RGB image of the given pixels.
  interp::Array load(int width, int height, int channels, const Bytes& pixels,
                     const std::string& spec, const InputShapeInfo& info) {
    auto file = folder_.write("image.png", test::encodePng(width, height, channels, pixels));
    std::vector<interp::Array> arrays = loadMedia(file, PreprocessSpec::parse(spec), info);
    EXPECT_EQ(arrays.size(), 1u);
    return arrays.at(0);
  }
  // The error loading it gives.
  Error failure(int width, int height, int channels, const Bytes& pixels, const std::string& spec,
                const InputShapeInfo& info) {
    file_ = folder_.write("image.png", test::encodePng(width, height, channels, pixels));
    try {
      loadMedia(file_, PreprocessSpec::parse(spec), info);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "no error";
    return Error("none");
  }
  test::TempFolder folder_;
  std::filesystem::path file_;
};

std::vector<float> values(const interp::Array& array) {
  return array.toFloatVector();
}

TEST_F(ImageInput, BilinearEnlargesWithHalfPixelCentres) {
  // Source x of output x: (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped at the borders.
  auto out = load(2, 1, 1, {0, 100}, "", input({1, 1, 1, 4}));
  EXPECT_EQ(out.shape(), (interp::Shape{1, 1, 1, 4}));
  EXPECT_EQ(values(out), (std::vector<float>{0, 25, 75, 100}));
  // 2x2 to 4x4: out(1,1) reads (0.25, 0.25): 0.75 * (0.75*0 + 0.25*100) + 0.25 * (0.75*200 +
  // 0.25*255) = 72.1875, rounded to 72; out(3,0) is pixel (1,0) = 200.
  out = load(2, 2, 1, {0, 100, 200, 255}, "", input({1, 1, 4, 4}));
  std::vector<float> v = values(out);
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[1 * 4 + 1], 72);
  EXPECT_EQ(v[3 * 4 + 0], 200);
  EXPECT_EQ(v[3 * 4 + 3], 255);
  EXPECT_EQ(v[0 * 4 + 2], 75);
}

TEST_F(ImageInput, BilinearShrinksWithTwoTaps) {
  // (x + 0.5) * 2 - 0.5 = 0.5, 2.5: the means of pixel pairs, no antialiasing.
  EXPECT_EQ(values(load(4, 1, 1, {0, 100, 200, 250}, "", input({1, 1, 1, 2}))),
            (std::vector<float>{50, 225}));
}

TEST_F(ImageInput, NearestTakesThePixelUnderTheCentre) {
  EXPECT_EQ(values(load(2, 1, 1, {0, 100}, "resample=nearest", input({1, 1, 1, 4}))),
            (std::vector<float>{0, 0, 100, 100}));
  EXPECT_EQ(values(load(3, 1, 1, {10, 20, 30}, "resample=nearest", input({1, 1, 1, 2}))),
            (std::vector<float>{10, 30}));
}

TEST_F(ImageInput, LetterboxPadsAroundTheScaledImage) {
  Bytes flat(4 * 2, 200);
  // 4x2 into 8x8: scaled by 2 to 8x4, two rows of padding above and below.
  auto v = values(load(4, 2, 1, flat, "keep-aspect=pad pad-value=114", input({1, 1, 8, 8})));
  for (int y = 0; y < 8; ++y) {
    float expected = y >= 2 && y < 6 ? 200 : 114;
    for (int x = 0; x < 8; ++x) EXPECT_EQ(v[y * 8 + x], expected) << y << "," << x;
  }
  v = values(load(4, 2, 1, flat, "resize=8x8 keep-aspect=pad pad-align=top-left pad-value=1",
                  input({1, 1, kOpen, kOpen})));
  EXPECT_EQ(v[3 * 8 + 7], 200);
  EXPECT_EQ(v[4 * 8 + 0], 1);
  // 3x1 into 4x4: scaled to 4x1, 3 rows left over: one above, two below.
  v = values(load(3, 1, 1, {9, 9, 9}, "keep-aspect=pad", input({1, 1, 4, 4})));
  EXPECT_EQ(v, (std::vector<float>{0, 0, 0, 0, 9, 9, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_F(ImageInput, CropCutsTheCentre) {
  // 4x2 to cover 2x2: scale 1, columns 1 and 2 kept.
  auto out = load(4, 2, 1, {0, 1, 2, 3, 4, 5, 6, 7}, "keep-aspect=crop", input({1, 1, 2, 2}));
  EXPECT_EQ(values(out), (std::vector<float>{1, 2, 5, 6}));
}

TEST_F(ImageInput, OpenDimsKeepTheImageOrFollowTheAspect) {
  auto out = load(3, 2, 3, Bytes(18, 5), "", input({1, 3, kOpen, kOpen}));
  EXPECT_EQ(out.shape(), (interp::Shape{1, 3, 2, 3}));
  // Height fixed at 4, width open, aspect kept: 8x2 becomes 16x4 (text recognition models).
  out = load(8, 2, 1, Bytes(16, 5), "keep-aspect=pad", input({1, 1, 4, kOpen}));
  EXPECT_EQ(out.shape(), (interp::Shape{1, 1, 4, 16}));
  // Unknown rank: NCHW of the image's own size.
  out = load(3, 2, 3, Bytes(18, 5), "", InputShapeInfo{"x", DataType::Float, {}, false});
  EXPECT_EQ(out.shape(), (interp::Shape{1, 3, 2, 3}));
}

TEST_F(ImageInput, ChannelOrderAndLayouts) {
  Bytes rgb = {1, 2, 3, 4, 5, 6};  // two pixels side by side
  EXPECT_EQ(values(load(2, 1, 3, rgb, "", input({1, 3, 1, 2}))),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
  auto nhwc = load(2, 1, 3, rgb, "", input({1, 1, 2, 3}));
  EXPECT_EQ(nhwc.shape(), (interp::Shape{1, 1, 2, 3}));
  EXPECT_EQ(values(nhwc), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(load(2, 1, 3, rgb, "channels=bgr", input({1, 3, 1, 2}))),
            (std::vector<float>{3, 6, 2, 5, 1, 4}));
  EXPECT_EQ(values(load(2, 1, 3, rgb, "channels=bgr layout=hwc", input({kOpen, kOpen, 3}))),
            (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(load(2, 1, 3, rgb, "", input({3, 1, 2})).shape(), (interp::Shape{3, 1, 2}));
}

TEST_F(ImageInput, GrayAndRgbConvert) {
  // PIL's luma: (255 * 19595 + 0x8000) >> 16 = 76.
  EXPECT_EQ(values(load(1, 1, 3, {255, 0, 0}, "", input({1, 1, 1, 1}))), std::vector<float>{76});
  EXPECT_EQ(values(load(1, 1, 3, {10, 200, 30}, "channels=gray", input({1, kOpen, 1, 1}))),
            std::vector<float>{(10 * 19595 + 200 * 38470 + 30 * 7471 + 0x8000) >> 16});
  auto out = load(1, 1, 1, {50}, "layout=nchw", input({1, 3, 1, 1}));
  EXPECT_EQ(out.shape(), (interp::Shape{1, 3, 1, 1}));
  EXPECT_EQ(values(out), (std::vector<float>{50, 50, 50}));
}

TEST_F(ImageInput, ScaleMeanAndStd) {
  Bytes rgb = {255, 128, 0};
  auto v =
      values(load(1, 1, 3, rgb, "scale=1/255 mean=0.5 std=0.25 layout=nchw", input({1, 3, 1, 1})));
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(v[c], static_cast<float>((rgb[c] / 255.0 - 0.5) / 0.25)) << c;
  }
  // Per channel, in the output's order (BGR's mean starts with blue).
  v = values(
      load(1, 1, 3, rgb, "channels=bgr mean=1,2,3 std=1,2,4 layout=nchw", input({1, 3, 1, 1})));
  EXPECT_EQ(v, (std::vector<float>{(0 - 1) / 1.0f, (128 - 2) / 2.0f, (255 - 3) / 4.0f}));
  Error e = failure(1, 1, 1, {0}, "mean=1,2,3", input({1, 1, 1, 1}));
  EXPECT_EQ(e.kind(), ErrorKind::Usage);
  EXPECT_NE(e.cause().find("mean gives 3 values, the data has 1 channel"), std::string::npos);
}

TEST_F(ImageInput, ElementTypes) {
  auto out = load(2, 1, 1, {7, 255}, "", input({1, 1, 1, 2}, DataType::UInt8));
  ASSERT_EQ(out.dataType(), DataType::UInt8);
  EXPECT_EQ(out.data<uint8_t>()[0], 7);
  EXPECT_EQ(out.data<uint8_t>()[1], 255);
  out = load(2, 1, 1, {7, 255}, "scale=1/255", input({1, 1, 1, 2}, DataType::Float16));
  ASSERT_EQ(out.dataType(), DataType::Float16);
  EXPECT_EQ(out.data<uint16_t>()[1], 0x3c00);  // 1.0
  out = load(2, 1, 1, {7, 255}, "", input({1, 1, 1, 2}, DataType::Double));
  EXPECT_EQ(out.data<double>()[0], 7.0);

  Error e = failure(1, 1, 1, {0}, "scale=1/255", input({1, 1, 1, 1}, DataType::UInt8));
  EXPECT_EQ(e.kind(), ErrorKind::Usage);
  e = failure(1, 1, 1, {200}, "", input({1, 1, 1, 1}, DataType::Int8));
  EXPECT_EQ(e.kind(), ErrorKind::Input);
  EXPECT_NE(e.cause().find("the value 200 does not fit input 'x' (INT8)"), std::string::npos);
  e = failure(1, 1, 1, {0}, "", input({1, 1, 1, 1}, DataType::Int64));
  EXPECT_EQ(e.kind(), ErrorKind::Input);
  EXPECT_EQ(e.where(), file_.string());
}

TEST_F(ImageInput, ShapeMismatchNamesTheFile) {
  Error e = failure(8, 8, 3, Bytes(192, 1), "layout=nchw", input({1, 4, 8, 8}));
  EXPECT_EQ(e.kind(), ErrorKind::Input);
  EXPECT_EQ(e.where(), file_.string());
  EXPECT_EQ(e.cause(), "the image gives [1,3,8,8] but input 'x' is [1,4,8,8]");
  e = failure(8, 8, 3, Bytes(192, 1), "", input({4, 3, 8, 8}));
  EXPECT_EQ(e.kind(), ErrorKind::Input);
  EXPECT_NE(e.cause().find("takes a batch of 4: one image file is one sample of batch 1"),
            std::string::npos);
  e = failure(8, 8, 3, Bytes(192, 1), "", input({3, 64}));
  EXPECT_NE(e.cause().find("rank-3 or rank-4 input"), std::string::npos);
}

TEST_F(ImageInput, SpecContradictingTheInputIsAUsageError) {
  for (const char* spec : {"resize=10x10", "layout=chw", "channels=gray"}) {
    Error e = failure(8, 8, 3, Bytes(192, 1), spec, input({1, 3, 8, 8}));
    EXPECT_EQ(e.kind(), ErrorKind::Usage) << spec;
    EXPECT_EQ(e.subject(), "--preprocess") << spec;
  }
}

TEST_F(ImageInput, FilesOfTheWrongKind) {
  auto wav = folder_.write("clip.png", Bytes{'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'});
  EXPECT_THROW(loadMedia(wav, {}, input({1, 3, 8, 8})), Error);
  auto npy = folder_.write("data.txt", Bytes{1, 2, 3});
  try {
    loadMedia(npy, {}, input({1, 3, 8, 8}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_EQ(e.where(), npy.string());
  }
}

}  // namespace
}  // namespace qopt::media
