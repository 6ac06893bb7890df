// The streaming |x| histogram. Bin edges are multiples of a power of two and the bin index of a
// value is computed as |x| * 2^k (exact in double for every float), so widening the range by a
// factor 2^d maps bin j to bin j >> d exactly: the final counts equal those computed directly at
// the final range, whatever the order and batching of the values.
#include <algorithm>
#include <bit>
#include <cmath>

#include "qopt/quant/Calibration.h"

namespace qopt::quant {

namespace {

constexpr int kBinsLog2 = std::countr_zero(static_cast<unsigned>(kCalibrationBins));
static_assert((1 << kBinsLog2) == kCalibrationBins, "the bin count must be a power of two");

/// The e for which 2^e is the smallest power of two above `value` (> 0, finite).
int exponentAbove(double value) {
  int exponent = 0;
  std::frexp(value, &exponent);  // value = m * 2^exponent with m in [0.5, 1)
  return exponent;
}

/// Bin j of `counts` added to bin j >> doublings of `into`.
void addCoarsened(std::vector<uint64_t>& into, const std::vector<uint64_t>& counts, int doublings) {
  if (doublings >= kBinsLog2) {
    uint64_t total = 0;
    for (uint64_t c : counts) total += c;
    into[0] += total;
    return;
  }
  for (size_t j = 0; j < counts.size(); ++j) into[j >> doublings] += counts[j];
}

}  // namespace

void TensorStatistics::widenBy(int doublings) {
  if (doublings <= 0) return;
  std::vector<uint64_t> wider(kCalibrationBins, 0);
  addCoarsened(wider, histogram_, doublings);
  histogram_ = std::move(wider);
  upperExponent_ += doublings;
  binWidth_ = std::ldexp(1.0, upperExponent_ - kBinsLog2);
}

void TensorStatistics::coverUpTo(int exponent) {
  if (histogram_.empty()) {
    histogram_.assign(kCalibrationBins, 0);
    histogram_[0] = count_;  // every finite value seen so far was 0
    upperExponent_ = exponent;
    binWidth_ = std::ldexp(1.0, upperExponent_ - kBinsLog2);
    return;
  }
  widenBy(exponent - upperExponent_);
}

void TensorStatistics::add(std::span<const float> values) {
  uint64_t finite = 0;
  float batchMin = 0;
  float batchMax = 0;
  for (float v : values) {
    if (!std::isfinite(v)) {
      ++nonFinite_;
      continue;
    }
    if (v == 0) ++zeros_;
    if (finite == 0) {
      batchMin = batchMax = v;
    } else {
      batchMin = std::min(batchMin, v);
      batchMax = std::max(batchMax, v);
    }
    ++finite;
  }
  if (finite == 0) return;
  const double batchAbsMax = std::max(std::fabs(double{batchMin}), std::fabs(double{batchMax}));
  uint64_t batchAtAbsMax = 0;
  if (batchAbsMax > 0) {
    coverUpTo(exponentAbove(batchAbsMax));
    const double toBin = std::ldexp(1.0, kBinsLog2 - upperExponent_);
    for (float v : values) {
      if (!std::isfinite(v)) continue;
      const double magnitude = std::fabs(double{v});
      batchAtAbsMax += magnitude == batchAbsMax ? 1 : 0;
      auto bin = static_cast<size_t>(magnitude * toBin);
      ++histogram_[std::min(bin, size_t{kCalibrationBins - 1})];
    }
  } else {
    batchAtAbsMax = finite;  // all zeros
    if (!histogram_.empty()) histogram_[0] += finite;
  }
  countAtAbsMax(batchAbsMax, batchAtAbsMax);
  if (count_ == 0) {
    min_ = batchMin;
    max_ = batchMax;
  } else {
    min_ = std::min(min_, batchMin);
    max_ = std::max(max_, batchMax);
  }
  count_ += finite;
}

void TensorStatistics::countAtAbsMax(double absMax, uint64_t count) {
  const double current = count_ == 0 ? -1.0 : double{this->absMax()};
  if (absMax > current) {
    atAbsMax_ = count;
  } else if (absMax == current) {
    atAbsMax_ += count;
  }
}

void TensorStatistics::merge(const TensorStatistics& other) {
  nonFinite_ += other.nonFinite_;
  zeros_ += other.zeros_;
  if (other.count_ == 0) return;
  countAtAbsMax(double{other.absMax()}, other.atAbsMax_);
  if (!other.histogram_.empty()) {
    coverUpTo(
        std::max(other.upperExponent_, histogram_.empty() ? other.upperExponent_ : upperExponent_));
    addCoarsened(histogram_, other.histogram_, upperExponent_ - other.upperExponent_);
  } else if (!histogram_.empty()) {
    histogram_[0] += other.count_;  // all of the other's values were 0
  }
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
}

float TensorStatistics::absMax() const {
  return std::max(std::fabs(min_), std::fabs(max_));
}

}  // namespace qopt::quant
