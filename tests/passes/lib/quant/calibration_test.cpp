// Calibration statistics and calibrators against thresholds computed here independently, and
// the independence of the statistics from batching, sharding and order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "qopt/ir/Error.h"
#include "qopt/quant/Calibration.h"

namespace qopt::quant {
namespace {

constexpr CalibratorKind kAllKinds[] = {CalibratorKind::Max, CalibratorKind::Percentile,
                                        CalibratorKind::Entropy, CalibratorKind::Mse};

TensorStatistics statsOf(const std::vector<float>& values) {
  TensorStatistics stats;
  stats.add(values);
  return stats;
}

double amaxOf(const TensorStatistics& stats, CalibratorKind kind, double percentile = 99.99) {
  CalibratorSpec spec;
  spec.kind = kind;
  spec.percentile = percentile;
  return computeAmax(stats, spec);
}

/// |x| of N exponential draws placed at quantiles (deterministic), signs alternating:
/// a Laplace-shaped tensor with mean |x| = 1.
std::vector<float> laplaceLike(size_t n) {
  std::vector<float> out(n);
  for (size_t k = 0; k < n; ++k) {
    double u = (static_cast<double>(k) + 0.5) / static_cast<double>(n);
    out[k] = static_cast<float>((k % 2 ? -1.0 : 1.0) * -std::log(1.0 - u));
  }
  return out;
}

/// N values evenly spread over (0, 1).
std::vector<float> uniform01(size_t n) {
  std::vector<float> out(n);
  for (size_t k = 0; k < n; ++k) {
    out[k] = static_cast<float>((static_cast<double>(k) + 0.5) / static_cast<double>(n));
  }
  return out;
}

TEST(Calibrator, NamesRoundTrip) {
  for (CalibratorKind kind : kAllKinds) EXPECT_EQ(parseCalibrator(calibratorName(kind)), kind);
  try {
    parseCalibrator("entrpy");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("did you mean 'entropy'"), std::string::npos) << e.what();
  }
}

TEST(TensorStatistics, CountsMinMaxAndBins) {
  float inf = std::numeric_limits<float>::infinity();
  TensorStatistics stats =
      statsOf({-3.0f, 0.5f, 2.0f, std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f});
  EXPECT_EQ(stats.count(), 4u);
  EXPECT_EQ(stats.nonFinite(), 3u);
  EXPECT_EQ(stats.min(), -3.0f);
  EXPECT_EQ(stats.max(), 2.0f);
  EXPECT_EQ(stats.absMax(), 3.0f);
  // 4 is the smallest power of two above 3: bins of width 4 / 2048.
  EXPECT_EQ(stats.binWidth(), 4.0 / kCalibrationBins);
  const std::vector<uint64_t>& bins = stats.histogram();
  ASSERT_EQ(bins.size(), static_cast<size_t>(kCalibrationBins));
  EXPECT_EQ(bins[0], 1u);     // 0
  EXPECT_EQ(bins[256], 1u);   // 0.5 * 512
  EXPECT_EQ(bins[1024], 1u);  // 2 * 512
  EXPECT_EQ(bins[1536], 1u);  // 3 * 512
  uint64_t total = 0;
  for (uint64_t c : bins) total += c;
  EXPECT_EQ(total, 4u);
}

TEST(TensorStatistics, PowerOfTwoIsTheFirstValueOfTheNextRange) {
  TensorStatistics stats = statsOf({1.0f});
  EXPECT_EQ(stats.binWidth(), 2.0 / kCalibrationBins);
  EXPECT_EQ(stats.histogram()[1024], 1u);
}

TEST(TensorStatistics, ZerosBeforeTheFirstNonZeroLandInBinZero) {
  TensorStatistics stats = statsOf({0.0f, -0.0f});
  EXPECT_EQ(stats.count(), 2u);
  EXPECT_TRUE(stats.histogram().empty());
  EXPECT_EQ(stats.absMax(), 0.0f);
  for (CalibratorKind kind : kAllKinds) EXPECT_EQ(amaxOf(stats, kind), 0.0);
  stats.add(std::vector<float>{0.25f});
  EXPECT_EQ(stats.histogram()[0], 2u);
  EXPECT_EQ(stats.histogram()[1024], 1u);
  EXPECT_EQ(stats.count(), 3u);
}

TEST(TensorStatistics, NothingSeenGivesZero) {
  TensorStatistics stats = statsOf({std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(stats.count(), 0u);
  EXPECT_EQ(stats.nonFinite(), 1u);
  EXPECT_EQ(stats.absMax(), 0.0f);
  for (CalibratorKind kind : kAllKinds) EXPECT_EQ(amaxOf(stats, kind), 0.0);
}

TEST(TensorStatistics, GrowingRangeEqualsTheDirectHistogram) {
  // Tiny values first, then values 2^20 times larger: the merged bins must equal binning every
  // value directly at the final range.
  std::vector<float> small = {1e-6f, 3e-6f, 7.5e-6f, 0.0f};
  std::vector<float> large = {1.0f, 3.0f, 1000.0f, 0.001f};
  TensorStatistics grown = statsOf(small);
  grown.add(large);
  std::vector<uint64_t> direct(kCalibrationBins, 0);
  const double width = 1024.0 / kCalibrationBins;  // 1000 < 1024
  for (const auto* part : {&small, &large}) {
    for (float v : *part) ++direct[static_cast<size_t>(std::fabs(v) / width)];
  }
  EXPECT_EQ(grown.binWidth(), width);
  EXPECT_EQ(grown.histogram(), direct);
}

TEST(TensorStatistics, SubnormalAndHugeValues) {
  TensorStatistics stats =
      statsOf({std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()});
  EXPECT_EQ(stats.histogram()[0], 1u);
  EXPECT_EQ(stats.histogram()[kCalibrationBins - 1], 1u);
  EXPECT_EQ(stats.binWidth(), std::ldexp(1.0, 128 - 11));
  TensorStatistics tiny = statsOf({std::numeric_limits<float>::denorm_min()});
  EXPECT_EQ(tiny.histogram()[1024], 1u);
  EXPECT_EQ(amaxOf(tiny, CalibratorKind::Max), double{std::numeric_limits<float>::denorm_min()});
}

TEST(MaxCalibrator, IsTheLargestMagnitude) {
  TensorStatistics stats = statsOf({0.25f, -7.5f, 3.0f, 6.0f});
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Max), 7.5);
  stats.add(std::vector<float>{7.75f});
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Max), 7.75);
}

