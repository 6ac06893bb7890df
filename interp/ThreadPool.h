// A small fixed-size thread pool for data-parallel kernels. The calling thread takes part in
// every parallelFor, so a pool of N threads starts N - 1 workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qopt::interp {

class ThreadPool {
 public:
  /// `threads`: total threads including the caller (0 = hardware concurrency).
  explicit ThreadPool(int threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(begin, end) on disjoint ranges covering [0, n), each at least `grain` long (except
  /// the last), and returns when all are done. The first exception thrown by fn is rethrown.
  /// Called from inside a pool task, it runs inline (no nested parallelism, no deadlock).
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Job {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t n = 0;
    int64_t chunk = 1;
    std::atomic<int64_t> next{0};
    std::atomic<int> pending{0};  // workers still inside this job
    std::exception_ptr error;
    std::mutex errorMutex;
  };
  void workerLoop();
  static void runChunks(Job& job);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, readable without the mutex
  bool stopping_ = false;
  std::mutex callMutex_;  // one parallelFor at a time per pool
};

/// Runs on `pool` when there is one with more than one thread and the work is worth splitting;
/// otherwise calls fn(0, n) on the calling thread.
inline void parallelFor(ThreadPool* pool, int64_t n, int64_t grain,
                        const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (pool == nullptr || pool->size() <= 1 || n <= grain) {
    fn(0, n);
    return;
  }
  pool->parallelFor(n, grain, fn);
}

}  // namespace qopt::interp
