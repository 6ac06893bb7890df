// Calibration: the ranges of activations over a data set, and of weights from their values.
//
// Activations are observed in one pass over the samples. Each tensor keeps its min/max and a
// histogram of |x| with kCalibrationBins equal-width bins starting at 0 whose upper edge is a power
// of two that grows (merging neighbouring bins, exact for counts) as larger values arrive. The
// final histogram therefore equals the one computed directly at the final range: it depends only
// on the multiset of values seen, not on their order or on how samples were batched, and memory
// per tensor is fixed. The calibrators then pick a threshold (amax) from it:
//   max         the largest |x| seen;
//   percentile  the p-th percentile of |x| (p = 99.99 by default), at a bin's upper edge;
//   entropy     TensorRT's KL-divergence threshold search (EntropyCalibration2);
//   mse         the threshold minimising the expected squared quantization error;
//   auto        per tensor, whichever of the four makes its consumers' outputs closest to float
//               (AutoCalibration.h: it needs the model and samples, not only the histogram).
// No calibrator returns more than the largest |x| seen (a threshold beyond it only loses
// resolution).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Progress.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/ir/Graph.h"

namespace qopt::quant {

inline constexpr int kCalibrationBins = 2048;
/// See computeAmax.
inline constexpr uint64_t kSaturationMinCount = 2;
inline constexpr double kSaturationShare = 1e-4;

enum class CalibratorKind { Max, Percentile, Entropy, Mse, Auto };

/// "max", "percentile", "entropy", "mse", "auto".
std::string_view calibratorName(CalibratorKind kind);
/// Reads a name calibratorName gives; throws qopt::Error (Usage) naming the valid choices.
CalibratorKind parseCalibrator(std::string_view text);

struct CalibratorSpec {
  CalibratorKind kind = CalibratorKind::Max;
  double percentile = 99.99;  // percentile only, in (0, 100]
  /// Quantized levels on the positive side: 127 for int8, 255 for uint8 (entropy and mse use it).
  int levels = 127;
};

/// The streaming statistics of one tensor.
class TensorStatistics {
 public:
  /// Counts finite values (NaN and infinities are counted apart and ignored otherwise).
  void add(std::span<const float> values);
  /// Adds another tensor's statistics (the result equals adding its values here).
  void merge(const TensorStatistics& other);

  uint64_t count() const { return count_; }
  uint64_t nonFinite() const { return nonFinite_; }
  /// How many values were exactly 0 (they are in bin 0 of the histogram too).
  uint64_t zeros() const { return zeros_; }
  /// How many values had exactly the largest magnitude seen (a saturating activation such as
  /// ReLU6 leaves many; an outlier one).
  uint64_t atAbsMax() const { return atAbsMax_; }
  float min() const { return min_; }
  float max() const { return max_; }
  /// The largest |x| seen (0 when nothing was seen).
  float absMax() const;
  /// Counts of |x| on kCalibrationBins bins of width binWidth() starting at 0 (empty when no
  /// non-zero value was seen).
  const std::vector<uint64_t>& histogram() const { return histogram_; }
  double binWidth() const { return binWidth_; }

 private:
  /// Makes the histogram cover |x| < 2^exponent (creating it, or merging bins as it widens).
  void coverUpTo(int exponent);
  void widenBy(int doublings);
  /// Accounts `count` values of magnitude `absMax` (before min_/max_ take them in).
  void countAtAbsMax(double absMax, uint64_t count);

