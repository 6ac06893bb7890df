// TensorRT's EntropyCalibration2 as NVIDIA describes it ("8-bit Inference with TensorRT", GTC
// 2017; the same steps are in MLPerf's TensorRT calibration notes), with the bin merging and
// smoothing details of the public re-implementations (MXNet's _get_optimal_threshold, TVM):
//   for i in [levels + 1, bins]:
//     P = bins[0..i), with the count of every bin >= i (the outliers) added to P[i-1];
//     Q = bins[0..i) (without the outliers) merged into levels + 1 groups of i / (levels + 1)
//         bins, the last group taking the remainder, each group's count spread evenly over its
//         bins that are non-empty in P (empty ones stay 0);
//     smooth P and Q: every empty bin gets 1e-4 counts (MXNet's eps), taken from the non-empty
//         bins in proportion to their counts (MXNet subtracts it evenly, which can drive a small
//         bin negative);
//     divergence[i] = KL(P || Q) of the normalised distributions;
//   the i of smallest divergence (the first on ties); threshold (i + 0.5) bin widths.
// pytorch-quantization differs (it copies bin 1 into bin 0, takes the last minimum and i bin
// widths); qopt follows TensorRT.
//
// Evaluated in closed form per group rather than per bin, so a candidate costs O(levels), not
// O(i): with p'_j, q'_j the smoothed counts, T = sum P and Tq = sum Q,
//   KL = log(Tq / T) + (1 / T) sum_j p'_j (log p'_j - log q'_j),
// where empty P bins contribute nothing (both sides hold eps), a non-empty bin j of group g has
// p'_j = c_j keepP and q'_j = share_g keepQ (or eps where the group's share is 0), so the sum is
//   keepP (sum_j c_j log c_j + T log keepP - sum_g S_g log(q'_g)),  S_g = P's mass in group g,
// with the c log c sums taken from prefix sums.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qopt/quant/Calibration.h"

namespace qopt::quant {

namespace {

constexpr double kSmoothingCounts = 1e-4;

double xLogX(double x) {
  return x > 0 ? x * std::log(x) : 0.0;
}

}  // namespace

size_t entropyThresholdBins(std::span<const uint64_t> histogram, int levels) {
  const size_t groups = static_cast<size_t>(std::max(levels, 1)) + 1;
  const size_t n = histogram.size();
  if (n < groups) return 0;
  // Prefix sums over bins [0, k): counts, non-empty bins, c log c.
  std::vector<double> count(n + 1, 0);
  std::vector<size_t> nonEmpty(n + 1, 0);
  std::vector<double> countLogCount(n + 1, 0);
  for (size_t j = 0; j < n; ++j) {
    const auto c = static_cast<double>(histogram[j]);
    count[j + 1] = count[j] + c;
    nonEmpty[j + 1] = nonEmpty[j] + (c > 0 ? 1 : 0);
    countLogCount[j + 1] = countLogCount[j] + xLogX(c);
  }
  const double total = count[n];
  if (total == 0) return 0;

  size_t best = 0;
  double bestDivergence = std::numeric_limits<double>::infinity();
  for (size_t i = groups; i <= n; ++i) {
    const double last = static_cast<double>(histogram[i - 1]) + (total - count[i]);
    const size_t nonEmptyP = nonEmpty[i - 1] + (last > 0 ? 1 : 0);
    const double zerosP = static_cast<double>(i - nonEmptyP);
    const double keepP = (total - kSmoothingCounts * zerosP) / total;
    const double totalQ = count[i];
    if (keepP <= 0 || totalQ <= 0) continue;

    const size_t perGroup = i / groups;
    double zerosQ = zerosP;
    double massTimesLogQ = 0;  // sum over groups of S_g log(q'_g), before keepQ
    double massOfEmptyShares = 0;
    double massOfShares = 0;
    for (size_t g = 0; g < groups; ++g) {
      const size_t start = g * perGroup;
      const bool lastGroup = g + 1 == groups;
      const size_t stop = lastGroup ? i : start + perGroup;
      const double sum = count[stop] - count[start];
      size_t members = nonEmpty[stop] - nonEmpty[start];
      double mass = sum;
      if (lastGroup) {  // bin i - 1 holds the outliers in P
        members += (last > 0 ? 1 : 0) - (histogram[i - 1] > 0 ? 1 : 0);
        mass += total - count[i];
      }
      if (members == 0) continue;
      if (sum == 0) {
        zerosQ += static_cast<double>(members);
        massOfEmptyShares += mass;
        continue;
      }
      massTimesLogQ += mass * std::log(sum / static_cast<double>(members));
      massOfShares += mass;
    }
    const double keepQ = (totalQ - kSmoothingCounts * zerosQ) / totalQ;
    if (keepQ <= 0) continue;
    const double sumCLogC = countLogCount[i - 1] + xLogX(last);
    const double inner = sumCLogC + total * std::log(keepP) -
                         (massTimesLogQ + massOfShares * std::log(keepQ)) -
                         massOfEmptyShares * std::log(kSmoothingCounts);
    const double divergence = std::log(totalQ / total) + keepP / total * inner;
    if (divergence < bestDivergence) {
      bestDivergence = divergence;
      best = i;
    }
  }
  return best;
}

}  // namespace qopt::quant
