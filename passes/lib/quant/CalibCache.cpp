#include "qopt/quant/CalibCache.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>

#include <fmt/format.h>

#include "TextFile.h"
#include "qopt/ir/Error.h"

namespace qopt::quant {

namespace {

constexpr std::string_view kAlgorithms[] = {"EntropyCalibration2", "EntropyCalibration",
                                            "MinMaxCalibration", "LegacyCalibration"};

bool knownAlgorithm(std::string_view name) {
  for (std::string_view known : kAlgorithms) {
    if (name == known) return true;
  }
  return false;
}

std::string algorithmList() {
  std::string out;
  for (std::string_view known : kAlgorithms) {
    if (!out.empty()) out += ", ";
    out += known;
  }
  return out;
}

Error lineError(std::string_view source, size_t line, std::string cause) {
  return Error(ErrorKind::Input, std::string(source), fmt::format("line {}", line),
               std::move(cause));
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// TensorRT reads the field with stoul(..., 16), so both letter cases are accepted; anything but
/// exactly eight digits is refused because it cannot be a float32 bit pattern as TensorRT writes
/// it.
bool parseHexBits(std::string_view text, uint32_t& bits) {
  if (text.size() != 8) return false;
  bits = 0;
  for (char c : text) {
    int digit = hexDigit(c);
    if (digit < 0) return false;
    bits = (bits << 4) | static_cast<uint32_t>(digit);
  }
  return true;
}

/// "TRT-<version>-<algorithm>"; the algorithm never holds '-', the version is decimal.
void parseHeader(std::string_view line, std::string_view source, CalibrationCache& cache) {
  auto bad = [&](const std::string& why) {
    return lineError(source, 1,
                     fmt::format("'{}' is not a TensorRT calibration cache header "
                                 "(TRT-<version>-<algorithm>): {}",
                                 line, why));
  };
  constexpr std::string_view kPrefix = "TRT-";
  if (!line.starts_with(kPrefix)) throw bad("it does not start with 'TRT-'");
  std::string_view rest = line.substr(kPrefix.size());
  size_t dash = rest.find('-');
  if (dash == std::string_view::npos) throw bad("no '-' before the algorithm");
  std::string_view version = rest.substr(0, dash);
  std::string_view algorithm = rest.substr(dash + 1);
  int code = 0;
  auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), code);
  if (version.empty() || ec != std::errc() || end != version.data() + version.size() ||
      version.front() == '-' || version.front() == '+') {
    throw bad(fmt::format("version '{}' is not a decimal number", version));
  }
  if (!knownAlgorithm(algorithm)) {
    throw bad(
        fmt::format("unknown algorithm '{}' (expected one of {})", algorithm, algorithmList()));
  }
  cache.versionCode = code;
  cache.algorithm = std::string(algorithm);
}

/// What makes a name impossible to write on one cache line or to read back unambiguously.
std::string nameProblem(std::string_view name) {
  if (name.empty()) return "the tensor name is empty";
  if (name.find_first_of("\r\n") != std::string_view::npos) {
    return "the tensor name holds a line break";
  }
  return {};
}

}  // namespace

std::string_view cacheAlgorithmFor(std::string_view calibrator) {
  if (calibrator == "max") return "MinMaxCalibration";
  // auto mixes thresholds of several calibrators, which no TensorRT algorithm name describes.
  // TensorRT reads every algorithm's scales alike and only compares the header with the
  // calibrator that reads the cache: EntropyCalibration2 is TensorRT's default calibrator
  // (IInt8EntropyCalibrator2), the one trtexec --calib reads the cache with, so the cache is
  // used rather than recalibrated. The other histogram calibrators get it for the same reason.
  return "EntropyCalibration2";
}

std::string formatCalibrationCache(const CalibrationCache& cache) {
  if (cache.versionCode < 0) {
    throw Error(ErrorKind::Internal, {}, {},
                fmt::format("calibration cache version code {} is negative", cache.versionCode));
  }
  if (!knownAlgorithm(cache.algorithm)) {
    throw Error(ErrorKind::Internal, {}, {},
                fmt::format("unknown calibration cache algorithm '{}' (expected one of {})",
                            cache.algorithm, algorithmList()));
  }
  std::string out = fmt::format("TRT-{}-{}\n", cache.versionCode, cache.algorithm);
  std::set<std::string_view> seen;
  for (const CacheEntry& entry : cache.entries) {
    std::string subject = fmt::format("tensor '{}'", entry.tensor);
    if (std::string problem = nameProblem(entry.tensor); !problem.empty()) {
      throw Error(ErrorKind::Input, {}, subject, problem);
    }
    if (!std::isfinite(entry.scale) || entry.scale < 0) {
      throw Error(ErrorKind::Input, {}, subject,
                  fmt::format("scale {} cannot be written to a calibration cache", entry.scale));
    }
    if (!seen.insert(entry.tensor).second) {
      throw Error(ErrorKind::Input, {}, subject, "the tensor is listed twice");
    }
    out += fmt::format("{}: {:08x}\n", entry.tensor, std::bit_cast<uint32_t>(entry.scale));
  }
  return out;
}

CalibrationCache parseCalibrationCache(std::string_view text, std::string_view source) {
  CalibrationCache cache;
  std::set<std::string, std::less<>> seen;
  size_t lineNumber = 0;
  bool headerSeen = false;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++lineNumber;
    if (line.ends_with('\r')) line.remove_suffix(1);  // files edited on Windows
    if (!headerSeen) {
      parseHeader(line, source, cache);
      headerSeen = true;
      continue;
    }
    if (line.empty()) continue;
    size_t colon = line.rfind(": ");
    if (colon == std::string_view::npos) {
      throw lineError(source, lineNumber,
                      fmt::format("'{}' is not '<tensor name>: <8 hex digits>'", line));
    }
    std::string_view name = line.substr(0, colon);
    std::string_view hex = line.substr(colon + 2);
    if (std::string problem = nameProblem(name); !problem.empty()) {
      throw lineError(source, lineNumber, fmt::format("'{}': {}", line, problem));
    }
    uint32_t bits = 0;
    if (!parseHexBits(hex, bits)) {
      throw lineError(source, lineNumber,
                      fmt::format("scale '{}' of tensor '{}' is not 8 hex digits", hex, name));
    }
    float scale = std::bit_cast<float>(bits);
    if (!std::isfinite(scale) || scale < 0) {
      throw lineError(source, lineNumber,
                      fmt::format("scale {} ({}) of tensor '{}' is not a finite non-negative "
                                  "number",
                                  scale, hex, name));
    }
    if (!seen.emplace(name).second) {
      throw lineError(source, lineNumber, fmt::format("tensor '{}' is listed twice", name));
    }
    cache.entries.push_back({std::string(name), scale});
  }
  if (!headerSeen) throw lineError(source, 1, "the file is empty (no TRT-<version>-<algorithm>)");
  return cache;
}

void writeCalibrationCache(const CalibrationCache& cache, const std::filesystem::path& path) {
  detail::writeTextFile(path, [&] { return formatCalibrationCache(cache); });
}

CalibrationCache readCalibrationCache(const std::filesystem::path& path) {
  return parseCalibrationCache(detail::readTextFile(path), path.string());
}

}  // namespace qopt::quant
