// A one-line progress bar on stderr, only when a person is watching it.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "qopt/analysis/Progress.h"

namespace qopt::analysis {

namespace {

using Clock = std::chrono::steady_clock;

struct ProgressState {
  std::string label;
  Clock::time_point start = Clock::now();
  Clock::time_point lastDraw{};
  bool drawn = false;
};

std::string progressLine(const ProgressState& state, size_t done, size_t total) {
  const double seconds = std::chrono::duration<double>(Clock::now() - state.start).count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  std::string line = total > 0 ? fmt::format("{}: {}/{} samples", state.label, done, total)
                               : fmt::format("{}: {} samples", state.label, done);
  if (rate > 0) line += fmt::format(", {:.1f}/s", rate);
  if (total > done && rate > 0) {
    line += fmt::format(", {:.0f} s left", static_cast<double>(total - done) / rate);
  }
  return line;
}

}  // namespace

ProgressFn terminalProgress(std::string label) {
  if (!isatty(STDERR_FILENO)) return {};
  auto state = std::make_shared<ProgressState>();
  state->label = std::move(label);
  return [state](size_t done, size_t total) {
    const bool finished = total > 0 && done >= total;
    const Clock::time_point now = Clock::now();
    // Redraw at most ten times a second: a fast model must not spend its time on the terminal.
    if (!finished && state->drawn && now - state->lastDraw < std::chrono::milliseconds(100)) {
      return;
    }
    state->lastDraw = now;
    state->drawn = true;
    std::string line = "\r" + progressLine(*state, done, total) + "\x1b[K";
    if (finished) line += '\n';
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  };
}

}  // namespace qopt::analysis
