#include "qopt/analysis/SampleStream.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "qopt/analysis/Progress.h"
#include "qopt/analysis/SampleCache.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/Cancellation.h"

namespace qopt::analysis {

SampleSource::SampleSource(SampleCache& cache, size_t limit, std::string origin)
    : cache_(&cache), limit_(limit), origin_(std::move(origin)) {}

SampleSource::SampleSource(std::vector<Sample> generated, std::string origin)
    : generated_(std::move(generated)), origin_(std::move(origin)) {}

SampleSource::SampleSource(Feed feed, std::string origin)
    : feed_(std::move(feed)), origin_(std::move(origin)) {}

void SampleSource::forEach(const std::function<bool(Sample&)>& each) {
  // Every pass over samples goes through here: a cancelled run stops before the next sample.
  const std::function<bool(Sample&)> visit = [&](Sample& sample) {
    pollCancellation();
    return each(sample);
  };
  if (cache_ != nullptr) {
    cache_->forEach(visit, limit_);
    return;
  }
  if (feed_) {
    feed_(visit);
    return;
  }
  for (const Sample& sample : generated_) {
    Sample copy = sample;  // shares the arrays
    if (!visit(copy)) return;
  }
}

std::optional<size_t> SampleSource::expectedCount() const {
  if (feed_) return std::nullopt;
  if (cache_ == nullptr) return generated_.size();
  std::optional<size_t> count = cache_->dataSet().sampleCount();
  if (count && limit_ != 0) count = std::min(*count, limit_);
  return count;
}

SampleSource sampleSource(const Graph& graph, PassContext& context, bool preferEval, size_t limit,
                          size_t randomCount) {
  std::vector<InputSpec> specs = inputSpecs(graph, context.data);
  const std::string& eval = context.data.evalData;
  const std::string& calib = context.data.calibData;
  if (!eval.empty() && (preferEval || calib.empty())) {
    return SampleSource(sampleCache(context, eval, specs), limit, "eval:" + eval);
  }
  if (!calib.empty()) {
    return SampleSource(sampleCache(context, calib, specs), limit, "calib:" + calib);
  }
  std::vector<std::string> warnings;
  const size_t count = limit != 0 ? std::min(limit, randomCount) : randomCount;
  std::vector<Sample> samples = randomSamples(specs, count, context.seed, &warnings);
  for (const std::string& w : warnings) context.diagnostics().warning(w);
  return SampleSource(std::move(samples), "random");
}

uint64_t sampleBytes(const Sample& sample) {
  uint64_t bytes = 0;
  for (const auto& [name, array] : sample.inputs) bytes += array.valid() ? array.byteSize() : 0;
  return bytes;
}

// Worker threads that take (sample, index) tasks of the current stream. One stream at a time:
// passes run one after another, and a stream's calling thread only reads and folds.
struct SampleWorkers::Pool {
  struct Task {
    Sample sample;
    size_t index = 0;
  };

  explicit Pool(size_t threads) {
    for (size_t t = 0; t < threads; ++t) workers.emplace_back([this, t] { loop(t); });
  }
  ~Pool() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    for (std::thread& worker : workers) worker.join();
  }

  void loop(size_t worker) {
    std::unique_lock lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || (!tasks.empty() && worker < allowed); });
      if (stopping) return;
      Task task = std::move(tasks.front());
      tasks.pop_front();
      ++running;
      lock.unlock();
      std::exception_ptr error;
      try {
        current->run(worker, task.sample, task.index);
      } catch (...) {
        error = std::current_exception();
      }
      task.sample = Sample();  // the inputs go before the next task is taken
      lock.lock();
      finished.push_back({task.index, error});
      --running;
      progress.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable wake;      // a task is waiting, or stop
  std::condition_variable progress;  // a task finished
  std::deque<Task> tasks;
  std::vector<std::pair<size_t, std::exception_ptr>> finished;
  Stream* current = nullptr;
  size_t allowed = 0;  // workers [0, allowed) take tasks (those with states)
  size_t running = 0;  // tasks taken and not finished
  bool stopping = false;
  std::vector<std::thread> workers;
};

SampleWorkers::SampleWorkers(size_t threads, uint64_t memoryBytes)
    : threads_(std::max<size_t>(1, threads)), memoryBytes_(memoryBytes) {
  if (threads_ > 1) pool_ = std::make_unique<Pool>(threads_);
}

SampleWorkers::~SampleWorkers() = default;
SampleWorkers::SampleWorkers(SampleWorkers&&) noexcept = default;
SampleWorkers& SampleWorkers::operator=(SampleWorkers&&) noexcept = default;

