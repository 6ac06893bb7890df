// The samples of one data path, read and decoded once per run and shared by every pass through
// the pass context (an analysis of the run's data): equalize, insert-qdq's calibration and
// weight rounding, mixed-precision, bias-correct and verify all read --calib-data, and each used
// to open and decode it again.
//
// Decoded samples are kept up to kSampleCacheBytes (or an eighth of --max-memory when that is
// less); the samples past that are read from disk each time they are asked for, so a
// calibration set of any size streams. Decoding a sample costs far less than running the model
// on it: the cache saves little beyond the first samples, which every pass reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/pass/PassContext.h"

namespace qopt::analysis {

/// Bytes of decoded samples a run keeps (the rest is read again where a pass asks for it).
inline constexpr uint64_t kSampleCacheBytes = uint64_t{64} << 20;

class SampleCache {
 public:
  /// Keeps decoded samples up to `budgetBytes` (whole entries of the data set, in order).
  explicit SampleCache(DataSet set, uint64_t budgetBytes = kSampleCacheBytes)
      : set_(std::move(set)), budget_(budgetBytes) {}

  /// As DataSet::forEach: `fn` gets each sample in data order (a copy sharing the decoded arrays:
  /// callers never write into them) until it returns false or `limit` samples (0: all) were given.
  void forEach(const std::function<bool(Sample&)>& fn, size_t limit = 0);

  const DataSet& dataSet() const { return set_; }

 private:
  DataSet set_;
  uint64_t budget_;
  std::vector<Sample> decoded_;  // the samples of entries [0, nextEntry_)
  size_t nextEntry_ = 0;
  uint64_t bytes_ = 0;
  bool full_ = false;  // the budget is reached: later entries are not kept
};

/// The shared cache of the data set at `path` read as `inputs` (opened on first use, which throws
/// as DataSet::open does).
SampleCache& sampleCache(PassContext& context, const std::filesystem::path& path,
                         const std::vector<InputSpec>& inputs);

}  // namespace qopt::analysis
