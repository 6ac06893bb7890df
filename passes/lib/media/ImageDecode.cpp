// Images are told apart by their first bytes, not by their names: a .png file that holds a JPEG
// (a common result of renaming downloads) decodes as the JPEG it is. Anything else is an error
// that shows how the file starts.
#include <algorithm>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media {

namespace {

bool startsWith(std::span<const uint8_t> bytes, std::initializer_list<uint8_t> signature) {
  return bytes.size() >= signature.size() &&
         std::equal(signature.begin(), signature.end(), bytes.begin());
}

std::string describeStart(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return "the file is empty";
  std::string hex;
  for (uint8_t byte : bytes.first(std::min<size_t>(bytes.size(), 8))) {
    hex += fmt::format("{}{:02x}", hex.empty() ? "" : " ", byte);
  }
  return fmt::format("it starts with {}", hex);
}

}  // namespace

namespace detail {

Image copiedImage(int64_t width, int64_t height, int64_t channels, const uint8_t* pixels) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.assign(pixels, pixels + width * height * channels);
  return image;
}

}  // namespace detail

Image decodeImageBytes(std::span<const uint8_t> bytes, const std::string& displayName) {
  if (startsWith(bytes, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) {
    return detail::decodePng(bytes, displayName);
  }
  if (startsWith(bytes, {0xff, 0xd8, 0xff})) return detail::decodeJpeg(bytes, displayName);
  throw detail::inputError(displayName,
                           fmt::format("not a PNG or JPEG image ({})", describeStart(bytes)));
}

Image decodeImage(const std::filesystem::path& file) {
  return decodeImageBytes(detail::readFileBytes(file), file.string());
}

}  // namespace qopt::media
