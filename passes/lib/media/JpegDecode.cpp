// JPEG with libjpeg-turbo's libjpeg API. libjpeg's default error handler calls exit(); this one
// longjmps back instead, so, as for PNG, the setjmp region is one function over one plain struct
// and the C++ wrapper frees what it allocated.
//
// libjpeg decodes damaged data with a warning and goes on with grey blocks, and on a file that
// ends early it invents the end and warns "Premature end of JPEG file". Warnings that mean image
// data is missing or damaged are errors here: calibration on silently broken pictures is worse
// than a message. Harmless ones (extraneous bytes between markers, an unknown JFIF revision or
// Adobe transform, a bad ICC marker) are not, as in PIL and OpenCV, which accept those files.
//
// The output is gray for one-component files and RGB otherwise, with the accurate integer IDCT
// and libjpeg's default (fancy) upsampling, which PIL and OpenCV use too. CMYK files are refused.
#include <csetjmp>
#include <cstddef>
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <cstdlib>

#include <jpeglib.h>
// After jpeglib.h: the message codes.
#include <jerror.h>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media::detail {

namespace {

// A progressive file holds its whole image as coefficients while it decodes; past this budget
// libjpeg stops with an error instead of allocating what a hostile header asks for.
constexpr long kMaxJpegWorkMemory = 512L << 20;
// Each progressive scan re-reads the coefficients: a file of a few kilobytes with thousands of
// empty scans would take minutes. Real encoders write about ten.
constexpr int kMaxJpegScans = 1000;

enum class JpegFailure { None, Library, Truncated, TooLarge, TooManyScans, Cmyk };

struct JpegRead {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr errors;
  std::jmp_buf jump;
  bool created = false;
  JpegFailure failure = JpegFailure::None;
  char message[JMSG_LENGTH_MAX] = {};
  int scans = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint32_t width = 0, height = 0;
  int channels = 0;
  uint8_t* pixels = nullptr;  // calloc'd: pages the decoder never reaches stay untouched
};

[[noreturn]] void fail(JpegRead* read, JpegFailure failure) {
  read->failure = failure;
  std::longjmp(read->jump, 1);
}

JpegRead* readOf(j_common_ptr cinfo) {
  return static_cast<JpegRead*>(cinfo->client_data);
}

void onJpegError(j_common_ptr cinfo) {
  JpegRead* read = readOf(cinfo);
  cinfo->err->format_message(cinfo, read->message);
  fail(read, JpegFailure::Library);
}

bool damagesImage(int code) {
  switch (code) {
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
      return true;
    default:
      return false;
  }
}

// libjpeg calls this for warnings (level -1) and trace messages (levels 0 and up), and would
// print them to stderr; nothing is printed here.
void onJpegMessage(j_common_ptr cinfo, int level) {
  JpegRead* read = readOf(cinfo);
  int code = cinfo->err->msg_code;
  if (level < 0 && code == JWRN_JPEG_EOF) fail(read, JpegFailure::Truncated);
  if (level < 0 && damagesImage(code)) {
    cinfo->err->format_message(cinfo, read->message);
    fail(read, JpegFailure::Library);
  }
  if (level >= 0 && code == JTRC_SOS && ++read->scans > kMaxJpegScans) {
    fail(read, JpegFailure::TooManyScans);
  }
}

// Returns false with read->failure set. Keep C++ objects out of this function.
bool readJpeg(JpegRead* read) {
  if (setjmp(read->jump)) return false;
  read->cinfo.err = jpeg_std_error(&read->errors);
  read->errors.error_exit = onJpegError;
  read->errors.emit_message = onJpegMessage;
  jpeg_create_decompress(&read->cinfo);
  read->created = true;
  read->cinfo.client_data = read;
  read->cinfo.mem->max_memory_to_use = kMaxJpegWorkMemory;
  jpeg_mem_src(&read->cinfo, read->data, static_cast<unsigned long>(read->size));
  if (jpeg_read_header(&read->cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(read->message, sizeof read->message, "tables only, no image");
    fail(read, JpegFailure::Library);
  }
  read->width = read->cinfo.image_width;
  read->height = read->cinfo.image_height;
  if (uint64_t{read->width} * read->height > uint64_t{kMaxImagePixels}) {
    fail(read, JpegFailure::TooLarge);
  }
  J_COLOR_SPACE space = read->cinfo.jpeg_color_space;
  if (space == JCS_CMYK || space == JCS_YCCK) fail(read, JpegFailure::Cmyk);
  read->cinfo.out_color_space = space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  read->cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&read->cinfo);
  read->channels = read->cinfo.output_components;
  size_t rowBytes = size_t{read->cinfo.output_width} * read->channels;
  read->pixels = static_cast<uint8_t*>(std::calloc(rowBytes * read->cinfo.output_height, 1));
  if (read->pixels == nullptr) {
    std::snprintf(read->message, sizeof read->message, "out of memory");
    fail(read, JpegFailure::Library);
  }
  while (read->cinfo.output_scanline < read->cinfo.output_height) {
    JSAMPROW row = read->pixels + rowBytes * read->cinfo.output_scanline;
    jpeg_read_scanlines(&read->cinfo, &row, 1);
  }
  // Reads through EOI: a file cut after its last scan is still a truncated file.
  jpeg_finish_decompress(&read->cinfo);
  return true;
}

std::string failureCause(const JpegRead& read) {
  switch (read.failure) {
    case JpegFailure::Truncated:
      return "truncated JPEG data";
    case JpegFailure::TooLarge:
      return fmt::format("the JPEG image is {}x{}: more than 2^28 pixels", read.width, read.height);
    case JpegFailure::TooManyScans:
      return fmt::format("the JPEG image has more than {} scans", kMaxJpegScans);
    case JpegFailure::Cmyk:
      return "CMYK JPEG images are not supported (convert the file to RGB)";
    default:
      if (read.errors.msg_code == JERR_NO_BACKING_STORE) {
        return fmt::format("the progressive JPEG image needs more than {} MiB to decode",
                           kMaxJpegWorkMemory >> 20);
      }
      return fmt::format("cannot decode the JPEG image (libjpeg: {})", read.message);
  }
}

}  // namespace

Image decodeJpeg(std::span<const uint8_t> bytes, const std::string& name) {
  JpegRead read;
  read.data = bytes.data();
  read.size = bytes.size();
  bool ok = readJpeg(&read);
  Image image;
  if (ok) {
    image =
        copiedImage(read.cinfo.output_width, read.cinfo.output_height, read.channels, read.pixels);
  }
  if (read.created) jpeg_destroy_decompress(&read.cinfo);
  std::free(read.pixels);
  if (!ok) throw inputError(name, failureCause(read));
  return image;
}

}  // namespace qopt::media::detail