namespace {

// Tracks which samples finished and hands them to `done` in order.
class InOrder {
 public:
  explicit InOrder(const std::function<void(size_t)>& done) : done_(done) {}
  void finished(size_t index, std::exception_ptr error) {
    if (error && (!error_ || index < errorIndex_)) {
      error_ = error;
      errorIndex_ = index;
    }
    ready_.push_back(index);
  }
  /// Folds the finished samples that come next in order (none after an error).
  void fold() {
    std::sort(ready_.begin(), ready_.end());
    size_t used = 0;
    while (used < ready_.size() && ready_[used] == next_ && !error_) {
      try {
        done_(next_);
      } catch (...) {  // a fold that fails is that sample's error; nothing after it is folded
        error_ = std::current_exception();
        errorIndex_ = next_;
      }
      ++next_;
      ++used;
    }
    ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(used));
  }
  size_t folded() const { return next_; }
  bool failed() const { return error_ != nullptr; }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  const std::function<void(size_t)>& done_;
  std::vector<size_t> ready_;
  size_t next_ = 0;
  std::exception_ptr error_;
  size_t errorIndex_ = 0;
};

}  // namespace

size_t SampleWorkers::stream(SampleSource& source, Stream& stream) {
  const size_t workers = stream.workers == 0 ? threads_ : std::min(threads_, stream.workers);
  const std::optional<size_t> expected = source.expectedCount();
  ProgressFn bar = stream.quiet ? ProgressFn() : terminalProgress(stream.doing);
  InOrder order(stream.done);
  size_t posted = 0;
  // Samples allowed in flight (posted, not yet folded): 1 until the first one has run.
  size_t window = 1;
  auto sizeWindow = [&](const Sample& first) {
    const uint64_t input = sampleBytes(first);
    const uint64_t run = stream.runBytes ? stream.runBytes() : 0;
    if (input + run > memoryBytes_) {
      throw Error(ErrorKind::Input, {}, stream.doing,
                  fmt::format("one sample does not fit the memory budget: its inputs take {} "
                              "and a run of the model on it {}, more than --max-memory={}",
                              formatBytes(input), formatBytes(run), formatBytes(memoryBytes_)));
    }
    // Each running worker holds a run and its sample; the rest of the window only samples.
    size_t fit = workers;
    while (fit > 1 && fit * (input + run) > memoryBytes_) --fit;
    window = fit;
    if (fit == workers) {
      const uint64_t left = memoryBytes_ - fit * (input + run);
      const uint64_t extra = std::min<uint64_t>(left / std::max<uint64_t>(input, 1), workers);
      window = fit + static_cast<size_t>(extra);
    }
  };

  if (pool_ == nullptr || workers == 1) {
    source.forEach([&](Sample& sample) {
      const size_t index = posted++;
      std::exception_ptr error;
      try {
        stream.run(0, sample, index);
      } catch (...) {
        error = std::current_exception();
      }
      if (index == 0 && !error) sizeWindow(sample);
      order.finished(index, error);
      order.fold();
      if (bar) bar(order.folded(), expected.value_or(0));
      return !order.failed();
    });
    order.rethrow();
    if (bar) bar(order.folded(), order.folded());
    return order.folded();
  }

  Pool& pool = *pool_;
  {
    std::lock_guard lock(pool.mutex);
    pool.current = &stream;
    pool.allowed = workers;
    pool.finished.clear();
  }
  // Moves finished tasks into `order` and folds what comes next; waits first when `wait`.
  auto collect = [&](bool wait) {
    std::vector<std::pair<size_t, std::exception_ptr>> finished;
    {
      std::unique_lock lock(pool.mutex);
      if (wait) {
        pool.progress.wait(lock, [&] {
          return !pool.finished.empty() || (pool.tasks.empty() && pool.running == 0);
        });
      }
      finished.swap(pool.finished);
    }
    for (auto& [index, error] : finished) order.finished(index, error);
    order.fold();
    if (bar) bar(order.folded(), expected.value_or(0));
  };
  std::exception_ptr readError;
  try {
    source.forEach([&](Sample& sample) {
      if (posted == 1) {  // the first sample has to finish before the window is set
        while (!order.failed() && order.folded() < 1) collect(true);
        if (!order.failed()) sizeWindow(sample);
      }
      while (!order.failed() && posted - order.folded() >= window) collect(true);
      if (order.failed()) return false;
      {
        std::lock_guard lock(pool.mutex);
        pool.tasks.push_back({std::move(sample), posted++});
      }
      pool.wake.notify_one();
      collect(false);
      return !order.failed();
    });
  } catch (...) {
    readError = std::current_exception();
  }
  // Every task taken finishes before the stream's state goes away; after a failure the waiting
  // ones are dropped.
  while (true) {
    {
      std::lock_guard lock(pool.mutex);
      if (readError || order.failed()) pool.tasks.clear();
      if (pool.tasks.empty() && pool.running == 0 && pool.finished.empty()) break;
    }
    collect(true);
  }
  {
    std::lock_guard lock(pool.mutex);
    pool.current = nullptr;
    pool.allowed = 0;
  }
  if (readError) std::rethrow_exception(readError);
  order.rethrow();
  if (bar) bar(order.folded(), order.folded());
  return order.folded();
}

SampleWorkers& sampleWorkers(PassContext& context) {
  return context.analysis<SampleWorkers>("sample-workers", PassContext::AnalysisScope::Data, [&] {
    return SampleWorkers(context.resources.threadCount(), context.resources.maxMemoryBytes / 2);
  });
}

}  // namespace qopt::analysis
