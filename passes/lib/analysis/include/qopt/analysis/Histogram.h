// Two value histograms on shared bins: the reference values of a tensor and the values a
// transformed model computes for it. Bins are equal-width and the range grows as values arrive
// (doubling the bin width and merging neighbouring bins, which is exact for counts), so samples
// can be streamed without knowing the range in advance and without keeping the values.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qopt::analysis {

class PairedHistogram {
 public:
  /// `bins` must be even and at least 2 (a smaller or odd count is rounded up).
  explicit PairedHistogram(int bins = 128);

  /// Counts finite values; NaN and infinities are skipped (ErrorAccumulator counts them).
  void add(std::span<const double> reference, std::span<const double> actual);
  void add(std::span<const float> reference, std::span<const float> actual);
  /// The same, with the range of the finite values already known (low > high: none).
  void addInRange(std::span<const double> reference, std::span<const double> actual, double low,
                  double high);
  void addInRange(std::span<const float> reference, std::span<const float> actual, double low,
                  double high);

  /// Whether finite values in [low, high] fall in the current bins without widening them
  /// (always for low > high: no values; never before the first values).
  bool covers(double low, double high) const;
  /// Adds counts made on the current bins (bin of v: floor((v - low()) / binWidth()) with the
  /// division done as a product by 1 / binWidth(), clamped to the bins), bins() each, of
  /// `total` values in all. For callers that bin while they read the values for other sums.
  void addCounts(std::span<const uint64_t> reference, std::span<const uint64_t> actual,
                 uint64_t total);

  bool empty() const { return total_ == 0; }
  int bins() const { return static_cast<int>(reference_.size()); }
  /// Lower edge of bin 0 and the width of every bin.
  double low() const { return low_; }
  double binWidth() const { return width_; }
  const std::vector<double>& reference() const { return reference_; }
  const std::vector<double>& actual() const { return actual_; }

  /// The same counts on `bins` coarser bins (bins() must be a multiple of it), for reports.
  PairedHistogram downsampled(int bins) const;

 private:
  void include(double value);
  void grow(bool downward);
  template <class T>
  void addValues(std::span<const T> reference, std::span<const T> actual, double low, double high);
  template <class T>
  void count(std::vector<double>& counts, std::span<const T> values);

  double low_ = 0;
  double width_ = 0;  // 0 until the first finite value
  std::vector<double> reference_;
  std::vector<double> actual_;
  uint64_t total_ = 0;
};

/// Probability every bin gets before KL divergence is computed (then renormalised), as in
/// TensorRT's entropy calibration: a value that moved into a bin the other side left empty
/// counts as a shift, not as an infinity.
inline constexpr double kHistogramSmoothing = 1e-4;

/// Kullback-Leibler divergence KL(P || Q) in nats of two histograms given as counts on the same
/// bins. Both are normalised and smoothed (kHistogramSmoothing). Identical histograms give
/// exactly 0; two empty histograms give 0.
double klDivergence(std::span<const double> p, std::span<const double> q);

/// Sum over bins of min(reference, actual) divided by the sum of reference: 1 when the two
/// histograms are identical, 0 when they share no bin. Empty reference: 1.
double histogramOverlap(std::span<const double> reference, std::span<const double> actual);

}  // namespace qopt::analysis
