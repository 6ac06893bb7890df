// Stopping a run from outside it: Ctrl-C in the Python module, where SIGINT must not end the
// process. Whoever runs a pipeline on a thread may hand that thread a flag (CancellationScope);
// the pass manager polls it before each pass and the sample loops before each sample, and throw
// once it is set. The flag belongs to the thread, not the process, so that runs on other threads
// go on. The command sets none: its SIGINT ends the process.
#pragma once

#include <atomic>

namespace qopt {

/// While alive, pollCancellation() on the calling thread reads `flag` (set from any thread).
/// Scopes nest; the innermost one counts.
class CancellationScope {
 public:
  explicit CancellationScope(const std::atomic<bool>& flag);
  ~CancellationScope();
  CancellationScope(const CancellationScope&) = delete;
  CancellationScope& operator=(const CancellationScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

/// Throws qopt::Error (Internal, "the run was interrupted") when the calling thread's flag is
/// set; does nothing outside a CancellationScope. Whoever set the flag knows why the run ended
/// and reports that instead (the Python module raises KeyboardInterrupt).
void pollCancellation();

}  // namespace qopt
