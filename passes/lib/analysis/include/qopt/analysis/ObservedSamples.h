// Runs a graph on every sample (several threads, one interpreter each) with an observer per
// sample, and keeps what each sample's observer summed: how the probes that measure layers on
// calibration data (local sensitivity, bias correction, calibrator=auto) all run.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/ParallelSamples.h"
#include "qopt/interp/Interpreter.h"

namespace qopt::analysis {

/// The `sums` member of makeObserver()'s observer after each sample ran, in sample order (so
/// the result does not depend on threads); `doing` names the run in a sample's error.
template <class MakeObserver>
auto observeEachSample(const Graph& graph, std::span<const Sample> samples,
                       MakeObserver makeObserver, std::string_view doing = "running sample") {
  using Observer = decltype(makeObserver());
  std::vector<decltype(std::declval<Observer&>().sums)> perSample(samples.size());
  forEachSample<interp::Interpreter>(
      samples.size(), [&] { return std::make_unique<interp::Interpreter>(graph); },
      [&](interp::Interpreter& interpreter, size_t i) {
        Observer observer = makeObserver();
        runningSample(
            samples[i],
            [&] { return interpreter.run(feedFor(graph, samples[i].inputs), &observer); }, doing);
        perSample[i] = std::move(observer.sums);
      });
  return perSample;
}

}  // namespace qopt::analysis
