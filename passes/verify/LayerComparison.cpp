#include "LayerComparison.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

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

}  // namespace

ModelErrors compareModels(const Graph& original, const Graph& current,
                          std::span<const TensorPair> pairs,
                          std::span<const analysis::Sample> samples, int histogramBins,
                          bool wholeLayers, const RuleFor& ruleFor) {
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
  interp::Interpreter originalRun(original);
  interp::Interpreter currentRun(current);
  std::vector<char> compared(pairs.size(), 1);
  errors.layerHeads.assign(pairs.size(), nullptr);
  if (wholeLayers) {
    std::unordered_set<const Value*> inner;
    std::unordered_map<const Value*, const Node*> heads;
    for (const interp::Interpreter* run : {&originalRun, &currentRun}) {
      for (const interp::FusedLayer& layer : run->fusedLayers()) {
        inner.insert(layer.inner.begin(), layer.inner.end());
        if (run == &currentRun) heads[layer.output] = layer.head;
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
  bool first = true;
  for (const analysis::Sample& sample : samples) {
    std::vector<interp::Array> actual = analysis::runningSample(sample, [&] {
      return currentRun.run(analysis::feedFor(current, sample.inputs),
                            anyCompared ? &currentCapture : nullptr);
    });
    std::vector<interp::Array> reference = analysis::runningSample(sample, [&] {
      return originalRun.run(analysis::feedFor(original, sample.inputs),
                             anyCompared ? &referenceCapture : nullptr);
    });
    currentCapture.clear();
    referenceCapture.nextSample();
    if (first) {
      for (size_t o = 0; o < reference.size(); ++o) {
        errors.outputRules[o] = ruleFor(*original.outputs()[o], reference[o].shape());
        errors.outputs[o] =
            analysis::ErrorAccumulator(histogramBins, errors.outputRules[o].decisions);
      }
      first = false;
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
  }
  queue.drain();
  return errors;
}

}  // namespace qopt::verify
