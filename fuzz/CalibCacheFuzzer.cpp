// TensorRT calibration caches: any text either fails with qopt::Error or parses to a cache whose
// formatted text parses back to the same cache (scales bit for bit) and formats the same.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "FuzzSupport.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/CalibCache.h"

namespace {

bool sameCache(const qopt::quant::CalibrationCache& a, const qopt::quant::CalibrationCache& b) {
  if (a.versionCode != b.versionCode || a.algorithm != b.algorithm ||
      a.entries.size() != b.entries.size()) {
    return false;
  }
  for (size_t i = 0; i < a.entries.size(); ++i) {
    if (a.entries[i].tensor != b.entries[i].tensor ||
        std::memcmp(&a.entries[i].scale, &b.entries[i].scale, sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qopt::quant;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CalibrationCache cache;
  try {
    cache = parseCalibrationCache(text, "fuzz.cache");
  } catch (const qopt::Error&) {
    return 0;
  }
  std::string formatted = formatCalibrationCache(cache);
  CalibrationCache again;
  try {
    again = parseCalibrationCache(formatted, "formatted.cache");
  } catch (const qopt::Error& e) {
    qopt::fuzz::propertyFailed("a formatted calibration cache does not parse",
                               formatted + "\n" + e.what());
  }
  if (!sameCache(cache, again)) {
    qopt::fuzz::propertyFailed("format, parse changed the calibration cache", formatted);
  }
  if (formatCalibrationCache(again) != formatted) {
    qopt::fuzz::propertyFailed("format, parse, format changed the text", formatted);
  }
  return 0;
}
