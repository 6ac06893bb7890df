// The JSON file of every scale a quantization pass chose or removed, for people and scripts:
//
//   {"format": "qopt-scales", "version": 1,
//    "tensors": [{"tensor": "x", "amax": 6.0, "scale": 0.0472, "zero_point": 0, "type": "int8",
//                 "axis": null, "calibrator": "entropy", "samples": 96}, ...]}
//
// Per-channel entries hold arrays in "amax", "scale" and "zero_point" and an integer "axis".
// An activation calibrated by calibrator=auto also holds why its range was chosen:
//
//   "auto": {"chosen": "mse", "reason": "smallest consumer error",
//            "candidates": [{"calibrator": "max", "amax": 9.1, "error": 0.0031}, ...]}
//
// where "error" is the consumers' mean noise / signal (null when it was not measured).
// Entries are written in the given order; numbers round-trip exactly (shortest repr).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qopt::quant {

/// Why calibrator=auto chose a tensor's range (see AutoCalibration.h).
struct AutoRecord {
  struct Candidate {
    std::string calibrator;
    double amax = 0;
    std::optional<double> error;
  };
  std::string chosen;
  std::string reason;
  std::vector<Candidate> candidates;
};

struct ScaleEntry {
  std::string tensor;
  std::vector<double> amax;        // one per channel (one value when per tensor)
  std::vector<double> scale;       // likewise
  std::vector<int64_t> zeroPoint;  // empty: all zero (written as zeros)
  std::string type = "int8";       // "int8", "uint8", "int16"...
  std::optional<int64_t> axis;     // per-channel axis
  std::string calibrator;          // "max", "entropy"...; "weights" for weights; "" unknown
  uint64_t samples = 0;
  std::optional<AutoRecord> autoChoice;  // calibrator "auto" only
};

std::string formatScales(const std::vector<ScaleEntry>& entries);
/// Throws qopt::Error (Input) naming `source` for text that is not a qopt-scales file.
std::vector<ScaleEntry> parseScales(std::string_view text, std::string_view source);

/// Atomic write; throws qopt::Error naming the file on failure (an inconsistent entry is found
/// before anything is written).
void writeScales(const std::vector<ScaleEntry>& entries, const std::filesystem::path& path);
std::vector<ScaleEntry> readScales(const std::filesystem::path& path);

}  // namespace qopt::quant
