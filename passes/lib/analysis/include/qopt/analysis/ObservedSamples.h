// Runs a graph on every sample of a stream (the run's workers, one interpreter each) with an
// observer per sample, and folds what each sample's observer summed in sample order: how the
// probes that measure layers on calibration data (local sensitivity, bias correction,
// calibrator=auto) all run. Nothing per sample outlives its fold.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/interp/Interpreter.h"

namespace qopt::analysis {

/// fold(sums) with the `sums` member of makeObserver()'s observer after each sample ran, in
/// sample order (so the result does not depend on threads); `doing` names the run in a sample's
/// error and on the progress line. Returns the number of samples.
template <class MakeObserver, class Fold>
size_t observeSamples(SampleWorkers& workers, const Graph& graph, SampleSource& source,
                      MakeObserver makeObserver, Fold fold, std::string doing = "running sample") {
  using Observer = decltype(makeObserver());
  return streamSamples<interp::Interpreter>(
      workers, source, doing, [&] { return std::make_unique<interp::Interpreter>(graph); },
      [&](interp::Interpreter& interpreter, Sample& sample, size_t) {
        Observer observer = makeObserver();
        runningSample(
            sample, [&] { return interpreter.run(feedFor(graph, sample.inputs), &observer); },
            doing);
        return std::move(observer.sums);
      },
      [&](auto&& sums, size_t) { fold(std::move(sums)); });
}

/// The same over samples a pass holds.
template <class MakeObserver, class Fold>
size_t observeSamples(SampleWorkers& workers, const Graph& graph, std::span<const Sample> samples,
                      MakeObserver makeObserver, Fold fold, std::string doing = "running sample") {
  SampleSource source(std::vector<Sample>(samples.begin(), samples.end()), "held");
  return observeSamples(workers, graph, source, std::move(makeObserver), std::move(fold),
                        std::move(doing));
}

}  // namespace qopt::analysis
