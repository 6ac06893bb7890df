// The loops every layer comparison runs over whole tensors (verify{layers=all}, sensitivity):
// the error sums of a reference/actual pair with the range of their finite values in one pass,
// and the histogram bin of every value, apart or in the same pass. Built for the x86-64 baseline,
// AVX2 and AVX-512 (the loader picks one), and exact whatever the build: the sums are kept in four
// fixed lanes (value i goes to lane i % 4, the lanes are added in one order at the end), the bins
// are computed in double as PairedHistogram defines them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qopt::analysis::detail {

struct PairSums {
  uint64_t count = 0;      // pairs where both values are finite
  uint64_t nonFinite = 0;  // pairs where they are not, and not the same non-finite value
  double maxAbs = 0;
  double sumAbs = 0;
  double sumSquaredError = 0;
  double sumReferenceSquared = 0;
  double sumActualSquared = 0;
  double sumProduct = 0;
  double low = 0;  // the range of every finite value of either side; low > high: none
  double high = 0;
};

PairSums sumPairs(const float* reference, const float* actual, size_t n);
PairSums sumPairs(const double* reference, const double* actual, size_t n);

/// Equal-width bins: a finite value v falls in floor((v - low) * inverseWidth) clamped to
/// [0, bins - 1].
struct BinGrid {
  double low = 0;
  double inverseWidth = 1;
  size_t bins = 0;
};

/// Adds each finite value's bin to `counts` (grid.bins entries); returns how many values were
/// counted.
uint64_t countBins(const float* values, size_t n, const BinGrid& grid, uint64_t* counts);
uint64_t countBins(const double* values, size_t n, const BinGrid& grid, uint64_t* counts);

/// sumPairs and countBins of both sides in one pass over the pairs (the same sums and counts):
/// reference values counted into referenceCounts, actual ones into actualCounts, how many of
/// each into counted[0] and counted[1].
PairSums sumAndCountPairs(const float* reference, const float* actual, size_t n,
                          const BinGrid& grid, uint64_t* referenceCounts, uint64_t* actualCounts,
                          uint64_t counted[2]);
PairSums sumAndCountPairs(const double* reference, const double* actual, size_t n,
                          const BinGrid& grid, uint64_t* referenceCounts, uint64_t* actualCounts,
                          uint64_t counted[2]);

}  // namespace qopt::analysis::detail
