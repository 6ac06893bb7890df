#include "LayerComparison.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/ComparisonQueue.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::verify {

namespace {

// Tensors waiting for their comparison: the run waits when they would hold more.
constexpr size_t kMaxPendingBytes = size_t{512} << 20;

// Keeps the current model's captured tensors of one sample.
class CurrentCapture : public interp::CaptureObserver {
 public:
  CurrentCapture(std::span<const TensorPair> pairs, const std::vector<char>& compared) {
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (compared[i]) wanted_.insert(pairs[i].actual);
    }
  }
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  // Every run of a value is kept: a Loop or Scan body computes its values once per iteration.
  void captured(const Value& value, const interp::Array& array) override {
    if (isFloatingPoint(array.dataType())) arrays_[&value].push_back(array);
  }
  /// The value's `run`-th computation in the sample (0 outside bodies), or null.
  const interp::Array* find(const Value* v, size_t run) const {
    auto it = arrays_.find(v);
    return it == arrays_.end() || run >= it->second.size() ? nullptr : &it->second[run];
  }
  void clear() { arrays_.clear(); }

 private:
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, std::vector<interp::Array>> arrays_;
};

// Queues each original tensor's comparison with the current one as soon as it is computed (on
// another thread while the run goes on), so only one model's intermediates are held at a time.
class ReferenceCapture : public interp::CaptureObserver {
 public:
  ReferenceCapture(std::span<const TensorPair> pairs, const std::vector<char>& compared,
                   const CurrentCapture& current, ModelErrors& errors, int histogramBins,
                   const RuleFor& ruleFor, analysis::ComparisonQueue& queue)
      : pairs_(pairs),
        current_(current),
        layers_(errors.layers),
        rules_(errors.pairRules),
        histogramBins_(histogramBins),
        ruleFor_(ruleFor),
        queue_(queue) {
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (!compared[i]) continue;
      wanted_.insert(pairs[i].reference);
      index_.emplace(pairs[i].reference, i);
    }
  }
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void nextSample() { runs_.clear(); }
  void captured(const Value& value, const interp::Array& array) override {
    if (!isFloatingPoint(array.dataType())) return;
    auto range = index_.equal_range(&value);
    const size_t run = runs_[&value]++;  // the iteration of a body this computation belongs to
    for (auto it = range.first; it != range.second; ++it) {
      const TensorPair& pair = pairs_[it->second];
      const interp::Array* actual = current_.find(pair.actual, run);
      if (actual == nullptr || actual->shape() != array.shape()) continue;
      if (pair.decides && !rules_[it->second]) {
        // Its first comparison: nothing of it is queued yet.
        rules_[it->second] = ruleFor_(*pair.reference, array.shape());
        layers_[it->second] =
            analysis::ErrorAccumulator(histogramBins_, rules_[it->second]->decisions);
      }
      queue_.push(layers_[it->second], array, pair.affine ? pair.affine->undo(*actual) : *actual,
                  fmt::format("tensor '{}'", pair.tensor));
    }
  }

 private:
  std::span<const TensorPair> pairs_;
  const CurrentCapture& current_;
  std::vector<analysis::ErrorAccumulator>& layers_;
  std::vector<std::optional<OutputRule>>& rules_;
  int histogramBins_;
  const RuleFor& ruleFor_;
  analysis::ComparisonQueue& queue_;
  std::unordered_set<const Value*> wanted_;
  std::unordered_multimap<const Value*, size_t> index_;
  std::unordered_map<const Value*, size_t> runs_;
};

// One worker's pair of interpreters.
struct ModelRuns {
  ModelRuns(const Graph& original, const Graph& current) : original(original), current(current) {}
  /// What one sample's runs take: the first model's outputs are held while the second runs.
  uint64_t lastPeakBytes() const { return original.lastPeakBytes() + current.lastPeakBytes(); }
  interp::Interpreter original;
  interp::Interpreter current;
};

using OutputPair = std::pair<std::vector<interp::Array>, std::vector<interp::Array>>;

}  // namespace

