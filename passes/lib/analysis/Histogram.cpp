#include "qopt/analysis/Histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "CompareKernels.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {

PairedHistogram::PairedHistogram(int bins) {
  int n = std::max(bins, 2);
  if (n % 2 != 0) ++n;
  reference_.assign(static_cast<size_t>(n), 0.0);
  actual_.assign(static_cast<size_t>(n), 0.0);
}

namespace {

template <class T>
std::pair<double, double> finiteRange(std::span<const T> reference, std::span<const T> actual) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (std::span<const T> values : {reference, actual}) {
    for (const double v : values) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  return {lo, hi};
}

}  // namespace

void PairedHistogram::add(std::span<const double> reference, std::span<const double> actual) {
  auto [lo, hi] = finiteRange(reference, actual);
  addValues(reference, actual, lo, hi);
}

void PairedHistogram::add(std::span<const float> reference, std::span<const float> actual) {
  auto [lo, hi] = finiteRange(reference, actual);
  addValues(reference, actual, lo, hi);
}

void PairedHistogram::addInRange(std::span<const double> reference, std::span<const double> actual,
                                 double low, double high) {
  addValues(reference, actual, low, high);
}

void PairedHistogram::addInRange(std::span<const float> reference, std::span<const float> actual,
                                 double low, double high) {
  addValues(reference, actual, low, high);
}

// float values are counted as the doubles they convert to exactly: the same bins either way.
template <class T>
void PairedHistogram::addValues(std::span<const T> reference, std::span<const T> actual, double lo,
                                double hi) {
  if (lo > hi) return;  // nothing finite
  if (width_ == 0) {
    // The first values decide the resolution: their range spans the bins exactly. A constant
    // tensor gets a tiny width relative to its value; later values widen it.
    low_ = lo;
    width_ = (hi - lo) / static_cast<double>(bins() - 1);
    if (!(width_ > 0)) width_ = std::max(std::abs(lo), 1e-30) * 0x1p-20;
  }
  include(lo);
  include(hi);
  count(reference_, reference);
  count(actual_, actual);
}

bool PairedHistogram::covers(double low, double high) const {
  if (low > high) return true;
  return width_ > 0 && low >= low_ && high < low_ + static_cast<double>(bins()) * width_;
}

void PairedHistogram::addCounts(std::span<const uint64_t> reference,
                                std::span<const uint64_t> actual, uint64_t total) {
  if (reference.size() != reference_.size() || actual.size() != actual_.size()) {
    throw Error(ErrorKind::Internal, {}, {}, "bin counts do not match the histogram's bins");
  }
  for (size_t i = 0; i < reference_.size(); ++i) {
    reference_[i] += static_cast<double>(reference[i]);
    actual_[i] += static_cast<double>(actual[i]);
  }
  total_ += total;
}

void PairedHistogram::include(double value) {
  while (value < low_) grow(true);
  while (value >= low_ + static_cast<double>(bins()) * width_) grow(false);
}

// Doubles the bin width. Growing downward keeps the old range as the upper half, growing upward
// as the lower half; either way old bin pairs merge exactly into one new bin.
void PairedHistogram::grow(bool downward) {
  const size_t n = reference_.size();
  const size_t offset = downward ? n / 2 : 0;
  for (std::vector<double>* counts : {&reference_, &actual_}) {
    std::vector<double> merged(n, 0.0);
    for (size_t i = 0; i < n; ++i) merged[offset + i / 2] += (*counts)[i];
    *counts = std::move(merged);
  }
  if (downward) low_ -= static_cast<double>(n) * width_;
  width_ *= 2;
}

template <class T>
void PairedHistogram::count(std::vector<double>& counts, std::span<const T> values) {
  // Integer counts while scanning (no floating-point add chained on one bin), added to the
  // bins once: the same totals, exactly.
  std::vector<uint64_t> local(counts.size(), 0);
  const detail::BinGrid grid{low_, 1.0 / width_, counts.size()};
  total_ += detail::countBins(values.data(), values.size(), grid, local.data());
  for (size_t i = 0; i < counts.size(); ++i) counts[i] += static_cast<double>(local[i]);
}

PairedHistogram PairedHistogram::downsampled(int bins) const {
  if (bins <= 0 || this->bins() % bins != 0) {
    throw Error(ErrorKind::Internal, {}, {},
                "histogram of " + std::to_string(this->bins()) + " bins cannot be downsampled to " +
                    std::to_string(bins));
  }
  PairedHistogram out(bins);
  const size_t factor = static_cast<size_t>(this->bins() / bins);
  out.reference_.assign(static_cast<size_t>(bins), 0.0);
  out.actual_.assign(static_cast<size_t>(bins), 0.0);
  for (size_t i = 0; i < reference_.size(); ++i) {
    out.reference_[i / factor] += reference_[i];
    out.actual_[i / factor] += actual_[i];
  }
  out.low_ = low_;
  out.width_ = width_ * static_cast<double>(factor);
  out.total_ = total_;
  return out;
}

namespace {

std::vector<double> smoothedDistribution(std::span<const double> counts) {
  double total = 0;
  for (double c : counts) total += c;
  std::vector<double> p(counts.size());
  double sum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    p[i] = (total > 0 ? counts[i] / total : 0.0) + kHistogramSmoothing;
    sum += p[i];
  }
  for (double& v : p) v /= sum;
  return p;
}

}  // namespace

double klDivergence(std::span<const double> p, std::span<const double> q) {
  if (p.size() != q.size()) {
    throw Error(ErrorKind::Internal, {}, {}, "KL divergence of histograms with different bins");
  }
  std::vector<double> ps = smoothedDistribution(p);
  std::vector<double> qs = smoothedDistribution(q);
  double kl = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (ps[i] != qs[i]) kl += ps[i] * std::log(ps[i] / qs[i]);
  }
  return std::max(kl, 0.0);
}

double histogramOverlap(std::span<const double> reference, std::span<const double> actual) {
  if (reference.size() != actual.size()) {
    throw Error(ErrorKind::Internal, {}, {}, "overlap of histograms with different bins");
  }
  double shared = 0;
  double total = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    shared += std::min(reference[i], actual[i]);
    total += reference[i];
  }
  return total > 0 ? shared / total : 1.0;
}

}  // namespace qopt::analysis
