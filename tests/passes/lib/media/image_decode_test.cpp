// PNG and JPEG decoding: exact pixels for every PNG colour type, JPEG within its loss, and
// corrupt, truncated or oversized files as Input errors naming the file.
#include <png.h>

#include <gtest/gtest.h>

#include "MediaTestFiles.h"
#include "qopt/ir/Error.h"
#include "qopt/media/Media.h"

namespace qopt::media {
namespace {

using test::Bytes;

// The cause of the Input error decoding `file` gives, after checking its kind and where().
std::string inputCause(const std::filesystem::path& file) {
  try {
    decodeImage(file);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_EQ(e.where(), file.string());
    return e.cause();
  }
  ADD_FAILURE() << "no error for " << file;
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ImageDecode, PngRgbAndGrayPixels) {
  Bytes rgb = {1, 2, 3, 4, 5, 6, 7, 8, 9, 250, 251, 252};
  Image image = decodeImageBytes(test::encodePng(2, 2, 3, rgb), "rgb.png");
  EXPECT_EQ(image.width, 2);
  EXPECT_EQ(image.height, 2);
  EXPECT_EQ(image.channels, 3);
  EXPECT_EQ(image.pixels, rgb);

  Bytes gray = {0, 17, 34, 255, 128, 64};
  image = decodeImageBytes(test::encodePng(3, 2, 1, gray), "gray.png");
  EXPECT_EQ(image.channels, 1);
  EXPECT_EQ(image.width, 3);
  EXPECT_EQ(image.pixels, gray);
}

TEST(ImageDecode, PngAlphaIsDroppedNotComposited) {
  Bytes rgba = {10, 20, 30, 0, 40, 50, 60, 128};
  Image image =
      decodeImageBytes(test::encodePng(2, 1, PNG_COLOR_TYPE_RGB_ALPHA, 8, rgba), "rgba.png");
  EXPECT_EQ(image.channels, 3);
  EXPECT_EQ(image.pixels, (Bytes{10, 20, 30, 40, 50, 60}));

  Bytes grayAlpha = {200, 0, 100, 255};
  image = decodeImageBytes(test::encodePng(2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, grayAlpha), "ga");
  EXPECT_EQ(image.channels, 1);
  EXPECT_EQ(image.pixels, (Bytes{200, 100}));
}

TEST(ImageDecode, PngPaletteLowBitAnd16BitConvert) {
  Bytes palette = {255, 0, 0, 0, 255, 0, 0, 0, 255};
  Bytes indices = {0, 2, 1};
  Image image = decodeImageBytes(
      test::encodePng(3, 1, PNG_COLOR_TYPE_PALETTE, 8, indices, false, palette), "palette.png");
  EXPECT_EQ(image.channels, 3);
  EXPECT_EQ(image.pixels, (Bytes{255, 0, 0, 0, 0, 255, 0, 255, 0}));

  // 2-bit gray 0,1,2,3 packed in one byte: expanded to 0, 85, 170, 255.
  image = decodeImageBytes(test::encodePng(4, 1, PNG_COLOR_TYPE_GRAY, 2, Bytes{0x1b}), "g2.png");
  EXPECT_EQ(image.pixels, (Bytes{0, 85, 170, 255}));

  // 16-bit samples keep their high byte, as OpenCV and PIL read them.
  Bytes wide = {0x12, 0x34, 0xff, 0xff, 0x00, 0xff};
  image = decodeImageBytes(test::encodePng(3, 1, PNG_COLOR_TYPE_GRAY, 16, wide), "g16.png");
  EXPECT_EQ(image.pixels, (Bytes{0x12, 0xff, 0x00}));
}

TEST(ImageDecode, PngInterlacedGivesTheSamePixels) {
  Bytes pixels(9 * 7 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  Image plain = decodeImageBytes(test::encodePng(9, 7, 3, pixels), "plain.png");
  Image interlaced = decodeImageBytes(test::encodePng(9, 7, PNG_COLOR_TYPE_RGB, 8, pixels, true),
                                      "interlaced.png");
  EXPECT_EQ(plain.pixels, pixels);
  EXPECT_EQ(interlaced.pixels, pixels);
}

TEST(ImageDecode, JpegFlatColoursDecodeClose) {
  Bytes gray(16 * 16, 100);
  Image image = decodeImageBytes(test::encodeJpeg(16, 16, 1, gray), "gray.jpg");
  EXPECT_EQ(image.channels, 1);
  EXPECT_EQ(image.width, 16);
  for (uint8_t v : image.pixels) EXPECT_NEAR(v, 100, 1);

  Bytes rgb;
  for (int i = 0; i < 16 * 8; ++i) rgb.insert(rgb.end(), {200, 40, 90});
  for (bool progressive : {false, true}) {
    image = decodeImageBytes(test::encodeJpeg(16, 8, 3, rgb, 100, progressive), "rgb.jpg");
    ASSERT_EQ(image.channels, 3);
    ASSERT_EQ(image.pixels.size(), rgb.size());
    for (size_t i = 0; i < rgb.size(); ++i) EXPECT_NEAR(image.pixels[i], rgb[i], 3) << i;
  }
}

TEST(ImageDecode, ContentDecidesNotTheName) {
  test::TempFolder folder;
  Bytes gray(8 * 8, 60);
  auto file = folder.write("really-a-jpeg.png", test::encodeJpeg(8, 8, 1, gray));
  Image image = decodeImage(file);
  EXPECT_EQ(image.width, 8);
  EXPECT_NEAR(image.pixels[0], 60, 1);
  auto text = folder.write("text.png", Bytes{'h', 'e', 'l', 'l', 'o'});
  EXPECT_EQ(inputCause(text), "not a PNG or JPEG image (it starts with 68 65 6c 6c 6f)");
  EXPECT_EQ(inputCause(folder.write("empty.jpg", Bytes{})),
            "not a PNG or JPEG image (the file is empty)");
}

TEST(ImageDecode, TruncatedFilesAreErrors) {
  test::TempFolder folder;
  Bytes pixels(32 * 32 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 13 + i / 7);
  Bytes png = test::encodePng(32, 32, 3, pixels);
  Bytes jpeg = test::encodeJpeg(32, 32, 3, pixels, 90);
  for (size_t keep : {png.size() / 2, png.size() - 12, size_t{20}}) {
    auto file = folder.write("cut.png", std::span(png).first(keep));
    EXPECT_EQ(inputCause(file), "truncated PNG data") << keep;
  }
  for (size_t keep : {jpeg.size() / 2, jpeg.size() - 2, size_t{30}}) {
    auto file = folder.write("cut.jpg", std::span(jpeg).first(keep));
    EXPECT_EQ(inputCause(file), "truncated JPEG data") << keep;
  }
}

TEST(ImageDecode, CorruptFilesAreErrors) {
  test::TempFolder folder;
  Bytes pixels(16 * 16 * 3, 77);
  Bytes png = test::encodePng(16, 16, 3, pixels);
  png[png.size() - 20] ^= 0x55;  // inside IDAT: its CRC no longer matches
  EXPECT_TRUE(contains(inputCause(folder.write("crc.png", png)), "cannot decode the PNG image"));

  Bytes jpeg = test::encodeJpeg(16, 16, 3, pixels, 90);
  Bytes garbage(jpeg.begin(), jpeg.begin() + 3);
  garbage.insert(garbage.end(), 200, 0x42);
  EXPECT_TRUE(contains(inputCause(folder.write("garbage.jpg", garbage)), "JPEG"));
}

TEST(ImageDecode, HugeDimensionsAreRefusedBeforeDecoding) {
  test::TempFolder folder;
  // A 1x1 PNG whose IHDR (at byte 8) then claims 30000x30000: 9 * 10^8 pixels.
  Bytes png = test::encodePng(1, 1, 1, Bytes{0});
  for (size_t at : {16, 20}) {
    png[at] = 0, png[at + 1] = 0, png[at + 2] = 0x75, png[at + 3] = 0x30;
  }
  test::fixPngChunkCrc(png, 8);
  EXPECT_EQ(inputCause(folder.write("huge.png", png)),
            "the PNG image is 30000x30000: more than 2^28 pixels");
  // Over 65535 a side: libpng's own limit, set to 65535.
  png[16] = 0, png[17] = 1, png[18] = 0, png[19] = 0;
  png[20] = 0, png[21] = 0, png[22] = 0, png[23] = 1;
  test::fixPngChunkCrc(png, 8);
  std::string wide = inputCause(folder.write("wide.png", png));
  EXPECT_TRUE(contains(wide, "exceeds user limit")) << wide;

  // A JPEG whose SOF0 claims 65000x65000.
  Bytes jpeg = test::encodeJpeg(8, 8, 1, Bytes(64, 1));
  for (size_t i = 2; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) {
      jpeg[i + 5] = 0xfd, jpeg[i + 6] = 0xe8, jpeg[i + 7] = 0xfd, jpeg[i + 8] = 0xe8;
      break;
    }
  }
  EXPECT_EQ(inputCause(folder.write("huge.jpg", jpeg)),
            "the JPEG image is 65000x65000: more than 2^28 pixels");
}

TEST(ImageDecode, SameBytesGiveTheSamePixels) {
  Bytes pixels(24 * 24 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 31);
  Bytes jpeg = test::encodeJpeg(24, 24, 3, pixels, 75, true);
  EXPECT_EQ(decodeImageBytes(jpeg, "a.jpg").pixels, decodeImageBytes(jpeg, "a.jpg").pixels);
}

}  // namespace
}  // namespace qopt::media