TEST(PercentileCalibrator, UniformDataGivesTheBinAboveThePercentile) {
  TensorStatistics stats = statsOf(uniform01(100000));
  ASSERT_EQ(stats.binWidth(), 1.0 / kCalibrationBins);
  // Exactly half the values are below 0.5 = 1024 bins: the median's bin ends there.
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Percentile, 50), 0.5);
  // The 99th percentile, 0.99, lies in bin floor(0.99 * 2048) = 2027, which ends at 2028 / 2048.
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Percentile, 99), 2028.0 / 2048);
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Percentile, 10), 205.0 / 2048);
  // 100 is the maximum itself (never above the largest value).
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Percentile, 100), double{stats.absMax()});
}

TEST(PercentileCalibrator, RefusesPercentilesOutsideTheRange) {
  TensorStatistics stats = statsOf({1.0f});
  for (double p : {0.0, -1.0, 100.5, std::nan("")}) {
    try {
      amaxOf(stats, CalibratorKind::Percentile, p);
      ADD_FAILURE() << p;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
    }
  }
  CalibratorSpec spec;
  spec.kind = CalibratorKind::Mse;
  spec.levels = 0;
  EXPECT_THROW(computeAmax(stats, spec), Error);
}

// ---- entropy ----

/// The entropy search written as plainly as possible from its description: P, Q, smoothing and
/// KL computed for each candidate from scratch, group membership by division.
size_t naiveEntropyBins(const std::vector<uint64_t>& hist, int levels) {
  const size_t groups = static_cast<size_t>(levels) + 1;
  auto smooth = [](std::vector<double> d) {
    double total = 0;
    double zeros = 0;
    for (double c : d) {
      total += c;
      if (c == 0) zeros += 1;
    }
    if (total == 0) return std::vector<double>{};
    for (double& c : d) c = c == 0 ? 1e-4 : c * (total - 1e-4 * zeros) / total;
    return d;
  };
  size_t best = 0;
  double bestKl = std::numeric_limits<double>::infinity();
  for (size_t i = groups; i <= hist.size(); ++i) {
    std::vector<double> p(i);
    for (size_t j = 0; j < hist.size(); ++j) p[std::min(j, i - 1)] += static_cast<double>(hist[j]);
    const size_t perGroup = i / groups;
    auto groupOf = [&](size_t j) { return std::min(j / perGroup, groups - 1); };
    std::vector<double> groupSum(groups, 0);
    std::vector<double> groupNonEmpty(groups, 0);
    for (size_t j = 0; j < i; ++j) {
      groupSum[groupOf(j)] += static_cast<double>(hist[j]);
      if (p[j] != 0) groupNonEmpty[groupOf(j)] += 1;
    }
    std::vector<double> q(i, 0);
    for (size_t j = 0; j < i; ++j) {
      if (p[j] != 0) q[j] = groupSum[groupOf(j)] / groupNonEmpty[groupOf(j)];
    }
    std::vector<double> ps = smooth(p);
    std::vector<double> qs = smooth(q);
    if (ps.empty() || qs.empty()) continue;
    double sp = 0;
    double sq = 0;
    for (size_t j = 0; j < i; ++j) {
      sp += ps[j];
      sq += qs[j];
    }
    double kl = 0;
    for (size_t j = 0; j < i; ++j) {
      if (ps[j] > 0) kl += ps[j] / sp * std::log((ps[j] / sp) / (qs[j] / sq));
    }
    if (kl < bestKl) {
      bestKl = kl;
      best = i;
    }
  }
  return best;
}

