// Activation statistics over a data set: one interpreter run per sample, the wanted tensors
// folded into their statistics as they are computed and released with the sample.
#include <algorithm>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/analysis/Comparison.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/Suggest.h"
#include "qopt/quant/Calibration.h"

namespace qopt::quant {

namespace {

std::string tensorSubject(const std::string& name) {
  return fmt::format("tensor '{}'", name);
}

/// The value `name` names (in the main graph or a body), checked to be a float graph input or
/// node output.
const Value* calibratedValue(const Model& model, const std::string& name) {
  const Graph& graph = model.graph();
  auto fail = [&](const std::string& cause) {
    return Error(ErrorKind::Input, model.sourcePath, tensorSubject(name), cause);
  };
  const std::vector<Value*> named = model.valuesNamed(name);
  if (named.size() > 1) {
    throw fail(
        fmt::format("{} bodies of the model define a value of this name; give them "
                    "distinct names (every value's name unique in the model)",
                    named.size()));
  }
  const Value* value = named.empty() ? nullptr : named.front();
  if (value == nullptr) {
    std::vector<std::string> names;
    for (const Value* input : graph.inputs()) names.push_back(input->name());
    for (const Node* node : graph.nodes()) {
      for (const Value* output : node->outputs()) {
        if (!output->isAbsent()) names.push_back(output->name());
      }
    }
    throw fail("no value of the graph has this name" + didYouMean(name, names));
  }
  if (value->isInitializer()) {
    throw fail(
        "is a constant (initializer): weights take their range from their values, they "
        "are not calibrated");
  }
  if (value->producer() == nullptr && !value->isGraphInput()) {
    throw fail("is neither a graph input nor a node output");
  }
  const ValueType& type = value->type();
  if (type.isTensor() && type.elemType != DataType::Undefined && !isFloatingPoint(type.elemType)) {
    throw fail(fmt::format("has element type {}; only float tensors are calibrated",
                           dataTypeName(type.elemType)));
  }
  return value;
}

class StatisticsObserver : public interp::CaptureObserver {
 public:
  StatisticsObserver(const Model& model, std::span<const std::string> tensors) : model_(model) {
    for (const std::string& name : tensors) statistics_.try_emplace(name);
    for (auto& [name, stats] : statistics_) {
      const Value* value = calibratedValue(model, name);
      wanted_.insert(value);
      targets_.emplace(value, &stats);
    }
  }

  const std::map<std::string, TensorStatistics>& statistics() const { return statistics_; }

  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }

  void captured(const Value& value, const interp::Array& array) override {
    auto it = targets_.find(&value);
    if (it == targets_.end()) return;
    if (array.dataType() == DataType::Float) {
      it->second->add({array.data<float>(), static_cast<size_t>(array.numel())});
    } else if (isFloatingPoint(array.dataType())) {
      std::vector<float> values = array.toFloatVector();
      it->second->add(values);
    } else {
      throw Error(ErrorKind::Input, model_.sourcePath, tensorSubject(value.name()),
                  fmt::format("has element type {} when the model runs; only float tensors "
                              "are calibrated",
                              dataTypeName(array.dataType())));
    }
  }

 private:
  const Model& model_;
  std::map<std::string, TensorStatistics> statistics_;
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, TensorStatistics*> targets_;
};

/// One worker's interpreter and statistics; built on the calling thread, so that a bad tensor
/// name or an unsupported op is reported before any thread starts.
struct Worker {
  Worker(const Model& model, std::span<const std::string> tensors)
      : observer(model, tensors), interpreter(model.graph()) {}

  void run(const Model& model, const analysis::Sample& sample) {
    analysis::runningSample(sample, [&] {
      return interpreter.run(analysis::feedFor(model.graph(), sample.inputs), &observer);
    });
  }
  uint64_t lastPeakBytes() const { return interpreter.lastPeakBytes(); }

  StatisticsObserver observer;
  interp::Interpreter interpreter;
};

int workerCount(int requested) {
  if (requested > 0) return requested;
  const unsigned hardware = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(hardware), 1, kMaxCalibrationThreads);
}

}  // namespace

std::map<std::string, TensorStatistics> collectStatistics(
    const Model& model, std::span<const std::string> tensors,
    const std::function<void(const std::function<bool(analysis::Sample&)>&)>& forEachSample,
    const ProgressFn& progress, CollectOptions options) {
  std::optional<analysis::SampleWorkers> own;
  if (options.workers == nullptr) {
    own.emplace(static_cast<size_t>(workerCount(options.threads)), UINT64_MAX);
  }
  analysis::SampleWorkers& pool = options.workers != nullptr ? *options.workers : *own;
  size_t threads = pool.threads();
  if (options.workers != nullptr && options.threads > 0) {
    threads = std::min(threads, static_cast<size_t>(options.threads));
  }
  std::vector<std::unique_ptr<Worker>> workers;
  for (size_t t = 0; t < threads; ++t) workers.push_back(std::make_unique<Worker>(model, tensors));
  analysis::SampleSource source(forEachSample, "calibration");
  size_t done = 0;
  analysis::streamSamples<Worker>(
      pool, source, "calibrating", workers,
      [&](Worker& worker, analysis::Sample& sample, size_t) {
        worker.run(model, sample);
        return true;
      },
      [&](bool, size_t) {
        ++done;
        if (progress) progress(done, 0);
      },
      /*showProgress=*/false);
  if (progress) progress(done, done);

  // Merging is exact and order-independent, so the thread that ran a sample does not matter.
  std::map<std::string, TensorStatistics> statistics;
  for (const std::string& name : tensors) statistics.try_emplace(name);
  for (const auto& worker : workers) {
    for (const auto& [name, stats] : worker->observer.statistics()) statistics[name].merge(stats);
  }
  return statistics;
}

}  // namespace qopt::quant
