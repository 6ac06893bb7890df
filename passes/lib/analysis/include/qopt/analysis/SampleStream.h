// Work over samples at the scale of a real calibration set: a pass reads its samples as a stream
// (SampleSource: read, used, dropped), runs them on the run's shared worker threads
// (SampleWorkers, --threads) with a bounded number in flight, and folds each sample's result
// in sample order on the calling thread (streamSamples). What a pass keeps is then what its fold
// keeps (running sums, histograms, Gram matrices), never the samples; and since the fold order
// is the data order, results are the same bits whatever the thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"

namespace qopt::analysis {

class SampleCache;

/// The samples one pass reads, in data order: the run's data set through its shared cache (read
/// as they are asked for; past the cache's bound a sample lives only while it is used), or
/// samples generated from the seed when no data is given (few, and held).
class SampleSource {
 public:
  /// At most `limit` samples (0: all) of `cache`'s data set; `origin`: "calib:<path>" or
  /// "eval:<path>".
  SampleSource(SampleCache& cache, size_t limit, std::string origin);
  /// Samples already in memory (generated ones, or the few a pass keeps), shared, not copied.
  SampleSource(std::vector<Sample> held, std::string origin);
  using Feed = std::function<void(const std::function<bool(Sample&)>& visit)>;
  /// Samples that `feed` hands over one at a time, until `visit` returns false.
  SampleSource(Feed feed, std::string origin);

  /// Calls `visit` on each sample in order until it returns false. A sample's arrays are shared
  /// with the cache: visitors never write into them.
  void forEach(const std::function<bool(Sample&)>& visit);
  /// The number of samples when it is known before reading them (a folder of one file per
  /// sample, generated samples), for progress and time estimates.
  std::optional<size_t> expectedCount() const;
  /// "calib:<path>", "eval:<path>" or "random".
  const std::string& origin() const { return origin_; }
  bool isRandom() const { return origin_ == "random"; }

 private:
  SampleCache* cache_ = nullptr;
  Feed feed_;
  size_t limit_ = 0;
  std::vector<Sample> generated_;
  std::string origin_;
};

/// The samples a pass should use: --eval-data when `preferEval` and given, else --calib-data,
/// else `randomCount` random samples (their open-dim warnings go to `context`). `limit` caps the
/// number read (0: all).
SampleSource sampleSource(const Graph& graph, PassContext& context, bool preferEval, size_t limit,
                          size_t randomCount);

/// The run's threads for work over samples: a fixed set of workers started once per run (the
/// pass context keeps them) that every data pass shares, and the memory its work may take.
class SampleWorkers {
 public:
  /// `threads` workers (1: everything runs on the calling thread) and `memoryBytes` for the
  /// samples in flight and their runs.
  SampleWorkers(size_t threads, uint64_t memoryBytes);
  ~SampleWorkers();
  SampleWorkers(SampleWorkers&&) noexcept;
  SampleWorkers& operator=(SampleWorkers&&) noexcept;

  size_t threads() const { return threads_; }
  uint64_t memoryBytes() const { return memoryBytes_; }

  /// What one stream does (the type-erased core of streamSamples).
  struct Stream {
    /// Runs sample `index` on worker `worker` (in [0, workers)); may be called on any thread.
    std::function<void(size_t worker, Sample& sample, size_t index)> run;
    /// Called on the calling thread for each sample in order, after its run finished.
    std::function<void(size_t index)> done;
    /// Bytes one run takes besides its sample (measured after the first sample; 0: unknown).
    std::function<uint64_t()> runBytes;
    /// Workers to use at most (their states exist): 0 for all.
    size_t workers = 0;
    /// What the stream does, for the progress line and errors ("bias-correct: measuring").
    std::string doing;
    /// No progress line (the caller draws its own).
    bool quiet = false;
  };
  /// Streams `source` through `stream`; returns the number of samples. The first sample runs
  /// alone: from the memory its run took, the samples allowed in flight are set so that they fit
  /// memoryBytes(). Throws qopt::Error naming `stream.doing` when one sample alone does not fit,
  /// and rethrows the error of the earliest failing sample after every worker stopped.
  size_t stream(SampleSource& source, Stream& stream);

 private:
  struct Pool;
  size_t threads_;
  uint64_t memoryBytes_;
  std::unique_ptr<Pool> pool_;
};

/// The run's workers (made on first use from context.resources).
SampleWorkers& sampleWorkers(PassContext& context);

/// Bytes of a sample's arrays.
uint64_t sampleBytes(const Sample& sample);

/// Runs job(*states[worker], sample, index) -> R for every sample of `source` on the run's
/// workers and fold(R&&, index) on the calling thread in sample order. `states` holds one state
/// per worker (at least one; workers past its size stay idle). Returns the number of samples.
/// `showProgress` false leaves the progress line to the caller.
/// When a State has lastPeakBytes() (an interpreter), its first run sizes the window.
template <class State, class Job, class Fold>
size_t streamSamples(SampleWorkers& workers, SampleSource& source, std::string doing,
                     std::vector<std::unique_ptr<State>>& states, Job job, Fold fold,
                     bool showProgress = true) {
  using Result = std::invoke_result_t<Job&, State&, Sample&, size_t>;
  // Results wait in slots until folded; the window (<= 2 per worker, see stream()) bounds them.
  std::vector<std::optional<Result>> slots(2 * workers.threads() + 1);
  SampleWorkers::Stream stream;
  stream.doing = std::move(doing);
  stream.workers = states.size();
  stream.quiet = !showProgress;
  stream.run = [&](size_t worker, Sample& sample, size_t index) {
    slots[index % slots.size()].emplace(job(*states[worker], sample, index));
  };
  stream.done = [&](size_t index) {
    std::optional<Result>& slot = slots[index % slots.size()];
    fold(std::move(*slot), index);
    slot.reset();
  };
  if constexpr (requires(State & s) { s.lastPeakBytes(); }) {
    stream.runBytes = [&] {
      uint64_t most = 0;
      for (const auto& state : states) most = std::max<uint64_t>(most, state->lastPeakBytes());
      return most;
    };
  }
  return workers.stream(source, stream);
}

/// The same with one state per worker made by makeState() on the calling thread before any
/// sample runs (so that preparing fails first).
template <class State, class MakeState, class Job, class Fold>
size_t streamSamples(SampleWorkers& workers, SampleSource& source, std::string doing,
                     MakeState makeState, Job job, Fold fold) {
  std::vector<std::unique_ptr<State>> states;
  for (size_t t = 0; t < workers.threads(); ++t) states.push_back(makeState());
  return streamSamples<State>(workers, source, std::move(doing), states, std::move(job),
                              std::move(fold));
}

}  // namespace qopt::analysis