  uint64_t count_ = 0;
  uint64_t nonFinite_ = 0;
  uint64_t zeros_ = 0;
  uint64_t atAbsMax_ = 0;
  float min_ = 0;
  float max_ = 0;
  std::vector<uint64_t> histogram_;
  double binWidth_ = 0;
  int upperExponent_ = 0;  // the histogram covers [0, 2^upperExponent_)
};

/// The threshold `spec` picks from `stats`: a positive amax, or 0 when every value was 0.
/// Entropy and mse search the histogram without its exact zeros: a zero quantizes exactly under
/// every threshold, and the spike of zeros a ReLU leaves in bin 0 would otherwise dominate the
/// KL divergence of every wide candidate and pull the threshold far below the data's range.
/// Entropy also keeps the largest magnitude when several values (at least kSaturationMinCount
/// and kSaturationShare of the non-zero ones) sit exactly on it: a continuous distribution
/// almost never repeats its maximum, so that is the ceiling of a saturating activation (ReLU6,
/// a clipped input), not an outlier, and clipping below it moves every saturated value, an
/// error the KL divergence of the histograms underweights (mse measures it, needs no rule).
/// Throws qopt::Error (Usage) for a percentile outside (0, 100] or levels < 1, and for Auto,
/// whose choice needs the consumers (chooseAutoRanges).
double computeAmax(const TensorStatistics& stats, const CalibratorSpec& spec);

/// The entropy search on any histogram of |x| on equal bins from 0: the number of leading bins
/// i (levels + 1 <= i <= histogram.size()) whose KL divergence is smallest (the first on ties);
/// the threshold is then (i + 0.5) bin widths. 0 when the histogram has fewer than levels + 1
/// bins or no count.
size_t entropyThresholdBins(std::span<const uint64_t> histogram, int levels);
/// The mse search on any histogram of |x| on equal bins from 0: the number of leading bins i
/// (1 <= i <= histogram.size()) whose upper edge, as amax, gives the smallest squared error of
/// symmetric quantization with `levels` steps over the bin centres (the first on ties).
/// 0 when the histogram has no count.
size_t mseThresholdBins(std::span<const uint64_t> histogram, int levels);

/// One calibrated tensor.
struct TensorRange {
  std::string tensor;
  float min = 0;
  float max = 0;
  double amax = 0;  // the calibrator's threshold on |x|
  CalibratorKind calibrator = CalibratorKind::Max;
  uint64_t samples = 0;  // samples observed
};

/// Called after each sample: (samples done, samples in all or 0 when unknown); collectStatistics
/// calls it once more with done == total when the samples are exhausted.
using analysis::ProgressFn;

/// How collectStatistics runs: samples are spread over the run's `workers` (when null, over
/// `threads` workers of its own, 0: the hardware's, at most kMaxCalibrationThreads; with
/// workers given, `threads` caps how many of them take part), each with its own interpreter and
/// statistics, merged at the end. Merging is exact, so the result is the same for every thread
/// count. Memory: each worker holds one sample's live tensors; at most 2 samples per worker wait.
struct CollectOptions {
  int threads = 0;
  analysis::SampleWorkers* workers = nullptr;
};
inline constexpr int kMaxCalibrationThreads = 16;

/// Runs `model` on every sample with the reference interpreter and collects the statistics of
/// the float tensors named in `tensors` (graph inputs and node outputs). `forEachSample` is
/// called once, on the calling thread, and hands samples over one at a time (it may read them
/// lazily; a sample is released once it has run). Throws qopt::Error naming the sample's file
/// when a sample does not fit the model, and naming the tensor when a name is not a float value
/// of the graph. `progress` is called from one thread at a time.
std::map<std::string, TensorStatistics> collectStatistics(
    const Model& model, std::span<const std::string> tensors,
    const std::function<void(const std::function<bool(analysis::Sample&)>&)>& forEachSample,
    const ProgressFn& progress = {}, CollectOptions options = {});

/// The per-channel amax of a constant weight along `axis` (per-tensor when axis < 0): max |w|
/// over all other axes. Throws qopt::Error naming `what` for a non-float weight, a NaN or
/// infinite value, or a bad axis.
std::vector<double> weightAmax(const Tensor& weight, int64_t axis, std::string_view what);

using analysis::terminalProgress;

}  // namespace qopt::quant
