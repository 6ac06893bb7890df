// How far the values a transformed model computes are from the reference values: the error
// metrics of verify, sensitivity and mixed-precision, reusable by any pass that compares tensors.
//
// ErrorAccumulator streams: add() the reference and actual values of a tensor sample by sample,
// then result() gives the metrics over everything added. Sums are kept in double.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "qopt/analysis/Histogram.h"
#include "qopt/interp/Array.h"
#include "qopt/pass/Json.h"

namespace qopt::analysis {

struct ErrorMetrics {
  uint64_t count = 0;      // finite value pairs compared
  uint64_t nonFinite = 0;  // positions where exactly one side, or the actual side, is NaN/inf
  double maxAbs = 0;
  double meanAbs = 0;
  double mse = 0;
  /// sum(r*a) / (|r| |a|); 1 when both are all zeros, 0 when only one is.
  double cosine = 1;
  /// 10 log10(sum r^2 / sum (r - a)^2); +inf when there is no error.
  double sqnrDb = 0;
  /// KL(reference || actual) of the value histograms (nats) and their overlap.
  double klDivergence = 0;
  double histogramOverlap = 1;
  /// For class scores along the last axis (C > 1) of a classifier's [N, C] or a sequence
  /// model's [N, T, C] (a class per position: CTC recognizers, language models): the share of
  /// rows whose arg-max agrees.
  std::optional<double> top1Agreement;
  uint64_t top1Rows = 0;
  /// The same over the rows the reference decides clearly: its top two probabilities (the row
  /// itself where it is a distribution, else its softmax) at least kClearMargin apart. A flip
  /// there is an error; at a near tie it says little. Unset when no row is clear, or the
  /// tensor was not compared as a model output (ErrorAccumulator's `decisions`).
  std::optional<double> clearTop1Agreement;
  uint64_t clearTop1Rows = 0;
  /// Under a threshold rule on a map (rank >= 3): intersection over union of the positions
  /// above the threshold in the reference and in the actual values; unset when neither has any.
  std::optional<double> mapIou;
  uint64_t mapUnion = 0;

  /// sqrt(sum (r - a)^2 / sum r^2): the error relative to the reference's magnitude, the
  /// same figure as the SQNR (10^(-SQNR/20)); 0 without error, +inf for an all-zero reference.
  double relativeError() const;

  /// Keys "count", "max-abs", "mean-abs", "mse", "cosine", "sqnr-db", "kl", "overlap", "top1"
  /// (when known), "non-finite" (when not 0). Numbers, except an infinite SQNR: "inf" (no error
  /// at all) or "-inf" (an all-zero reference with an error).
  Json toJson() const;
};

/// The top-2 probability margin above which the reference decides a row clearly.
inline constexpr double kClearMargin = 0.1;

/// How a tensor's values decide something, for the agreement counts of ErrorAccumulator.
struct DecisionRule {
  enum class Kind {
    Default,      // top-1 along the last axis of rank-2 arrays (and rank-3 with `decisions`)
    LastAxis,     // a class per position along the last axis (rank >= 2)
    ChannelAxis,  // a class per position along axis 1 (rank >= 3: segmentation maps)
    Threshold,    // each value: positive above `threshold` (binary or multi-label scores, maps)
  };
  Kind kind = Kind::Default;
  /// Threshold: 0.5 for probabilities, 0 for their logits (`logits`: clear decisions are judged
  /// on the sigmoid of the value).
  double threshold = 0.5;
  bool logits = false;
};

/// Overlap below this marks a layer's value distribution as visibly changed.
inline constexpr double kLowOverlap = 0.8;

class ErrorAccumulator {
 public:
  /// `decisions`: the tensor is a model output, whose class scores are decisions: rank-3
  /// [N, T, C] arrays count top-1 per position too, and clear top-1 is counted (a softmax per
  /// row, work not spent on every layer's tensors).
  explicit ErrorAccumulator(int histogramBins = 128, bool decisions = false)
      : decisions_(decisions), histogram_(histogramBins) {}
  /// Counts decisions by `rule` instead (clear decisions included); set before the first add().
  ErrorAccumulator(int histogramBins, DecisionRule rule)
      : decisions_(true), rule_(rule), histogram_(histogramBins) {}

  /// Adds one sample of a tensor; both spans hold the same elements in the same order.
  /// Throws qopt::Error (Internal) when the sizes differ.
  void add(std::span<const double> reference, std::span<const double> actual);
  void add(std::span<const float> reference, std::span<const float> actual);
  /// Adds arrays of any numeric type (converted to double). Shapes must match (qopt::Error
  /// (Verification) naming `label` otherwise). Rank-2 [N, C] arrays with C > 1 also count top-1
  /// agreement along the last axis; with `decisions`, rank-3 [N, T, C] ones too, and the clear
  /// rows.
  void add(const interp::Array& reference, const interp::Array& actual,
           const std::string& label = "tensor");

  ErrorMetrics result() const;
  const PairedHistogram& histogram() const { return histogram_; }
  bool empty() const { return count_ == 0 && nonFinite_ == 0; }

 private:
  template <class T>
  void addValues(std::span<const T> reference, std::span<const T> actual);
  template <class T>
  void addTop1(std::span<const T> reference, std::span<const T> actual, int64_t rows,
               int64_t columns);
  template <class T>
  void addChannelClasses(std::span<const T> reference, std::span<const T> actual,
                         const interp::Shape& shape);
  template <class T>
  void addThreshold(std::span<const T> reference, std::span<const T> actual, bool map);
  template <class T>
  void addDecisions(std::span<const T> reference, std::span<const T> actual,
                    const interp::Shape& shape);

  uint64_t count_ = 0;
  uint64_t nonFinite_ = 0;
  double maxAbs_ = 0;
  double sumAbs_ = 0;
  double sumSquaredError_ = 0;
  double sumReferenceSquared_ = 0;
  double sumActualSquared_ = 0;
  double sumProduct_ = 0;
  uint64_t top1Rows_ = 0;
  uint64_t top1Agree_ = 0;
  bool decisions_ = false;
  uint64_t clearRows_ = 0;
  uint64_t clearAgree_ = 0;
  DecisionRule rule_;
  uint64_t mapIntersection_ = 0;
  uint64_t mapUnion_ = 0;
  PairedHistogram histogram_;
};

/// The metrics of one pair of value lists (a convenience over ErrorAccumulator).
ErrorMetrics compareValues(std::span<const double> reference, std::span<const double> actual,
                           int histogramBins = 128);

/// Every element converted to double (any numeric type).
std::vector<double> toDoubles(const interp::Array& array);

/// A metric read back from toJson(): a number, or the spelled "inf", "-inf", "nan".
double metricFromJson(const Json& value);

/// "inf" for +infinity, else the value with `decimals` decimals (for tables).
std::string formatMetric(double value, int decimals);

}  // namespace qopt::analysis