TEST(EntropyCalibrator, MatchesThePlainSearchOnSmallHistograms) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 40; ++round) {
    const size_t size = 20 + random() % 280;
    const int levels = round % 2 ? 7 : 15;
    std::vector<uint64_t> hist(size, 0);
    // A decaying bulk with gaps and a few far outliers.
    for (size_t j = 0; j < size; ++j) {
      if (random() % 5 == 0) continue;
      hist[j] = static_cast<uint64_t>(2000.0 * std::exp(-static_cast<double>(j) / 15.0));
    }
    for (int k = 0; k < 3; ++k) hist[size - 1 - random() % (size / 4)] += 1 + random() % 3;
    if (size < static_cast<size_t>(levels) + 1) continue;
    EXPECT_EQ(entropyThresholdBins(hist, levels), naiveEntropyBins(hist, levels))
        << "round " << round << " size " << size;
  }
}

TEST(EntropyCalibrator, MatchesThePlainSearchOnARealHistogram) {
  TensorStatistics stats = statsOf(laplaceLike(20000));
  const size_t bins = naiveEntropyBins(stats.histogram(), 127);
  ASSERT_GT(bins, 0u);
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Entropy),
            std::min((static_cast<double>(bins) + 0.5) * stats.binWidth(), double{stats.absMax()}));
}

TEST(EntropyCalibrator, EdgeCasesOfTheSearch) {
  // Too few bins for the levels, or nothing counted: no threshold.
  EXPECT_EQ(entropyThresholdBins(std::vector<uint64_t>(100, 1), 127), 0u);
  EXPECT_EQ(entropyThresholdBins(std::vector<uint64_t>(300, 0), 127), 0u);
  // A flat histogram is represented exactly only when nothing is cut off: all bins.
  EXPECT_EQ(entropyThresholdBins(std::vector<uint64_t>(64, 10), 7), 64u);
}

TEST(EntropyCalibrator, ThresholdFarBelowASingleOutlier) {
  std::vector<float> values = laplaceLike(100000);  // |x| <= 12.2
  values.push_back(1000.0f);
  TensorStatistics stats = statsOf(values);
  const double amax = amaxOf(stats, CalibratorKind::Entropy);
  EXPECT_GT(amax, 0.0);
  EXPECT_LT(amax, 1000.0 / 4);
  // Max keeps the outlier.
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Max), 1000.0);
}

