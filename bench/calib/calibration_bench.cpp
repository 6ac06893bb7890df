// How fast calibration statistics stream and how long each calibrator's threshold search takes,
// each against a baseline measured in the same run:
//   - TensorStatistics::add against a plain max |x| loop over the same values (the least any
//     calibrator must do);
//   - the entropy search against the same search evaluated bin by bin (O(bins^2) logarithms),
//     which is also checked to pick the same threshold.
//
//   qopt_calib_bench [--values N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qopt/quant/Calibration.h"

namespace {

using Clock = std::chrono::steady_clock;
using qopt::quant::CalibratorKind;
using qopt::quant::CalibratorSpec;
using qopt::quant::TensorStatistics;

template <class Fn>
double bestMs(int repeats, Fn&& fn) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return best;
}

/// The entropy search written bin by bin (the definition in EntropyCalibrator.cpp, unoptimised).
size_t perBinEntropySearch(const std::vector<uint64_t>& hist, int levels) {
  const size_t groups = static_cast<size_t>(levels) + 1;
  auto smooth = [](std::vector<double>& d) {
    double total = 0;
    double zeros = 0;
    for (double c : d) {
      total += c;
      zeros += c == 0 ? 1 : 0;
    }
    const double keep = (total - 1e-4 * zeros) / total;
    if (total <= 0 || keep <= 0) return false;
    for (double& c : d) c = c == 0 ? 1e-4 : c * keep;
    return true;
  };
  size_t best = 0;
  double bestKl = std::numeric_limits<double>::infinity();
  std::vector<double> p;
  std::vector<double> q;
  for (size_t i = groups; i <= hist.size(); ++i) {
    p.assign(hist.begin(), hist.begin() + static_cast<std::ptrdiff_t>(i));
    for (size_t j = i; j < hist.size(); ++j) p[i - 1] += static_cast<double>(hist[j]);
    q.assign(i, 0);
    const size_t per = i / groups;
    for (size_t g = 0; g < groups; ++g) {
      const size_t start = g * per;
      const size_t stop = g + 1 == groups ? i : start + per;
      double sum = 0;
      double members = 0;
      for (size_t j = start; j < stop; ++j) {
        sum += static_cast<double>(hist[j]);
        members += p[j] != 0 ? 1 : 0;
      }
      for (size_t j = start; j < stop; ++j) q[j] = p[j] != 0 ? sum / members : 0;
    }
    if (!smooth(p) || !smooth(q)) continue;
    double sp = 0;
    double sq = 0;
    for (size_t j = 0; j < i; ++j) {
      sp += p[j];
      sq += q[j];
    }
    double kl = 0;
    for (size_t j = 0; j < i; ++j) kl += p[j] / sp * std::log((p[j] / sp) / (q[j] / sq));
    if (kl < bestKl) {
      bestKl = kl;
      best = i;
    }
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t values = size_t{1} << 22;
  int repeats = 5;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (std::strcmp(argv[a], "--values") == 0) values = std::strtoull(argv[a + 1], nullptr, 10);
    if (std::strcmp(argv[a], "--repeats") == 0) repeats = std::atoi(argv[a + 1]);
  }
  std::mt19937 random(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> data(values);
  for (float& v : data) v = normal(random);

  volatile float sink = 0;
  const double maxLoopMs = bestMs(repeats, [&] {
    float m = 0;
    for (float v : data) m = std::max(m, std::fabs(v));
    sink = m;
  });
  TensorStatistics stats;
  const double addMs = bestMs(repeats, [&] {
    TensorStatistics fresh;
    fresh.add(data);
    stats = fresh;
  });
  fmt::print(
      "streaming {} values: add {:.2f} ms ({:.0f} Mvalues/s), plain max|x| loop {:.2f} ms, "
      "ratio {:.2f}; memory per tensor {} bytes of histogram\n",
      values, addMs, static_cast<double>(values) / addMs / 1e3, maxLoopMs, addMs / maxLoopMs,
      stats.histogram().size() * sizeof(uint64_t));

  for (CalibratorKind kind : {CalibratorKind::Max, CalibratorKind::Percentile,
                              CalibratorKind::Entropy, CalibratorKind::Mse}) {
    CalibratorSpec spec;
    spec.kind = kind;
    double amax = 0;
    const double ms = bestMs(repeats, [&] { amax = qopt::quant::computeAmax(stats, spec); });
    fmt::print("{:>10}: amax {:.6f} in {:.3f} ms\n", qopt::quant::calibratorName(kind), amax, ms);
  }

  size_t fast = 0;
  size_t plain = 0;
  const double fastMs =
      bestMs(repeats, [&] { fast = qopt::quant::entropyThresholdBins(stats.histogram(), 127); });
  const double plainMs = bestMs(1, [&] { plain = perBinEntropySearch(stats.histogram(), 127); });
  fmt::print(
      "entropy search: {:.3f} ms against {:.1f} ms bin by bin (ratio {:.3f}), same "
      "threshold: {} ({} / {} bins)\n",
      fastMs, plainMs, fastMs / plainMs, fast == plain ? "yes" : "NO", fast, plain);
  return fast == plain ? 0 : 1;
}
