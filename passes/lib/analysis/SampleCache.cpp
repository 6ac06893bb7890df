#include "qopt/analysis/SampleCache.h"

#include <algorithm>

#include <fmt/format.h>

#include "qopt/analysis/SampleStream.h"

namespace qopt::analysis {

namespace {

// One cache per path and reading of the inputs (names, types, dims fixed by --input-shapes).
std::string cacheKey(const std::filesystem::path& path, const std::vector<InputSpec>& inputs,
                     const std::string& preprocess) {
  std::string key = "data-set:" + path.string() + "|" + preprocess;
  for (const InputSpec& spec : inputs) {
    key += fmt::format("|{}:{}:", spec.name, static_cast<int>(spec.type));
    for (const std::optional<int64_t>& dim : spec.dims)
      key += dim ? fmt::format("{},", *dim) : "?,";
    if (!spec.rankKnown) key += "*";
  }
  return key;
}

}  // namespace

void SampleCache::forEach(const std::function<bool(Sample&)>& fn, size_t limit) {
  size_t given = 0;
  auto give = [&](const Sample& sample) {
    if (limit != 0 && given >= limit) return false;
    ++given;
    Sample copy = sample;
    return fn(copy);
  };
  for (size_t i = 0; i < decoded_.size(); ++i) {
    if (!give(decoded_[i])) return;
  }
  for (size_t entry = nextEntry_; entry < set_.entryCount(); ++entry) {
    if (limit != 0 && given >= limit) return;  // decode nothing that is not asked for
    std::vector<Sample> samples = set_.loadEntry(entry);
    if (!full_) {
      uint64_t bytes = 0;
      for (const Sample& sample : samples) bytes += sampleBytes(sample);
      if (bytes_ + bytes <= budget_) {
        bytes_ += bytes;
        nextEntry_ = entry + 1;
        decoded_.insert(decoded_.end(), samples.begin(), samples.end());
      } else {
        full_ = true;
      }
    }
    for (const Sample& sample : samples) {
      if (!give(sample)) return;
    }
  }
}

SampleCache& sampleCache(PassContext& context, const std::filesystem::path& path,
                         const std::vector<InputSpec>& inputs) {
  return context.analysis<SampleCache>(
      cacheKey(path, inputs, context.data.preprocess), PassContext::AnalysisScope::Data, [&] {
        return SampleCache(DataSet::open(path, inputs, context.data.preprocess),
                           std::min(kSampleCacheBytes, context.resources.maxMemoryBytes / 8));
      });
}

}  // namespace qopt::analysis
