// Image files for calibration data: PNG and JPEG through qopt::media (libpng, libjpeg-turbo).
// Any bytes either fail with qopt::Error or give an image whose size and pixel count agree,
// within the size limit, and the same pixels when decoded again (no state, no threads).
#include <cstdint>
#include <string>

#include "FuzzSupport.h"
#include "qopt/ir/Error.h"
#include "qopt/media/Media.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  qopt::media::Image image;
  try {
    image = qopt::media::decodeImageBytes(bytes, "fuzz.png");
  } catch (const qopt::Error&) {
    return 0;
  }
  if (image.width < 1 || image.height < 1 || image.width > 65535 || image.height > 65535 ||
      image.width * image.height > (int64_t{1} << 28)) {
    qopt::fuzz::propertyFailed("a decoded image has a size outside the limits",
                               std::to_string(image.width) + "x" + std::to_string(image.height));
  }
  if (image.channels != 1 && image.channels != 3) {
    qopt::fuzz::propertyFailed("a decoded image is neither gray nor RGB",
                               std::to_string(image.channels));
  }
  if (image.pixels.size() != static_cast<size_t>(image.width * image.height * image.channels)) {
    qopt::fuzz::propertyFailed("a decoded image's pixels do not match its size", "");
  }
  if (qopt::media::decodeImageBytes(bytes, "fuzz.png").pixels != image.pixels) {
    qopt::fuzz::propertyFailed("decoding the same bytes twice gave different pixels", "");
  }
  return 0;
}
