#include "CompareKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QOPT_COMPARE_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define QOPT_COMPARE_CLONES
#endif

namespace qopt::analysis::detail {

namespace {

constexpr size_t kLanes = 4;

struct Lanes {
  double maxAbs[kLanes] = {};
  double sumAbs[kLanes] = {};
  double sumSquaredError[kLanes] = {};
  double sumReferenceSquared[kLanes] = {};
  double sumActualSquared[kLanes] = {};
  double sumProduct[kLanes] = {};
  double low[kLanes];
  double high[kLanes];
  uint64_t count[kLanes] = {};
  uint64_t nonFinite = 0;

  Lanes() {
    std::fill(std::begin(low), std::end(low), std::numeric_limits<double>::infinity());
    std::fill(std::begin(high), std::end(high), -std::numeric_limits<double>::infinity());
  }

  [[gnu::always_inline]] void addPair(size_t lane, double r, double a) {
    const double e = r - a;
    maxAbs[lane] = std::max(maxAbs[lane], std::abs(e));
    sumAbs[lane] += std::abs(e);
    sumSquaredError[lane] += e * e;
    sumReferenceSquared[lane] += r * r;
    sumActualSquared[lane] += a * a;
    sumProduct[lane] += r * a;
    low[lane] = std::min(low[lane], std::min(r, a));
    high[lane] = std::max(high[lane], std::max(r, a));
    ++count[lane];
  }

  // A pair with a non-finite value: its finite value still widens the range.
  void addOther(size_t lane, double r, double a) {
    const bool same = (std::isnan(r) && std::isnan(a)) || r == a;
    if (!same) ++nonFinite;
    for (double v : {r, a}) {
      if (!std::isfinite(v)) continue;
      low[lane] = std::min(low[lane], v);
      high[lane] = std::max(high[lane], v);
    }
  }

  static double total(const double (&lanes)[kLanes]) {
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  }

