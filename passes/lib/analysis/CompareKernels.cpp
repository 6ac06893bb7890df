#include "CompareKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
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

// Four doubles, one per lane (GCC vector extensions: AVX registers where the clone has them,
// pairs of SSE2 ones otherwise; the same lanes and the same operations either way).
using Double4 = double __attribute__((vector_size(4 * sizeof(double))));
using Float4 = float __attribute__((vector_size(4 * sizeof(float))));
using Mask4 = int64_t __attribute__((vector_size(4 * sizeof(int64_t))));
using Int4 = int32_t __attribute__((vector_size(4 * sizeof(int32_t))));

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

// The bin numbers of finite values, four at a time (as binIndicesImpl computes them).
struct Binner4 {
  Double4 low, inverse, last;
  explicit Binner4(const BinGrid& grid) {
    const double bound = static_cast<double>(grid.bins - 1);
    low = Double4{grid.low, grid.low, grid.low, grid.low};
    inverse = Double4{grid.inverseWidth, grid.inverseWidth, grid.inverseWidth, grid.inverseWidth};
    last = Double4{bound, bound, bound, bound};
  }
  [[gnu::always_inline]] void store(Double4 x, int32_t* index) const {
    Double4 t = (x - low) * inverse;
    t = t < 0.0 ? 0.0 : t;
    t = t > last ? last : t;
    const Int4 i = __builtin_convertvector(t, Int4);
    std::memcpy(index, &i, sizeof i);
  }
};

// `m` pairs, m a multiple of kLanes: pair j goes to lane j % kLanes, with exactly the
// operations of Lanes::addPair, and with a binner each value's bin goes to indexR / indexA.
// Returns false, leaving the lanes as they were, when a value is not finite (the caller takes
// the value-by-value path).
template <class T>
[[gnu::always_inline]] inline bool addFinite(Lanes& lanes, const T* r, const T* a, size_t m,
                                             const Binner4* binner = nullptr,
                                             int32_t* indexR = nullptr, int32_t* indexA = nullptr) {
  constexpr double kMax = std::numeric_limits<double>::max();
  Double4 maxAbs = fromLanes(lanes.maxAbs), sumAbs = fromLanes(lanes.sumAbs);
  Double4 sse = fromLanes(lanes.sumSquaredError), srr = fromLanes(lanes.sumReferenceSquared);
  Double4 saa = fromLanes(lanes.sumActualSquared), sra = fromLanes(lanes.sumProduct);
  Double4 low = fromLanes(lanes.low), high = fromLanes(lanes.high);
  Mask4 finite = Mask4{} - 1;
  for (size_t j = 0; j < m; j += kLanes) {
    const Double4 rv = load4(r + j);
    const Double4 av = load4(a + j);
    const Double4 absR = rv < 0 ? -rv : rv;
    const Double4 absA = av < 0 ? -av : av;
    finite &= (absR <= kMax) & (absA <= kMax);  // false for NaN too
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
    if (binner != nullptr) {
      binner->store(rv, indexR + j);
      binner->store(av, indexA + j);
    }
  }
  if ((finite[0] & finite[1] & finite[2] & finite[3]) == 0) return false;
  toLanes(maxAbs, lanes.maxAbs);
  toLanes(sumAbs, lanes.sumAbs);
  toLanes(sse, lanes.sumSquaredError);
  toLanes(srr, lanes.sumReferenceSquared);
  toLanes(saa, lanes.sumActualSquared);
  toLanes(sra, lanes.sumProduct);
  toLanes(low, lanes.low);
  toLanes(high, lanes.high);
  for (size_t k = 0; k < kLanes; ++k) lanes.count[k] += m / kLanes;
  return true;
}

template <class T>
[[gnu::always_inline]] inline void addAny(Lanes& lanes, size_t lane, double r, double a) {
  if (std::isfinite(r) && std::isfinite(a)) {
    lanes.addPair(lane, r, a);
  } else {
    lanes.addOther(lane, r, a);
  }
}

// The bin of each of `m` values: floor((x - low) * inverseWidth) clamped to [0, last] (the
// clamp first makes the floor a truncation, which vectorizes), `skip` for a non-finite value.
template <class T>
[[gnu::always_inline]] inline void binIndicesImpl(const T* v, size_t m, double low, double inverse,
                                                  double last, double skip, int32_t* index) {
  for (size_t j = 0; j < m; ++j) {
    const double x = v[j];
    double t = (x - low) * inverse;
    t = t < 0.0 ? 0.0 : t;
    t = t > last ? last : t;
    const bool finite = std::abs(x) <= std::numeric_limits<double>::max();
    index[j] = static_cast<int32_t>(finite ? t : skip);
  }
}

// Counts bins block by block: the bin numbers of a block are computed first (a loop the
// compiler vectorizes), then counted into kTables interleaved tables, value j of a block into
// table j % kTables, so that a run of values in one bin (the zeros after a Relu) makes
// kTables independent chains of increments instead of one. A non-finite value gets bin `bins`,
// never counted.
class BinCounter {
 public:
  static constexpr size_t kBlock = 256;
  static constexpr size_t kTables = 8;

  BinCounter(const BinGrid& grid, uint64_t* counts)
      : grid_(grid), counts_(counts), tables_(kTables * (grid.bins + 1), 0) {}

  const BinGrid& grid() const { return grid_; }

  // At most kBlock values.
  template <class T>
  [[gnu::always_inline]] void add(const T* values, size_t m) {
    int32_t index[kBlock];
    binIndicesImpl(values, m, grid_.low, grid_.inverseWidth, static_cast<double>(grid_.bins - 1),
                   static_cast<double>(grid_.bins), index);
    count(index, m);
  }

