// PNG with libpng's sequential reader. libpng reports errors by longjmp, which skips C++
// destructors, so everything between setjmp and the last libpng call lives in one plain struct
// and one function without C++ objects; the C++ wrapper frees what that function allocated.
//
// The transformations are those OpenCV's and PIL's readers apply, so that the pixels match what
// a model was trained on: palettes and gray under 8 bits expanded, 16-bit samples cut to their
// high byte, alpha (and tRNS) dropped without compositing, and no gamma correction.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media::detail {

namespace {

struct PngRead {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t offset = 0;
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::jmp_buf jump;
  char message[256] = {};
  char warning[256] = {};  // the last one: libpng explains some errors in a warning first
  bool truncated = false;
  bool tooLarge = false;
  uint32_t width = 0, height = 0;
  int channels = 0;
  uint8_t* pixels = nullptr;  // calloc'd: pages the decoder never reaches stay untouched
};

void onPngError(png_structp png, png_const_charp text) {
  auto* read = static_cast<PngRead*>(png_get_error_ptr(png));
  std::snprintf(read->message, sizeof read->message, "%s", text);
  std::longjmp(read->jump, 1);
}

// Warnings are about ancillary chunks (bad CRCs, odd text), after which the image still
// decodes, or explain the error that follows ("Image width exceeds user limit in IHDR" before
// "Invalid IHDR data"): the last is kept for that error's message.
void onPngWarning(png_structp png, png_const_charp text) {
  auto* read = static_cast<PngRead*>(png_get_error_ptr(png));
  std::snprintf(read->warning, sizeof read->warning, "%s", text);
}

void readPngBytes(png_structp png, png_bytep out, size_t count) {
  auto* read = static_cast<PngRead*>(png_get_io_ptr(png));
  if (count > read->size - read->offset) {
    read->truncated = true;
    png_error(png, "truncated");
  }
  std::memcpy(out, read->data + read->offset, count);
  read->offset += count;
}

// Returns false with read->message set. Keep C++ objects out of this function.
bool readPng(PngRead* read) {
  if (setjmp(read->jump)) return false;
  read->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, read, onPngError, onPngWarning);
  if (read->png == nullptr) {
    std::snprintf(read->message, sizeof read->message, "cannot start libpng");
    return false;
  }
  read->info = png_create_info_struct(read->png);
  if (read->info == nullptr) png_error(read->png, "cannot start libpng");
  png_set_user_limits(read->png, kMaxImageSide, kMaxImageSide);
  png_set_read_fn(read->png, read, readPngBytes);
  png_read_info(read->png, read->info);

  read->width = png_get_image_width(read->png, read->info);
  read->height = png_get_image_height(read->png, read->info);
  if (uint64_t{read->width} * read->height > uint64_t{kMaxImagePixels}) {
    read->tooLarge = true;
    return false;
  }
  png_set_expand(read->png);
  png_set_strip_16(read->png);
  png_set_strip_alpha(read->png);
  int passes = png_set_interlace_handling(read->png);
  png_read_update_info(read->png, read->info);
  read->channels = png_get_channels(read->png, read->info);
  size_t rowBytes = png_get_rowbytes(read->png, read->info);
  if ((read->channels != 1 && read->channels != 3) ||
      rowBytes != size_t{read->width} * read->channels) {
    png_error(read->png, "unexpected pixel format after conversion");
  }
  read->pixels = static_cast<uint8_t*>(std::calloc(rowBytes * read->height, 1));
  if (read->pixels == nullptr) png_error(read->png, "out of memory");
  for (int pass = 0; pass < passes; ++pass) {
    for (uint32_t y = 0; y < read->height; ++y) {
      png_read_row(read->png, read->pixels + rowBytes * y, nullptr);
    }
  }
  // Reads through IEND: a file cut after its image data is still a truncated file.
  png_read_end(read->png, nullptr);
  return true;
}

}  // namespace

Image decodePng(std::span<const uint8_t> bytes, const std::string& name) {
  PngRead read;
  read.data = bytes.data();
  read.size = bytes.size();
  bool ok = readPng(&read);
  Image image;
  if (ok) image = copiedImage(read.width, read.height, read.channels, read.pixels);
  png_destroy_read_struct(&read.png, &read.info, nullptr);
  std::free(read.pixels);
  if (!ok && read.truncated) throw inputError(name, "truncated PNG data");
  if (!ok && read.tooLarge) {
    throw inputError(name, fmt::format("the PNG image is {}x{}: more than 2^28 pixels", read.width,
                                       read.height));
  }
  if (!ok) {
    std::string detail = read.message;
    if (read.warning[0] != '\0') detail += std::string("; warned: ") + read.warning;
    throw inputError(name, fmt::format("cannot decode the PNG image (libpng: {})", detail));
  }
  return image;
}

}  // namespace qopt::media::detail