TEST(EntropyCalibrator, ClipsTheTailOfALaplaceDistribution) {
  TensorStatistics stats = statsOf(laplaceLike(100000));
  const double amax = amaxOf(stats, CalibratorKind::Entropy);
  EXPECT_LT(amax, 0.9 * stats.absMax());
  EXPECT_GT(amax, 3.0);  // three times the mean |x|: most of the mass is kept
}

TEST(EntropyCalibrator, UniformDataKeepsTheWholeRange) {
  TensorStatistics stats = statsOf(uniform01(100000));
  EXPECT_GT(amaxOf(stats, CalibratorKind::Entropy), 0.95);
}

// A ReLU output: most values exactly 0, the rest spread over (0, 6). Without the zeros the data
// is uniform, so entropy and mse keep (nearly) the whole range; with the zeros in bin 0 the KL
// search used to stop at about 1.0, clipping five sixths of the range.
TEST(EntropyCalibrator, ExactZerosOfAReluDoNotPullTheThresholdDown) {
  std::vector<float> values(60000, 0.0f);
  for (float v : uniform01(40000)) values.push_back(6.0f * v);
  TensorStatistics stats = statsOf(values);
  EXPECT_EQ(stats.zeros(), 60000u);
  EXPECT_GT(amaxOf(stats, CalibratorKind::Entropy), 0.95 * 6);
  EXPECT_GT(amaxOf(stats, CalibratorKind::Mse), 0.9 * 6);
  // The zero count survives merging, so sharded statistics agree.
  TensorStatistics left = statsOf(std::vector<float>(values.begin(), values.begin() + 50000));
  left.merge(statsOf(std::vector<float>(values.begin() + 50000, values.end())));
  EXPECT_EQ(left.zeros(), 60000u);
  EXPECT_EQ(amaxOf(left, CalibratorKind::Entropy), amaxOf(stats, CalibratorKind::Entropy));
}

// ReLU6 outputs: a Laplace-like body below 5.5 and 1% of the values saturated at exactly 6.
TEST(EntropyCalibrator, KeepsTheCeilingOfASaturatingActivation) {
  std::vector<float> values;
  for (float v : laplaceLike(99000)) values.push_back(std::fabs(v) * 0.45f);  // below 5.5
  values.insert(values.end(), 1000, 6.0f);
  TensorStatistics stats = statsOf(values);
  EXPECT_EQ(stats.atAbsMax(), 1000u);
  EXPECT_EQ(amaxOf(stats, CalibratorKind::Entropy), 6.0);
  // The same body with a single value at 6 is an outlier: entropy clips it.
  std::vector<float> outlier(values.begin(), values.begin() + 99001);
  outlier.back() = 6.0f;
  TensorStatistics once = statsOf(outlier);
  EXPECT_EQ(once.atAbsMax(), 1u);
  EXPECT_LT(amaxOf(once, CalibratorKind::Entropy), 6.0);
  // A few repeats are a ceiling once they reach kSaturationShare of the values (1e-4).
  std::vector<float> few(values.begin(), values.begin() + 99000);
  few.insert(few.end(), 5, 6.0f);  // 5e-5 of the values
  EXPECT_LT(amaxOf(statsOf(few), CalibratorKind::Entropy), 6.0);
  few.insert(few.end(), 15, 6.0f);  // 2e-4
  EXPECT_EQ(amaxOf(statsOf(few), CalibratorKind::Entropy), 6.0);
  // The count survives merging in either order, and a larger maximum resets it.
  TensorStatistics left = statsOf(std::vector<float>(values.begin(), values.begin() + 99500));
  TensorStatistics right = statsOf(std::vector<float>(values.begin() + 99500, values.end()));
  TensorStatistics merged = left;
  merged.merge(right);
  right.merge(left);
  EXPECT_EQ(merged.atAbsMax(), 1000u);
  EXPECT_EQ(right.atAbsMax(), 1000u);
  merged.add(std::vector<float>{-7.0f});
  EXPECT_EQ(merged.atAbsMax(), 1u);
}