  // At most kBlock bin numbers (`bins` for a value not counted).
  [[gnu::always_inline]] void count(const int32_t* index, size_t m) {
    const size_t stride = grid_.bins + 1;
    uint32_t* t[kTables];
    for (size_t k = 0; k < kTables; ++k) t[k] = tables_.data() + k * stride;
    size_t j = 0;
    for (; j + kTables <= m; j += kTables) {
      for (size_t k = 0; k < kTables; ++k) ++t[k][index[j + k]];
    }
    for (; j < m; ++j) ++t[j % kTables][index[j]];
    seen_ += m;
    if (++blocks_ % 4096 == 0) flush();  // uint32 tables never overflow
  }

  // Adds the tables to the counts; returns how many finite values were counted in all.
  uint64_t finish() {
    flush();
    return seen_ - skipped_;
  }

 private:
  void flush() {
    const size_t stride = grid_.bins + 1;
    for (size_t k = 0; k < kTables; ++k) {
      for (size_t b = 0; b < grid_.bins; ++b) counts_[b] += tables_[k * stride + b];
      skipped_ += tables_[k * stride + grid_.bins];
    }
    std::fill(tables_.begin(), tables_.end(), 0);
  }

  BinGrid grid_;
  uint64_t* counts_;
  std::vector<uint32_t> tables_;
  uint64_t seen_ = 0;
  uint64_t skipped_ = 0;
  size_t blocks_ = 0;
};

// Chunks of all-finite pairs (the usual case) take the branch-free loop. With counters, each
// chunk's values are binned while they are in cache.
template <class T>
[[gnu::always_inline]] inline PairSums sumPairsImpl(const T* reference, const T* actual, size_t n,
                                                    BinCounter* referenceBins = nullptr,
                                                    BinCounter* actualBins = nullptr) {
  constexpr size_t kChunk = BinCounter::kBlock;
  static_assert(kChunk % kLanes == 0);
  Lanes lanes;
  const size_t whole = n / kLanes * kLanes;
  const std::optional<Binner4> binner =
      referenceBins != nullptr ? std::optional<Binner4>(referenceBins->grid()) : std::nullopt;
  int32_t indexR[kChunk];
  int32_t indexA[kChunk];
  for (size_t start = 0; start < whole; start += kChunk) {
    const size_t m = std::min(kChunk, whole - start);
    const T* r = reference + start;
    const T* a = actual + start;
    if (addFinite(lanes, r, a, m, binner ? &*binner : nullptr, indexR, indexA)) {
      if (binner) {
        referenceBins->count(indexR, m);
        actualBins->count(indexA, m);
      }
      continue;
    }
    for (size_t j = 0; j < m; ++j) addAny<T>(lanes, j % kLanes, r[j], a[j]);
    if (referenceBins != nullptr) {
      referenceBins->add(r, m);
      actualBins->add(a, m);
    }
  }
  for (size_t i = whole; i < n; ++i) addAny<T>(lanes, i - whole, reference[i], actual[i]);
  if (referenceBins != nullptr && whole < n) {
    referenceBins->add(reference + whole, n - whole);
    actualBins->add(actual + whole, n - whole);
  }
  return lanes.result();
}

template <class T>
[[gnu::always_inline]] inline uint64_t countBinsImpl(const T* values, size_t n, const BinGrid& grid,
                                                     uint64_t* counts) {
  BinCounter counter(grid, counts);
  for (size_t start = 0; start < n; start += BinCounter::kBlock) {
    counter.add(values + start, std::min(BinCounter::kBlock, n - start));
  }
  return counter.finish();
}

template <class T>
[[gnu::always_inline]] inline PairSums sumAndCountImpl(const T* reference, const T* actual,
                                                       size_t n, const BinGrid& grid,
                                                       uint64_t* referenceCounts,
                                                       uint64_t* actualCounts,
                                                       uint64_t counted[2]) {
  BinCounter referenceBins(grid, referenceCounts);
  BinCounter actualBins(grid, actualCounts);
  PairSums sums = sumPairsImpl(reference, actual, n, &referenceBins, &actualBins);
  counted[0] = referenceBins.finish();
  counted[1] = actualBins.finish();
  return sums;
}

}  // namespace

QOPT_COMPARE_CLONES PairSums sumPairs(const float* reference, const float* actual, size_t n) {
  return sumPairsImpl(reference, actual, n);
}

QOPT_COMPARE_CLONES PairSums sumPairs(const double* reference, const double* actual, size_t n) {
  return sumPairsImpl(reference, actual, n);
}

QOPT_COMPARE_CLONES uint64_t countBins(const float* values, size_t n, const BinGrid& grid,
                                       uint64_t* counts) {
  return countBinsImpl(values, n, grid, counts);
}

QOPT_COMPARE_CLONES uint64_t countBins(const double* values, size_t n, const BinGrid& grid,
                                       uint64_t* counts) {
  return countBinsImpl(values, n, grid, counts);
}

QOPT_COMPARE_CLONES PairSums sumAndCountPairs(const float* reference, const float* actual, size_t n,
                                              const BinGrid& grid, uint64_t* referenceCounts,
                                              uint64_t* actualCounts, uint64_t counted[2]) {
  return sumAndCountImpl(reference, actual, n, grid, referenceCounts, actualCounts, counted);
}

QOPT_COMPARE_CLONES PairSums sumAndCountPairs(const double* reference, const double* actual,
                                              size_t n, const BinGrid& grid,
                                              uint64_t* referenceCounts, uint64_t* actualCounts,
                                              uint64_t counted[2]) {
  return sumAndCountImpl(reference, actual, n, grid, referenceCounts, actualCounts, counted);
}

}  // namespace qopt::analysis::detail
