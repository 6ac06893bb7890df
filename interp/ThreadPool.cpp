#include "ThreadPool.h"

#include <algorithm>
#include <chrono>

namespace qopt::interp {

namespace {

thread_local bool insidePoolTask = false;

// A network's ops come microseconds apart, and waking a thread through the condition variable
// takes about as long as a small op: workers and the caller spin up to this long on the atomic
// state before they sleep. Spinning only delays the locked checks, which stay the source of truth.
constexpr auto kSpinTime = std::chrono::microseconds(50);

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until `done()` holds or kSpinTime has passed (the clock is read every 64 turns).
template <class F>
void spinUntil(F done) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; !done(); ++i) {
    relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kSpinTime) return;
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::runChunks(Job& job) {
  bool wasInside = insidePoolTask;
  insidePoolTask = true;
  for (;;) {
    int64_t begin = job.next.fetch_add(job.chunk);
    if (begin >= job.n) break;
    int64_t end = std::min(job.n, begin + job.chunk);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard lock(job.errorMutex);
      if (!job.error) job.error = std::current_exception();
      job.next.store(job.n);  // stop handing out work
    }
  }
  insidePoolTask = wasInside;
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    spinUntil([&] { return published_.load(std::memory_order_acquire) != seen; });
    Job* job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      if (job == nullptr) continue;
      job->pending.fetch_add(1);
    }
    runChunks(*job);
    {
      std::lock_guard lock(mutex_);
      job->pending.fetch_sub(1);
    }
    done_.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (insidePoolTask || workers_.empty()) {
    fn(0, n);
    return;
  }
  std::lock_guard call(callMutex_);
  Job job;
  job.fn = &fn;
  job.n = n;
  // Several chunks per thread balance uneven work; never below the grain.
  int64_t chunks = static_cast<int64_t>(size()) * 4;
  job.chunk = std::max<int64_t>(std::max<int64_t>(grain, 1), (n + chunks - 1) / chunks);
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    ++generation_;
    published_.store(generation_, std::memory_order_release);
  }
  wake_.notify_all();
  runChunks(job);
  {
    std::lock_guard lock(mutex_);
    job_ = nullptr;  // late workers see no job: from here `pending` only goes down
  }
  spinUntil([&] { return job.pending.load(std::memory_order_acquire) == 0; });
  {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return job.pending.load() == 0; });
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace qopt::interp