// ---- mse ----

/// Expected squared error of symmetric quantization with 127 levels at `amax`, over raw values.
double quantizationMse(const std::vector<float>& values, double amax) {
  const double scale = amax / 127;
  double error = 0;
  for (float v : values) {
    double q = std::clamp(std::nearbyint(v / scale), -127.0, 127.0) * scale;
    error += (v - q) * (v - q);
  }
  return error / static_cast<double>(values.size());
}

TEST(MseCalibrator, UniformDataKeepsNearlyTheMax) {
  std::vector<float> values = uniform01(100000);
  TensorStatistics stats = statsOf(values);
  const double amax = amaxOf(stats, CalibratorKind::Mse);
  EXPECT_GT(amax, 0.97);
  EXPECT_LE(amax, double{stats.absMax()});
}

TEST(MseCalibrator, LaplaceDataClipsBelowTheMax) {
  std::vector<float> values = laplaceLike(100000);
  TensorStatistics stats = statsOf(values);
  ASSERT_NEAR(stats.absMax(), std::log(2.0 * 100000), 1e-3);  // the largest draw, 12.2
  const double amax = amaxOf(stats, CalibratorKind::Mse);
  // The closed-form optimum for a Laplace distribution of scale b quantized with 8 bits is
  // 9.89 b (Banner et al., "Post training 4-bit quantization of convolutional networks for
  // rapid-deployment", the ACIQ table); b = 1 here.
  EXPECT_NEAR(amax, 9.89, 0.4);
  // The threshold is better, on the raw values, than the max and than halving it again.
  EXPECT_LT(quantizationMse(values, amax), quantizationMse(values, stats.absMax()));
  EXPECT_LT(quantizationMse(values, amax), quantizationMse(values, amax / 2));
}

TEST(MseCalibrator, GaussianDataMatchesTheClosedFormOptimum) {
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(size_t{1} << 20);
  for (float& v : values) v = normal(random);
  TensorStatistics stats = statsOf(values);
  // ACIQ's optimum for a standard Gaussian quantized with 8 bits: 3.92 sigma (Banner et al.).
  EXPECT_NEAR(amaxOf(stats, CalibratorKind::Mse), 3.92, 0.15);
  EXPECT_GT(stats.absMax(), 4.5f);
}

TEST(MseCalibrator, SearchPicksTheExactErrorMinimum) {
  // All mass in bin 99 (centre 99.5) and one level: amax = 99.5 would be exact but only upper
  // edges are candidates. Edges 99 and 100 both miss the centre by 0.5 (every other edge by
  // more); ties go to the first, 99.
  std::vector<uint64_t> hist(128, 0);
  hist[99] = 10;
  EXPECT_EQ(mseThresholdBins(hist, 1), 99u);
  // With 2 levels the centre 99.5 is level 1 of edge 199 exactly (scale 99.5): error 0, the
  // unique minimum although 199 is far above every value.
  std::vector<uint64_t> wide(256, 0);
  wide[99] = 10;
  EXPECT_EQ(mseThresholdBins(wide, 2), 199u);
  EXPECT_EQ(mseThresholdBins(std::vector<uint64_t>(10, 0), 127), 0u);
}

// ---- batching, sharding and order ----

