// Runs one job per sample on several threads, each thread with its own state (an interpreter:
// one run at a time per interpreter). Results go to the sample's own slot, so they do not depend
// on the thread count or on which thread ran what; an error from any sample is rethrown, the one
// of the lowest sample index first, after every thread has stopped.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace qopt::analysis {

/// Threads for `jobs` independent sample runs: the machine's hardware threads, at most `jobs`.
inline size_t sampleThreads(size_t jobs) {
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min(hardware, jobs));
}

/// Calls run(state, index) for index in [0, count); makeState() builds one state per thread on
/// the calling thread (so that preparing fails before any thread starts).
template <class State>
void forEachSample(size_t count, const std::function<std::unique_ptr<State>()>& makeState,
                   const std::function<void(State&, size_t)>& run) {
  const size_t threads = sampleThreads(count);
  std::vector<std::unique_ptr<State>> states;
  for (size_t t = 0; t < threads; ++t) states.push_back(makeState());
  if (threads == 1) {
    for (size_t i = 0; i < count; ++i) run(*states[0], i);
    return;
  }
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (size_t i = next++; i < count; i = next++) {
        try {
          run(*states[t], i);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace qopt::analysis
