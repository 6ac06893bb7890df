// The calibrators: a threshold on |x| picked from a TensorStatistics histogram.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/Suggest.h"
#include "qopt/quant/Calibration.h"

namespace qopt::quant {

namespace {

constexpr CalibratorKind kKinds[] = {CalibratorKind::Max, CalibratorKind::Percentile,
                                     CalibratorKind::Entropy, CalibratorKind::Mse};

/// Mass given to an empty bin before the KL divergence is taken, in counts (as MXNet's
/// _smooth_distribution, eps = 1e-4).
constexpr double kSmoothingCounts = 1e-4;

/// Gives every empty bin kSmoothingCounts, taken from the non-empty bins in proportion to their
/// counts (MXNet subtracts it evenly, which can drive a small bin negative); the total is kept.
/// False when every bin is empty.
bool smooth(std::vector<double>& counts) {
  double total = 0;
  size_t zeros = 0;
  for (double c : counts) {
    total += c;
    zeros += c == 0 ? 1 : 0;
  }
  if (total <= 0) return false;
  if (zeros == 0) return true;
  const double moved = kSmoothingCounts * static_cast<double>(zeros);
  const double keep = (total - moved) / total;
  if (keep <= 0) return false;
  for (double& c : counts) c = c == 0 ? kSmoothingCounts : c * keep;
  return true;
}

/// KL(P || Q) of two count vectors of equal total (both normalised here).
double klDivergence(const std::vector<double>& p, const std::vector<double>& q) {
  double totalP = 0;
  double totalQ = 0;
  for (size_t j = 0; j < p.size(); ++j) {
    totalP += p[j];
    totalQ += q[j];
  }
  double kl = 0;
  for (size_t j = 0; j < p.size(); ++j) {
    if (p[j] <= 0) continue;
    const double pj = p[j] / totalP;
    kl += pj * std::log(pj / (q[j] / totalQ));
  }
  return kl;
}

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
  if (spec.kind == CalibratorKind::Percentile &&
      !(spec.percentile > 0 && spec.percentile <= 100)) {
    throw Error(ErrorKind::Usage, {}, {},
                fmt::format("percentile {} is not in (0, 100]", spec.percentile));
  }
  if (spec.levels < 1) {
    throw Error(ErrorKind::Usage, {}, {},
                fmt::format("{} quantization levels: at least 1 is needed", spec.levels));
  }
}

}  // namespace

std::string_view calibratorName(CalibratorKind kind) {
  switch (kind) {
    case CalibratorKind::Max:
      return "max";
    case CalibratorKind::Percentile:
      return "percentile";
    case CalibratorKind::Entropy:
      return "entropy";
    case CalibratorKind::Mse:
      return "mse";
  }
  return "max";
}

CalibratorKind parseCalibrator(std::string_view text) {
  std::vector<std::string> names;
  for (CalibratorKind kind : kKinds) {
    if (text == calibratorName(kind)) return kind;
    names.emplace_back(calibratorName(kind));
  }
  throw Error(ErrorKind::Usage, {}, {},
              fmt::format("unknown calibrator '{}' (expected max, percentile, entropy or mse){}",
                          text, didYouMean(text, names)));
}

// TensorRT's EntropyCalibration2 as NVIDIA describes it ("8-bit Inference with TensorRT", GTC
// 2017; the same steps are in MLPerf's TensorRT calibration notes), with the bin merging and
// smoothing details of the public re-implementations (MXNet's _get_optimal_threshold, TVM):
//   for i in [levels + 1, bins]:
//     P = bins[0..i), with the count of every bin >= i (the outliers) added to P[i-1];
//     Q = bins[0..i) (without the outliers) merged into levels + 1 groups of i / (levels + 1)
//         bins, the last group taking the remainder, each group's count spread evenly over its
//         bins that are non-empty in P (empty ones stay 0);
//     divergence[i] = KL(smooth(P) || smooth(Q));
//   the i of smallest divergence; threshold (i + 0.5) bin widths.
// pytorch-quantization differs (it copies bin 1 into bin 0, takes the last minimum and i bin
// widths); qopt follows TensorRT.
size_t entropyThresholdBins(std::span<const uint64_t> histogram, int levels) {
  const size_t groups = static_cast<size_t>(std::max(levels, 1)) + 1;
  const size_t n = histogram.size();
  if (n < groups) return 0;
  std::vector<double> suffix(n + 1, 0);  // suffix[i] = sum of bins >= i
  for (size_t j = n; j-- > 0;) suffix[j] = suffix[j + 1] + static_cast<double>(histogram[j]);
  if (suffix[0] == 0) return 0;

  std::vector<double> p;
  std::vector<double> q;
  size_t best = 0;
  double bestDivergence = std::numeric_limits<double>::infinity();
  for (size_t i = groups; i <= n; ++i) {
    p.assign(histogram.begin(), histogram.begin() + static_cast<std::ptrdiff_t>(i));
    p[i - 1] += suffix[i];
    q.assign(i, 0);
    const size_t perGroup = i / groups;
    for (size_t g = 0; g < groups; ++g) {
      const size_t start = g * perGroup;
      const size_t stop = g + 1 == groups ? i : start + perGroup;
      double sum = 0;
      size_t nonEmpty = 0;
      for (size_t j = start; j < stop; ++j) {
        sum += static_cast<double>(histogram[j]);
        nonEmpty += p[j] != 0 ? 1 : 0;
      }
      if (nonEmpty == 0) continue;
      const double share = sum / static_cast<double>(nonEmpty);
      for (size_t j = start; j < stop; ++j) q[j] = p[j] != 0 ? share : 0;
    }
    if (!smooth(p) || !smooth(q)) continue;
    const double divergence = klDivergence(p, q);
    if (divergence < bestDivergence) {
      bestDivergence = divergence;
      best = i;
    }
  }
  return best;
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
      if (size_t i = entropyThresholdBins(stats.histogram(), spec.levels); i != 0) {
        amax = (static_cast<double>(i) + 0.5) * width;
      }
      break;
    case CalibratorKind::Mse:
      if (size_t i = mseThresholdBins(stats.histogram(), spec.levels); i != 0) {
        amax = static_cast<double>(i) * width;
      }
      break;
  }
  return std::min(amax, absMax);
}

}  // namespace qopt::quant
