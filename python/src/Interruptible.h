// Long calls into C++ that Ctrl-C stops. Python runs its signal handlers (SIGINT's raises
// KeyboardInterrupt) only on the main thread and only between bytecodes, so a call that keeps
// the main thread in C++ for minutes would take Ctrl-C only once it is done. Here the C++ work
// runs on a thread of its own while the calling thread, without the GIL, waits for it and every
// 100 ms runs Python's signal handlers; when one raises, the work's CancellationScope flag is
// set, the pass manager and the sample loops stop at their next poll, and the call raises what
// the handler raised. A handler that does not raise lets the work go on.
#pragma once

#include <pybind11/pybind11.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "qopt/pass/Cancellation.h"

namespace qopt::python {

namespace detail {

// Blocks SIGINT on the calling thread while alive. A thread started meanwhile keeps it blocked,
// and so do the threads it starts: the kernel then delivers SIGINT to the waiting thread, and no
// system call of the work fails with EINTR because of it.
class SigintBlocked {
 public:
  SigintBlocked() {
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    pthread_sigmask(SIG_BLOCK, &blocked, &previous_);
  }
  ~SigintBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SigintBlocked(const SigintBlocked&) = delete;
  SigintBlocked& operator=(const SigintBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace detail

/// Runs `work()`, which must not touch Python objects, as described above; returns its result
/// or rethrows its exception. Called with the GIL held.
template <typename Work>
std::invoke_result_t<Work&> runInterruptibly(Work&& work) {
  using Result = std::invoke_result_t<Work&>;
  std::atomic<bool> cancel{false};
  std::optional<Result> result;
  std::exception_ptr error;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  bool interrupted = false;
  {
    pybind11::gil_scoped_release release;
    std::thread worker;
    {
      detail::SigintBlocked blocked;  // inherited by the thread
      worker = std::thread([&] {
        CancellationScope scope(cancel);
        try {
          result.emplace(work());
        } catch (...) {
          error = std::current_exception();
        }
        std::lock_guard lock(mutex);
        done = true;
        finished.notify_one();
      });
    }
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; })) {
      if (interrupted) continue;
      lock.unlock();
      {
        pybind11::gil_scoped_acquire acquire;
        // Leaves the handler's exception set, to be raised once the work has stopped.
        if (PyErr_CheckSignals() != 0) interrupted = true;
      }
      if (interrupted) cancel = true;
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (interrupted) throw pybind11::error_already_set();
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

}  // namespace qopt::python
