// Tensor comparisons on a thread of their own, so that a model run goes on computing the next
// tensors while the last ones are compared (verify{layers=all} runs each model on one thread).
// Pairs are compared one at a time in the order they were queued, so every accumulator sees the
// same values in the same order as when comparing in line: the results are bitwise the same.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "qopt/analysis/Metrics.h"
#include "qopt/interp/Array.h"

namespace qopt::analysis {

class ComparisonQueue {
 public:
  /// `maxPendingBytes`: queued tensors may hold this much memory before push() waits (at least
  /// one pair is always taken). With `background` false (or one hardware thread) every pair is
  /// compared in push().
  explicit ComparisonQueue(size_t maxPendingBytes, bool background = true);
  ~ComparisonQueue();
  ComparisonQueue(const ComparisonQueue&) = delete;
  ComparisonQueue& operator=(const ComparisonQueue&) = delete;

  /// Queues into.add(reference, actual, label). The arrays are held (not copied) until then;
  /// `into` must outlive the comparison. Rethrows the error of an earlier comparison, if any.
  void push(ErrorAccumulator& into, interp::Array reference, interp::Array actual,
            std::string label);
  /// Returns when every queued pair is compared; rethrows the first comparison's error.
  void drain();

 private:
  struct Item {
    ErrorAccumulator* into;
    interp::Array reference;
    interp::Array actual;
    std::string label;
    size_t bytes;
  };
  void work();
  void rethrow();

  size_t maxPending_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> items_;
  size_t pendingBytes_ = 0;
  bool busy_ = false;  // the worker is comparing an item it took
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // not started: compare in push()
};

}  // namespace qopt::analysis
