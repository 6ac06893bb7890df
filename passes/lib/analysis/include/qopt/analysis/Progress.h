// Progress of work over samples, for a person watching the terminal.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace qopt::analysis {

/// Called with the samples done and the total (0: not known).
using ProgressFn = std::function<void(size_t done, size_t total)>;

/// A progress bar on stderr ("calibrating: 37/96 samples, 12.3/s, 4 s left") that redraws in
/// place when stderr is a terminal; without a terminal it is empty (callers test it).
ProgressFn terminalProgress(std::string label);

}  // namespace qopt::analysis
