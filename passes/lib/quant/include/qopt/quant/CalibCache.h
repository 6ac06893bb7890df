// TensorRT's calibration cache, the file implicit-quantization builds read:
//
//   TRT-<version code>-<algorithm>
//   <tensor name>: <8 lowercase hex digits>
//
// The hex is the big-endian IEEE-754 bit pattern of the float32 scale amax / 127. Tensor names
// may contain ':', so readers split at the last ": ". See docs/tensorrt.md.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace qopt::quant {

struct CacheEntry {
  std::string tensor;
  float scale = 0;  // amax / 127
};

struct CalibrationCache {
  int versionCode = 0;              // 8601 for TensorRT 8.6.1, 100300 for 10.3
  std::string algorithm;            // EntropyCalibration2, EntropyCalibration, MinMaxCalibration,
                                    // LegacyCalibration
  std::vector<CacheEntry> entries;  // in file order
};

/// The header algorithm TensorRT uses for a qopt calibrator name ("entropy" ->
/// EntropyCalibration2, "max" -> MinMaxCalibration, "auto" and others -> EntropyCalibration2 as
/// TensorRT reads any algorithm's scales the same way and trtexec --calib reads caches with
/// TensorRT's default calibrator, IInt8EntropyCalibrator2).
std::string_view cacheAlgorithmFor(std::string_view calibrator);

/// The cache text, entries in the given order, hex in lowercase. Throws qopt::Error for what
/// could not be read back: an unknown algorithm, an empty name or one holding a line break, a
/// negative or non-finite scale, a tensor named twice.
std::string formatCalibrationCache(const CalibrationCache& cache);
/// Parses cache text. Throws qopt::Error (Input) naming `source` and the line for a bad header,
/// a line without ": ", a hex field that is not 8 hex digits (either letter case, as TensorRT's
/// stoul reads it), a non-finite or negative scale, or a tensor named twice. Blank lines and
/// CRLF line ends are accepted.
CalibrationCache parseCalibrationCache(std::string_view text, std::string_view source);

/// Writes atomically (temporary file, then rename); throws qopt::Error naming the file on failure
/// (refused entries are found before anything is written).
void writeCalibrationCache(const CalibrationCache& cache, const std::filesystem::path& path);
/// Reads and parses; throws qopt::Error (Input) naming the file.
CalibrationCache readCalibrationCache(const std::filesystem::path& path);

}  // namespace qopt::quant