  PairSums result() const {
    PairSums out;
    for (size_t k = 0; k < kLanes; ++k) out.count += count[k];
    out.nonFinite = nonFinite;
    out.maxAbs = std::max(std::max(maxAbs[0], maxAbs[1]), std::max(maxAbs[2], maxAbs[3]));
    out.sumAbs = total(sumAbs);
    out.sumSquaredError = total(sumSquaredError);
    out.sumReferenceSquared = total(sumReferenceSquared);
    out.sumActualSquared = total(sumActualSquared);
    out.sumProduct = total(sumProduct);
    out.low = std::min(std::min(low[0], low[1]), std::min(low[2], low[3]));
    out.high = std::max(std::max(high[0], high[1]), std::max(high[2], high[3]));
    return out;
  }
};

template <class T>
[[gnu::always_inline]] inline bool allFinite(const T* r, const T* a, size_t m) {
  constexpr double kMax = std::numeric_limits<double>::max();
  size_t finite = 0;
  for (size_t j = 0; j < m; ++j) {
    finite += (std::abs(static_cast<double>(r[j])) <= kMax ? 1 : 0) +
              (std::abs(static_cast<double>(a[j])) <= kMax ? 1 : 0);
  }
  return finite == 2 * m;
}

// Four doubles, one per lane (GCC vector extensions: AVX registers where the clone has them,
// pairs of SSE2 ones otherwise; the same lanes and the same operations either way).
using Double4 = double __attribute__((vector_size(4 * sizeof(double))));
using Float4 = float __attribute__((vector_size(4 * sizeof(float))));

[[gnu::always_inline]] inline Double4 load4(const float* p) {
  Float4 f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, Double4);
}

[[gnu::always_inline]] inline Double4 load4(const double* p) {
  Double4 d;
  std::memcpy(&d, p, sizeof d);
  return d;
}

[[gnu::always_inline]] inline Double4 laneMax(Double4 a, Double4 b) {
  return a < b ? b : a;  // std::max's choice, lane by lane
}

[[gnu::always_inline]] inline Double4 laneMin(Double4 a, Double4 b) {
  return b < a ? b : a;  // std::min's
}

[[gnu::always_inline]] inline Double4 fromLanes(const double (&lanes)[kLanes]) {
  return Double4{lanes[0], lanes[1], lanes[2], lanes[3]};
}

[[gnu::always_inline]] inline void toLanes(Double4 v, double (&lanes)[kLanes]) {
  for (size_t k = 0; k < kLanes; ++k) lanes[k] = v[k];
}

// `m` pairs, all finite, m a multiple of kLanes: pair j goes to lane j % kLanes, with exactly
// the operations of Lanes::addPair.
template <class T>
[[gnu::always_inline]] inline void addFinite(Lanes& lanes, const T* r, const T* a, size_t m) {
  Double4 maxAbs = fromLanes(lanes.maxAbs), sumAbs = fromLanes(lanes.sumAbs);
  Double4 sse = fromLanes(lanes.sumSquaredError), srr = fromLanes(lanes.sumReferenceSquared);
  Double4 saa = fromLanes(lanes.sumActualSquared), sra = fromLanes(lanes.sumProduct);
  Double4 low = fromLanes(lanes.low), high = fromLanes(lanes.high);
  for (size_t j = 0; j < m; j += kLanes) {
    const Double4 rv = load4(r + j);
    const Double4 av = load4(a + j);
    const Double4 e = rv - av;
    const Double4 absE = e < 0 ? -e : e;
    maxAbs = laneMax(maxAbs, absE);
    sumAbs += absE;
    sse += e * e;
    srr += rv * rv;
    saa += av * av;
    sra += rv * av;
    low = laneMin(low, laneMin(rv, av));
    high = laneMax(high, laneMax(rv, av));
  }
  toLanes(maxAbs, lanes.maxAbs);
  toLanes(sumAbs, lanes.sumAbs);
  toLanes(sse, lanes.sumSquaredError);
  toLanes(srr, lanes.sumReferenceSquared);
  toLanes(saa, lanes.sumActualSquared);
  toLanes(sra, lanes.sumProduct);
  toLanes(low, lanes.low);
  toLanes(high, lanes.high);
  for (size_t k = 0; k < kLanes; ++k) lanes.count[k] += m / kLanes;
}

template <class T>
[[gnu::always_inline]] inline void addAny(Lanes& lanes, size_t lane, double r, double a) {
  if (std::isfinite(r) && std::isfinite(a)) {
    lanes.addPair(lane, r, a);
  } else {
    lanes.addOther(lane, r, a);
  }
}

// Chunks of all-finite pairs (the usual case) take the branch-free loop.
template <class T>
[[gnu::always_inline]] inline PairSums sumPairsImpl(const T* reference, const T* actual, size_t n) {
  constexpr size_t kChunk = 1024;
  Lanes lanes;
  const size_t whole = n / kLanes * kLanes;
  for (size_t start = 0; start < whole; start += kChunk) {
    const size_t m = std::min(kChunk, whole - start);
    const T* r = reference + start;
    const T* a = actual + start;
    if (allFinite(r, a, m)) {
      addFinite(lanes, r, a, m);
      continue;
    }
    for (size_t j = 0; j < m; ++j) addAny<T>(lanes, j % kLanes, r[j], a[j]);
  }
  for (size_t i = whole; i < n; ++i) addAny<T>(lanes, i - whole, reference[i], actual[i]);
  return lanes.result();
}

// The bin of each of `m` values: floor((x - low) / width) clamped to [0, last] (the clamp first
// makes the floor a truncation, which vectorizes), `skip` for a non-finite value.
template <class T>
[[gnu::always_inline]] inline void binIndicesImpl(const T* v, size_t m, double low, double width,
                                                  double last, double skip, int32_t* index) {
  for (size_t j = 0; j < m; ++j) {
    const double x = v[j];
    double t = (x - low) / width;
    t = t < 0.0 ? 0.0 : t;
    t = t > last ? last : t;
    const bool finite = std::abs(x) <= std::numeric_limits<double>::max();
    index[j] = static_cast<int32_t>(finite ? t : skip);
  }
}

QOPT_COMPARE_CLONES void binIndices(const float* v, size_t m, double low, double width, double last,
                                    double skip, int32_t* index) {
  binIndicesImpl(v, m, low, width, last, skip, index);
}

QOPT_COMPARE_CLONES void binIndices(const double* v, size_t m, double low, double width,
                                    double last, double skip, int32_t* index) {
  binIndicesImpl(v, m, low, width, last, skip, index);
}

// Bins in blocks: the bin numbers of a block are computed first (a loop the compiler
// vectorizes), then counted into kLanes interleaved tables, so that runs of values in one bin
// do not wait on each other's increments. A non-finite value gets bin `bins`, never counted.
template <class T>
[[gnu::always_inline]] inline uint64_t countBinsImpl(const T* values, size_t n, double low,
                                                     double width, size_t bins, uint64_t* counts) {
  constexpr size_t kBlock = 256;
  const double last = static_cast<double>(bins - 1);
  const double skip = static_cast<double>(bins);
  std::vector<uint32_t> tables(kLanes * (bins + 1), 0);
  uint64_t skipped = 0;
  auto flush = [&] {
    for (size_t k = 0; k < kLanes; ++k) {
      for (size_t b = 0; b < bins; ++b) counts[b] += tables[k * (bins + 1) + b];
      skipped += tables[k * (bins + 1) + bins];
    }
    std::fill(tables.begin(), tables.end(), 0);
  };
  int32_t index[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    const T* v = values + start;
    binIndices(v, m, low, width, last, skip, index);
    for (size_t j = 0; j < m; ++j) ++tables[(j % kLanes) * (bins + 1) + index[j]];
    if ((start / kBlock) % 4096 == 4095) flush();  // uint32 tables never overflow
  }
  flush();
  return n - skipped;
}

}  // namespace

QOPT_COMPARE_CLONES PairSums sumPairs(const float* reference, const float* actual, size_t n) {
  return sumPairsImpl(reference, actual, n);
}

QOPT_COMPARE_CLONES PairSums sumPairs(const double* reference, const double* actual, size_t n) {
  return sumPairsImpl(reference, actual, n);
}

QOPT_COMPARE_CLONES uint64_t countBins(const float* values, size_t n, double low, double width,
                                       size_t bins, uint64_t* counts) {
  return countBinsImpl(values, n, low, width, bins, counts);
}

QOPT_COMPARE_CLONES uint64_t countBins(const double* values, size_t n, double low, double width,
                                       size_t bins, uint64_t* counts) {
  return countBinsImpl(values, n, low, width, bins, counts);
}

}  // namespace qopt::analysis::detail
