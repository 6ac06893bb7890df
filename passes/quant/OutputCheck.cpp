#include "OutputCheck.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "FakeQuantize.h"
#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/ParallelSamples.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::quant {
namespace {

// A copy of `model` reading every assigned tensor through Q/DQ (inserted before its first
// reader, every reader of the main graph redirected) and the quantized weights.
std::unique_ptr<Model> quantizedCopy(const Model& model,
                                     const std::vector<QuantizedTensor>& tensors,
                                     const QuantizedWeights& weights) {
  std::unique_ptr<Model> copy = model.clone();
  Graph& graph = copy->graph();
  prepareQdqDomain(*copy);
  std::unordered_map<const Node*, Node*> nodeOf = nodeCorrespondence(model, *copy);
  std::unordered_map<const Node*, size_t> position;
  size_t p = 0;
  for (Node* node : graph.nodes()) position[node] = p++;
  for (const auto& [slot, tensor] : weights) {
    auto found = nodeOf.find(slot.first);
    if (found == nodeOf.end()) continue;
    Node* node = found->second;
    node->setInput(
        slot.second,
        addNamedInitializer(graph, node->input(slot.second)->name() + "_auto_check", tensor));
  }
  for (const QuantizedTensor& t : tensors) {
    Value* x = graph.findValue(t.value->name());
    if (x == nullptr) {
      throw Error(ErrorKind::Internal, model.sourcePath,
                  fmt::format("tensor '{}'", t.value->name()),
                  "not in the whole-model check's copy of the graph");
    }
    std::vector<Use> uses;
    Node* first = nullptr;
    for (const Use& use : x->uses()) {
      if (position.count(use.user) == 0) continue;  // a subgraph's node: left reading float
      uses.push_back(use);
      if (first == nullptr || position.at(use.user) < position.at(first)) first = use.user;
    }
    if (first == nullptr) continue;
    Value* fake = fakeQuantize(graph, x, t.quantization, first);
    for (const Use& use : uses) use.user->setInput(use.index, fake);
  }
  return copy;
}

struct OutputSums {
  std::vector<double> noise;
  std::vector<double> signal;
};

// What the check compares for each graph output: the output, or where a Softmax, LogSoftmax or
// Sigmoid makes it (through ops that only move values), that op's input. Saturated
// probabilities differ from float by amounts that say little: the logits carry the result.
std::vector<std::string> comparedValues(const Graph& graph) {
  std::vector<std::string> names;
  for (const Value* output : graph.outputs()) {
    const Value* current = output;
    for (int depth = 0; depth < 16; ++depth) {
      const Node* producer = current->producer();
      if (producer == nullptr || producer->numInputs() == 0) break;
      if (producer->is("Softmax") || producer->is("LogSoftmax") || producer->is("Sigmoid")) {
        current = producer->input(0);
        break;
      }
      bool moves = false;
      for (const char* op :
           {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
        moves = moves || producer->is(op);
      }
      if (!moves) break;
      current = producer->input(0);
    }
    if (current->producer() == nullptr) current = output;
    // An untyped intermediate (no shape inference ran) counts; a typed integer one (argmax
    // indices) does not.
    const DataType type = current->type().elemType;
    if (current->producer() != nullptr && (type == DataType::Undefined || isFloatingPoint(type))) {
      names.push_back(current->name());
    }
  }
  return names;
}

class ValueCollector : public interp::CaptureObserver {
 public:
  ValueCollector(const Graph& graph, const std::vector<std::string>& names) : values(names.size()) {
    for (size_t i = 0; i < names.size(); ++i) {
      const Value* v = graph.findValue(names[i]);
      if (v == nullptr) continue;
      wanted_.insert(v);
      index_[v] = i;
    }
  }
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void captured(const Value& value, const interp::Array& array) override {
    if (auto it = index_.find(&value); it != index_.end())
      values[it->second] = array.toFloatVector();
  }
  std::vector<std::vector<float>> values;

 private:
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, size_t> index_;
};

std::vector<std::vector<std::vector<float>>> runAll(const Model& model,
                                                    const std::vector<std::string>& names,
                                                    std::span<const analysis::Sample> samples,
                                                    const char* what) {
  const Graph& graph = model.graph();
  std::vector<std::vector<std::vector<float>>> outputs(samples.size());
  analysis::forEachSample<interp::Interpreter>(
      samples.size(), [&] { return std::make_unique<interp::Interpreter>(graph); },
      [&](interp::Interpreter& interpreter, size_t i) {
        ValueCollector collector(graph, names);
        try {
          interpreter.run(analysis::feedFor(graph, samples[i].inputs), &collector);
        } catch (const Error& e) {
          throw Error(e.kind(), e.where().empty() ? samples[i].source : e.where(), e.subject(),
                      fmt::format("{} ({} on sample {})", e.cause(), what, samples[i].source));
        }
        outputs[i] = std::move(collector.values);
      });
  return outputs;
}

}  // namespace

std::vector<double> measureOutputErrors(const Model& model,
                                        std::span<const std::vector<QuantizedTensor>> assignments,
                                        const QuantizedWeights& weights,
                                        std::span<const analysis::Sample> samples) {
  const std::vector<std::string> names = comparedValues(model.graph());
  const auto reference = runAll(model, names, samples, "running the float model for auto's check");
  std::vector<double> errors;
  for (const std::vector<QuantizedTensor>& tensors : assignments) {
    std::unique_ptr<Model> copy = quantizedCopy(model, tensors, weights);
    const auto quantized = runAll(*copy, names, samples, "auto's whole-model check");
    const size_t outputs = names.size();
    OutputSums sums{std::vector<double>(outputs, 0), std::vector<double>(outputs, 0)};
    for (size_t s = 0; s < samples.size(); ++s) {  // in sample order: deterministic
      for (size_t o = 0; o < outputs; ++o) {
        const std::vector<float>& want = reference[s][o];
        const std::vector<float>& got = quantized[s][o];
        if (want.size() != got.size()) {
          sums.noise[o] = std::numeric_limits<double>::infinity();
          continue;
        }
        for (size_t i = 0; i < want.size(); ++i) {
          if (!std::isfinite(want[i]) || !std::isfinite(got[i])) continue;
          const double d = double{got[i]} - double{want[i]};
          sums.noise[o] += d * d;
          sums.signal[o] += double{want[i]} * double{want[i]};
        }
      }
    }
    double sum = 0;
    size_t counted = 0;
    for (size_t o = 0; o < outputs; ++o) {
      ++counted;
      sum += sums.signal[o] > 0 ? sums.noise[o] / sums.signal[o]
                                : (sums.noise[o] > 0 ? std::numeric_limits<double>::infinity() : 0);
    }
    errors.push_back(counted > 0 ? sum / static_cast<double>(counted) : 0.0);
  }
  return errors;
}

}  // namespace qopt::quant
