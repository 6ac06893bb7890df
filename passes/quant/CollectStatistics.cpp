// Activation statistics over a data set: one interpreter run per sample, the wanted tensors
// folded into their statistics as they are computed and released with the sample.
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

/// The graph value `name` names, checked to be a float graph input or node output.
const Value* calibratedValue(const Model& model, const std::string& name) {
  const Graph& graph = model.graph();
  auto fail = [&](const std::string& cause) {
    return Error(ErrorKind::Input, model.sourcePath, tensorSubject(name), cause);
  };
  const Value* value = graph.findValue(name);
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
  StatisticsObserver(const Model& model, std::map<std::string, TensorStatistics>& statistics)
      : model_(model) {
    for (auto& [name, stats] : statistics) {
      const Value* value = calibratedValue(model, name);
      wanted_.insert(value);
      targets_.emplace(value, &stats);
    }
  }

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
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, TensorStatistics*> targets_;
};

}  // namespace

std::map<std::string, TensorStatistics> collectStatistics(
    const Model& model, std::span<const std::string> tensors,
    const std::function<void(const std::function<bool(analysis::Sample&)>&)>& forEachSample,
    const ProgressFn& progress) {
  std::map<std::string, TensorStatistics> statistics;
  for (const std::string& name : tensors) statistics.try_emplace(name);
  StatisticsObserver observer(model, statistics);
  const Graph& graph = model.graph();
  interp::Interpreter interpreter(graph);
  size_t done = 0;
  forEachSample([&](analysis::Sample& sample) {
    try {
      interpreter.run(analysis::feedFor(graph, sample.inputs), &observer);
    } catch (const Error& e) {
      throw Error(e.kind(), e.where().empty() ? sample.source : e.where(), e.subject(),
                  fmt::format("{} (running sample {})", e.cause(), sample.source));
    }
    ++done;
    if (progress) progress(done, 0);
    return true;
  });
  if (progress) progress(done, done);
  return statistics;
}

}  // namespace qopt::quant