/// 96 samples of 700 values whose ranges differ by powers of two up to 2^9, with zeros,
/// negatives, subnormals and a NaN, so the histogram grows many times while streaming.
std::vector<std::vector<float>> samples96() {
  std::mt19937 random(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> samples(96);
  for (size_t s = 0; s < samples.size(); ++s) {
    const float scale = std::ldexp(1.0f, static_cast<int>((s * 7) % 10)) * 0.01f;
    for (int k = 0; k < 700; ++k) {
      float v = normal(random) * scale;
      if (k % 50 == 0) v = 0.0f;
      if (k % 97 == 1) v = std::exp(normal(random) * 3.0f);  // long tail
      samples[s].push_back(v);
    }
  }
  samples[17].push_back(std::numeric_limits<float>::quiet_NaN());
  samples[40].push_back(std::numeric_limits<float>::denorm_min());
  return samples;
}

void expectIdentical(const TensorStatistics& a, const TensorStatistics& b, const char* what) {
  EXPECT_EQ(a.count(), b.count()) << what;
  EXPECT_EQ(a.nonFinite(), b.nonFinite()) << what;
  EXPECT_EQ(a.min(), b.min()) << what;
  EXPECT_EQ(a.max(), b.max()) << what;
  EXPECT_EQ(a.binWidth(), b.binWidth()) << what;
  EXPECT_TRUE(a.histogram() == b.histogram()) << what;
  for (CalibratorKind kind : kAllKinds) {
    EXPECT_EQ(amaxOf(a, kind), amaxOf(b, kind)) << what << " " << calibratorName(kind);
  }
}

TEST(TensorStatistics, IndependentOfBatchingShardingAndOrder) {
  const std::vector<std::vector<float>> samples = samples96();

  TensorStatistics oneAtATime;
  for (const auto& sample : samples) oneAtATime.add(sample);

  TensorStatistics fourBatches;
  for (size_t batch = 0; batch < 4; ++batch) {
    std::vector<float> values;
    for (size_t s = batch * 24; s < (batch + 1) * 24; ++s) {
      values.insert(values.end(), samples[s].begin(), samples[s].end());
    }
    fourBatches.add(values);
  }

  std::vector<float> all;
  for (const auto& sample : samples) all.insert(all.end(), sample.begin(), sample.end());
  TensorStatistics oneBatch = statsOf(all);

  // Three shards of 32 (interleaved), merged in two different orders.
  std::vector<TensorStatistics> shards(3);
  for (size_t s = 0; s < samples.size(); ++s) shards[s % 3].add(samples[s]);
  TensorStatistics merged;
  for (const auto& shard : shards) merged.merge(shard);
  TensorStatistics mergedBackwards = shards[2];
  mergedBackwards.merge(shards[1]);
  mergedBackwards.merge(shards[0]);

  TensorStatistics reversed;
  for (size_t s = samples.size(); s-- > 0;) reversed.add(samples[s]);
  TensorStatistics shuffled;
  std::vector<size_t> order(samples.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = s;
  std::shuffle(order.begin(), order.end(), std::mt19937(99));
  for (size_t s : order) shuffled.add(samples[s]);
  std::vector<float> shuffledValues = all;
  std::shuffle(shuffledValues.begin(), shuffledValues.end(), std::mt19937(5));
  TensorStatistics shuffledValuesStats = statsOf(shuffledValues);

  ASSERT_EQ(oneAtATime.count(), 96u * 700 + 1);
  ASSERT_EQ(oneAtATime.nonFinite(), 1u);
  expectIdentical(oneAtATime, fourBatches, "four batches");
  expectIdentical(oneAtATime, oneBatch, "one batch");
  expectIdentical(oneAtATime, merged, "merged shards");
  expectIdentical(oneAtATime, mergedBackwards, "shards merged backwards");
  expectIdentical(oneAtATime, reversed, "reversed samples");
  expectIdentical(oneAtATime, shuffled, "shuffled samples");
  expectIdentical(oneAtATime, shuffledValuesStats, "shuffled values");
}

TEST(TensorStatistics, MergeWithEmptyAndZeroOnlyStatistics) {
  const std::vector<float> values = {0.5f, -2.0f, 0.0f, 9.0f};
  TensorStatistics direct = statsOf({0.5f, -2.0f, 0.0f, 9.0f, 0.0f, 0.0f});

  TensorStatistics zeros = statsOf({0.0f, 0.0f});
  TensorStatistics a = statsOf(values);
  a.merge(TensorStatistics());
  a.merge(zeros);
  expectIdentical(a, direct, "zeros merged into values");

  TensorStatistics b = zeros;
  b.merge(statsOf(values));
  expectIdentical(b, direct, "values merged into zeros");

  TensorStatistics c;
  c.merge(statsOf(values));
  c.merge(zeros);
  expectIdentical(c, direct, "into empty");
}

}  // namespace
}  // namespace qopt::quant
