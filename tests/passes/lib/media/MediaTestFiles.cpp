#include "MediaTestFiles.h"

#include <png.h>
#include <sndfile.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

namespace qopt::media::test {

namespace {

void appendPngBytes(png_structp png, png_bytep data, size_t size) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + size);
}

void flushNothing(png_structp) {}

struct MemoryFile {
  Bytes bytes;
  sf_count_t offset = 0;
};

sf_count_t fileLength(void* user) {
  return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes.size());
}
sf_count_t fileSeek(sf_count_t offset, int whence, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  sf_count_t base = whence == SEEK_CUR   ? file->offset
                    : whence == SEEK_END ? static_cast<sf_count_t>(file->bytes.size())
                                         : 0;
  file->offset = base + offset;
  return file->offset;
}
sf_count_t fileRead(void* out, sf_count_t count, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  sf_count_t n =
      std::min<sf_count_t>(count, static_cast<sf_count_t>(file->bytes.size()) - file->offset);
  if (n <= 0) return 0;
  std::memcpy(out, file->bytes.data() + file->offset, static_cast<size_t>(n));
  file->offset += n;
  return n;
}
sf_count_t fileWrite(const void* data, sf_count_t count, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  size_t end = static_cast<size_t>(file->offset + count);
  if (end > file->bytes.size()) file->bytes.resize(end);
  std::memcpy(file->bytes.data() + file->offset, data, static_cast<size_t>(count));
  file->offset += count;
  return count;
}
sf_count_t fileTell(void* user) {
  return static_cast<MemoryFile*>(user)->offset;
}

template <class Write>
Bytes encodeClip(int rate, int channels, int format, Write write) {
  MemoryFile memory;
  SF_VIRTUAL_IO io{fileLength, fileSeek, fileRead, fileWrite, fileTell};
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* file = sf_open_virtual(&io, SFM_WRITE, &info, &memory);
  if (file == nullptr) throw std::runtime_error(sf_strerror(nullptr));
  write(file);
  sf_close(file);
  return memory.bytes;
}

}  // namespace

Bytes encodePng(int width, int height, int colorType, int bitDepth,
                std::span<const uint8_t> samples, bool interlaced,
                std::span<const uint8_t> palette) {
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, appendPngBytes, flushNothing);
  png_set_IHDR(png, info, width, height, bitDepth, colorType,
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> colors;
  for (size_t i = 0; i + 2 < palette.size(); i += 3) {
    colors.push_back({palette[i], palette[i + 1], palette[i + 2]});
  }
  if (!colors.empty()) png_set_PLTE(png, info, colors.data(), static_cast<int>(colors.size()));
  png_write_info(png, info);
  size_t rowBytes = samples.size() / static_cast<size_t>(height);
  std::vector<png_bytep> rows;
  for (int y = 0; y < height; ++y) {
    rows.push_back(const_cast<png_bytep>(samples.data() + rowBytes * static_cast<size_t>(y)));
  }
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

Bytes encodePng(int width, int height, int channels, std::span<const uint8_t> pixels) {
  return encodePng(width, height, channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, 8,
                   pixels);
}

Bytes encodeJpeg(int width, int height, int channels, std::span<const uint8_t> pixels, int quality,
                 bool progressive) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr errors;
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  size_t rowBytes = static_cast<size_t>(width * channels);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto* row = const_cast<JSAMPROW>(pixels.data() + rowBytes * cinfo.next_scanline);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

Bytes encodeAudio(int rate, int channels, std::span<const int16_t> samples, int format) {
  return encodeClip(rate, channels, format, [&](SNDFILE* file) {
    sf_writef_short(file, samples.data(), static_cast<sf_count_t>(samples.size() / channels));
  });
}

Bytes encodeAudioFloat(int rate, int channels, std::span<const float> samples, int format) {
  return encodeClip(rate, channels, format, [&](SNDFILE* file) {
    sf_writef_float(file, samples.data(), static_cast<sf_count_t>(samples.size() / channels));
  });
}

void fixPngChunkCrc(Bytes& png, size_t offset) {
  uint32_t length = uint32_t{png[offset]} << 24 | uint32_t{png[offset + 1]} << 16 |
                    uint32_t{png[offset + 2]} << 8 | png[offset + 3];
  uLong crc = crc32(0, png.data() + offset + 4, length + 4);
  size_t at = offset + 8 + length;
  for (int i = 0; i < 4; ++i) png[at + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
}

TempFolder::TempFolder() {
  std::random_device random;
  path_ = std::filesystem::temp_directory_path() /
          ("qopt-media-test-" + std::to_string(random()) + std::to_string(random()));
  std::filesystem::create_directories(path_);
}

TempFolder::~TempFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempFolder::write(const std::string& name,
                                        std::span<const uint8_t> bytes) const {
  std::filesystem::path file = path_ / name;
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return file;
}

}  // namespace qopt::media::test
