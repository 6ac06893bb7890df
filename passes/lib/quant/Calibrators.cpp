// The calibrators: a threshold on |x| picked from a TensorStatistics histogram.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/EnumNames.h"
#include "qopt/pass/Suggest.h"
#include "qopt/quant/Calibration.h"

namespace qopt::quant {

namespace {

// Also the order parseCalibrator tries the names in.
constexpr EnumName<CalibratorKind> kCalibratorNames[] = {{CalibratorKind::Max, "max"},
                                                         {CalibratorKind::Percentile, "percentile"},
                                                         {CalibratorKind::Entropy, "entropy"},
                                                         {CalibratorKind::Mse, "mse"},
                                                         {CalibratorKind::Auto, "auto"}};

double percentileAmax(const TensorStatistics& stats, double percentile) {
  const std::vector<uint64_t>& bins = stats.histogram();
  uint64_t total = 0;
  for (uint64_t c : bins) total += c;
  const double wanted = percentile / 100.0 * static_cast<double>(total);
  uint64_t seen = 0;
  for (size_t j = 0; j < bins.size(); ++j) {
    seen += bins[j];
    if (static_cast<double>(seen) >= wanted) return static_cast<double>(j + 1) * stats.binWidth();
  }
  return static_cast<double>(bins.size()) * stats.binWidth();
}

void checkSpec(const CalibratorSpec& spec) {
  if (spec.kind == CalibratorKind::Percentile && !(spec.percentile > 0 && spec.percentile <= 100)) {
    throw Error(ErrorKind::Usage, {}, {},
                fmt::format("percentile {} is not in (0, 100]", spec.percentile));
  }
  if (spec.levels < 1) {
    throw Error(ErrorKind::Usage, {}, {},
                fmt::format("{} quantization levels: at least 1 is needed", spec.levels));
  }
  if (spec.kind == CalibratorKind::Auto) {
    throw Error(ErrorKind::Usage, {}, {},
                "calibrator auto chooses from the consumers' error, which a histogram alone "
                "does not give (chooseAutoRanges)");
  }
}

}  // namespace

std::string_view calibratorName(CalibratorKind kind) {
  return enumName(kCalibratorNames, kind, "max");
}

CalibratorKind parseCalibrator(std::string_view text) {
  std::vector<std::string> names;
  for (const auto& [kind, name] : kCalibratorNames) {
    if (text == name) return kind;
    names.emplace_back(name);
  }
  throw Error(
      ErrorKind::Usage, {}, {},
      fmt::format("unknown calibrator '{}' (expected max, percentile, entropy, mse or auto){}",
                  text, didYouMean(text, names)));
}

// The squared error of quantize-dequantize (scale amax / levels, half-to-even rounding,
// saturation at levels) at every bin centre, weighted by the bin's count, for every upper bin
// edge as amax (pytorch-quantization's mse calibrator computes it the same way on the centres).
size_t mseThresholdBins(std::span<const uint64_t> histogram, int levels) {
  std::vector<size_t> occupied;
  for (size_t j = 0; j < histogram.size(); ++j) {
    if (histogram[j] != 0) occupied.push_back(j);
  }
  if (occupied.empty()) return 0;
  const double steps = static_cast<double>(std::max(levels, 1));
  size_t best = 0;
  double bestError = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i <= histogram.size(); ++i) {
    // In units of a bin width: amax = i, centre of bin j = j + 0.5.
    const double scale = static_cast<double>(i) / steps;
    double error = 0;
    for (size_t j : occupied) {
      const double centre = static_cast<double>(j) + 0.5;
      const double level = std::min(std::nearbyint(centre / scale), steps);
      const double diff = centre - level * scale;
      error += static_cast<double>(histogram[j]) * diff * diff;
    }
    if (error < bestError) {
      bestError = error;
      best = i;
    }
  }
  return best;
}

namespace {

/// Whether the largest magnitude is a saturation level rather than an outlier (see computeAmax).
bool saturates(const TensorStatistics& stats) {
  const uint64_t nonZero = stats.count() - stats.zeros();
  return stats.atAbsMax() >= kSaturationMinCount &&
         static_cast<double>(stats.atAbsMax()) >= kSaturationShare * static_cast<double>(nonZero);
}

/// The histogram without the exact zeros (see computeAmax).
std::vector<uint64_t> nonZeroHistogram(const TensorStatistics& stats) {
  std::vector<uint64_t> bins = stats.histogram();
  bins[0] -= std::min(bins[0], stats.zeros());
  return bins;
}

}  // namespace

double computeAmax(const TensorStatistics& stats, const CalibratorSpec& spec) {
  checkSpec(spec);
  const double absMax = stats.absMax();
  if (stats.histogram().empty() || absMax == 0) return 0;
  const double width = stats.binWidth();
  double amax = absMax;
  switch (spec.kind) {
    case CalibratorKind::Max:
      break;
    case CalibratorKind::Percentile:
      amax = percentileAmax(stats, spec.percentile);
      break;
    case CalibratorKind::Entropy:
      if (saturates(stats)) break;
      if (size_t i = entropyThresholdBins(nonZeroHistogram(stats), spec.levels); i != 0) {
        amax = (static_cast<double>(i) + 0.5) * width;
      }
      break;
    case CalibratorKind::Auto:  // refused by checkSpec
      break;
    case CalibratorKind::Mse:
      if (size_t i = mseThresholdBins(nonZeroHistogram(stats), spec.levels); i != 0) {
        amax = static_cast<double>(i) * width;
      }
      break;
  }
  return std::min(amax, absMax);
}

}  // namespace qopt::quant