ModelErrors compareModels(analysis::SampleWorkers& workers, const Graph& original,
                          const Graph& current, std::span<const TensorPair> pairs,
                          analysis::SampleSource& source, int histogramBins, bool wholeLayers,
                          const RuleFor& ruleFor) {
  if (original.outputs().size() != current.outputs().size()) {
    throw Error(ErrorKind::Verification, current.model().sourcePath, {},
                fmt::format("the model has {} outputs now but had {} before the pipeline",
                            current.outputs().size(), original.outputs().size()));
  }
  ModelErrors errors;
  errors.outputs.assign(current.outputs().size(),
                        analysis::ErrorAccumulator(histogramBins, /*decisions=*/true));
  errors.outputRules.resize(current.outputs().size());
  errors.layers.assign(pairs.size(), analysis::ErrorAccumulator(histogramBins));
  errors.pairRules.resize(pairs.size());
  // The first worker's interpreters also tell which values are fused away.
  auto firstRuns = std::make_unique<ModelRuns>(original, current);
  std::vector<char> compared(pairs.size(), 1);
  errors.layerHeads.assign(pairs.size(), nullptr);
  if (wholeLayers) {
    std::unordered_set<const Value*> inner;
    std::unordered_map<const Value*, const Node*> heads;
    for (const interp::Interpreter* run : {&firstRuns->original, &firstRuns->current}) {
      for (const interp::FusedLayer& layer : run->fusedLayers()) {
        inner.insert(layer.inner.begin(), layer.inner.end());
        if (run == &firstRuns->current) heads[layer.output] = layer.head;
      }
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      compared[i] = !inner.count(pairs[i].reference) && !inner.count(pairs[i].actual);
      if (auto h = heads.find(pairs[i].actual); h != heads.end()) errors.layerHeads[i] = h->second;
    }
  }
  const bool anyCompared = std::find(compared.begin(), compared.end(), 1) != compared.end();
  CurrentCapture currentCapture(pairs, compared);
  // Outputs only: nothing to compare while the models run, no thread.
  analysis::ComparisonQueue queue(kMaxPendingBytes, anyCompared);
  ReferenceCapture referenceCapture(pairs, compared, currentCapture, errors, histogramBins, ruleFor,
                                    queue);
  // The captures and the queue take one sample at a time, in order: with paired tensors the
  // samples run on the calling thread.
  analysis::SampleWorkers serial(1, workers.memoryBytes());
  analysis::SampleWorkers& running = anyCompared ? serial : workers;

  auto job = [&](ModelRuns& runs, analysis::Sample& sample, size_t) -> OutputPair {
    std::vector<interp::Array> actual = analysis::runningSample(sample, [&] {
      return runs.current.run(analysis::feedFor(current, sample.inputs),
                              anyCompared ? &currentCapture : nullptr);
    });
    std::vector<interp::Array> reference = analysis::runningSample(sample, [&] {
      return runs.original.run(analysis::feedFor(original, sample.inputs),
                               anyCompared ? &referenceCapture : nullptr);
    });
    if (anyCompared) {
      currentCapture.clear();
      referenceCapture.nextSample();
    }
    return {std::move(reference), std::move(actual)};
  };
  // A fold's error stops the stream: the samples after it are not folded.
  auto fold = [&](OutputPair&& outputs, size_t index) {
    const auto& [reference, actual] = outputs;
    if (index == 0) {
      for (size_t o = 0; o < reference.size(); ++o) {
        errors.outputRules[o] = ruleFor(*original.outputs()[o], reference[o].shape());
        errors.outputs[o] =
            analysis::ErrorAccumulator(histogramBins, errors.outputRules[o].decisions);
      }
    }
    for (size_t o = 0; o < reference.size(); ++o) {
      const std::string label = fmt::format("output '{}'", current.outputs()[o]->name());
      if (!isFloatingPoint(reference[o].dataType()) || !isFloatingPoint(actual[o].dataType())) {
        if (reference[o].dataType() != actual[o].dataType()) {
          throw Error(ErrorKind::Verification, current.model().sourcePath, label,
                      fmt::format("is {} now but was {}", dataTypeName(actual[o].dataType()),
                                  dataTypeName(reference[o].dataType())));
        }
      }
      errors.outputs[o].add(reference[o], actual[o], label);
    }
  };
  errors.samples = analysis::streamSamples<ModelRuns>(
      running, source, "verify: comparing",
      [&] {
        return firstRuns ? std::move(firstRuns) : std::make_unique<ModelRuns>(original, current);
      },
      job, fold);
  queue.drain();
  return errors;
}

}  // namespace qopt::verify
