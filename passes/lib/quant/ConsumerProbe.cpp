// The consumers' error for each candidate of calibrator=auto, measured in one probe run per
// sample: after each consumer, one twin per candidate reading the tensor through Q/DQ at the
// candidate's scale (and the weights in their quantized form); the observer compares each twin's
// first output with the consumer's as they are computed and keeps only sums.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ConsumerProbe.h"
#include "FakeQuantize.h"
#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/ObservedSamples.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::quant {

namespace {

struct Twin {
  size_t reference = 0;  // index into Probe::references
  const Value* output = nullptr;
};

struct Probe {
  std::unique_ptr<Model> model;
  std::vector<const Value*> references;  // consumers' first outputs, each once
  std::vector<Twin> twins;
  /// twinOf[tensor][candidate][consumer]: index into twins.
  std::vector<std::vector<std::vector<size_t>>> twinOf;
};

/// Elementwise activations TensorRT fuses into the layer before them: what the layer computes
/// is their output, so an error they remove (a negative value under a ReLU) costs nothing.
bool isFusedActivation(const Node& node) {
  for (const char* op : {"Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Tanh",
                         "Elu", "Selu", "Softplus", "PRelu"}) {
    if (node.is(op)) return true;
  }
  return false;
}

/// The activations that follow `consumer` alone (each the only reader of the one before, not a
/// graph output), at most four.
std::vector<Node*> fusedActivations(Node* consumer) {
  std::vector<Node*> chain;
  Node* current = consumer;
  while (chain.size() < 4) {
    const Value* out = current->output(0);
    if (out->isGraphOutput() || out->uses().size() != 1) break;
    const Use& use = out->uses().front();
    if (use.index != 0 || !isFusedActivation(*use.user) || use.user->numOutputs() != 1) break;
    chain.push_back(use.user);
    current = use.user;
  }
  return chain;
}

Node* copyNode(Graph& graph, const Node& node, Node* before) {
  Node* copy =
      addProbeNode(graph, node.opType(), node.domain(), before, node.name() + "_auto_twin");
  ValueMap none;
  for (const Attribute& attr : node.attributes()) copy->setAttr(attr.clone(copy, none));
  return copy;
}

Value* addTwinOutputs(Graph& graph, const Node& node, Node* twin) {
  for (size_t o = 0; o < node.numOutputs(); ++o) {
    const Value* out = node.output(o);
    if (out->isAbsent()) {
      twin->addOutput({}, /*absent=*/true);
      continue;
    }
    Value* copy = twin->addOutput(graph.model().uniqueValueName(out->name() + "_auto_twin"));
    copy->setType(out->type());
  }
  return twin->output(0);
}

Error internal(const Model& model, const std::string& subject, const std::string& cause) {
  return Error(ErrorKind::Internal, model.sourcePath, subject, cause);
}

Probe buildProbe(const Model& model, std::span<const ProbeTensor> tensors,
                 const QuantizedWeights& weights) {
  Probe probe;
  probe.model = model.clone();
  prepareQdqDomain(*probe.model);
  std::unordered_map<const Node*, Node*> nodeOf = nodeCorrespondence(model, *probe.model);
  std::map<std::pair<const Node*, size_t>, Value*> weightValues;
  std::unordered_map<const Value*, size_t> referenceOf;
  for (const ProbeTensor& tensor : tensors) {
    const std::string subject = fmt::format("tensor '{}'", tensor.value->name());
    const std::vector<Value*> named = probe.model->valuesNamed(tensor.value->name());
    if (named.size() != 1) throw internal(model, subject, "not once in the probe's copy");
    Value* x = named.front();
    // The consumers, each once, in the order of their first use; the slots each reads x at.
    std::vector<std::pair<const Node*, std::vector<size_t>>> consumers;
    for (const Use& use : tensor.uses) {
      auto it = std::find_if(consumers.begin(), consumers.end(),
                             [&](const auto& c) { return c.first == use.user; });
      if (it == consumers.end()) {
        consumers.push_back({use.user, {}});
        it = std::prev(consumers.end());
      }
      it->second.push_back(use.index);
    }
    std::vector<std::vector<size_t>> twinsOfTensor(tensor.candidates.size());
    for (const auto& [original, slots] : consumers) {
      auto found = nodeOf.find(original);
      if (found == nodeOf.end()) {
        throw internal(model, subject, "a consumer is not a node of the model");
      }
      Node* consumer = found->second;
      Graph& graph = *consumer->graph();  // the twins run where the consumer runs
      if (consumer->numOutputs() == 0 || consumer->output(0)->isAbsent()) continue;
      for (size_t slot : slots) {
        if (consumer->input(slot) != x) throw internal(model, subject, "a use does not read it");
      }
      const std::vector<Node*> chain = fusedActivations(consumer);
      const Node* last = chain.empty() ? consumer : chain.back();
      const Value* reference = last->output(0);
      auto [ref, added] = referenceOf.emplace(reference, probe.references.size());
      if (added) probe.references.push_back(reference);
      Node* before = last->next();
      for (size_t k = 0; k < tensor.candidates.size(); ++k) {
        Value* fake = fakeQuantize(graph, x, tensor.candidates[k], before);
        Node* twin = copyNode(graph, *consumer, before);
        for (size_t i = 0; i < consumer->numInputs(); ++i) {
          Value* in = consumer->input(i);
          if (std::find(slots.begin(), slots.end(), i) != slots.end()) {
            in = fake;
          } else if (auto w = weights.find({original, i}); w != weights.end()) {
            Value*& constant = weightValues[{original, i}];
            if (constant == nullptr)
              constant = addNamedInitializer(graph, in->name() + "_auto", w->second);
            in = constant;
          }
          twin->addInput(in);
        }
        Value* twinOutput = addTwinOutputs(graph, *consumer, twin);
        for (const Node* activation : chain) {
          Node* copy = copyNode(graph, *activation, before);
          copy->addInput(twinOutput);
          for (size_t i = 1; i < activation->numInputs(); ++i) copy->addInput(activation->input(i));
          twinOutput = addTwinOutputs(graph, *activation, copy);
        }
        twinsOfTensor[k].push_back(probe.twins.size());
        probe.twins.push_back({ref->second, twinOutput});
      }
    }
    probe.twinOf.push_back(std::move(twinsOfTensor));
  }
  return probe;
}

/// The sums of one sample: noise per twin, signal per reference.
struct ProbeSums {
  std::vector<double> noise;
  std::vector<double> signal;
};

std::vector<float> floatsOf(const interp::Array& array) {
  if (array.dataType() == DataType::Float) {
    const float* data = array.data<float>();
    return {data, data + array.numel()};
  }
  return array.toFloatVector();
}

class ProbeObserver : public interp::CaptureObserver {
 public:
  explicit ProbeObserver(const Probe& probe) : probe_(probe) {
    for (size_t r = 0; r < probe.references.size(); ++r) {
      wanted_.insert(probe.references[r]);
      referenceIndex_[probe.references[r]] = r;
    }
    twinsOf_.assign(probe.references.size(), 0);
    for (size_t t = 0; t < probe.twins.size(); ++t) {
      wanted_.insert(probe.twins[t].output);
      twinIndex_[probe.twins[t].output] = t;
      ++twinsOf_[probe.twins[t].reference];
    }
    remaining_ = twinsOf_;
    sums.noise.assign(probe.twins.size(), 0);
    sums.signal.assign(probe.references.size(), 0);
  }

  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }

  void captured(const Value& value, const interp::Array& array) override {
    if (auto r = referenceIndex_.find(&value); r != referenceIndex_.end()) {
      std::vector<float> values = floatsOf(array);
      double signal = 0;
      for (float v : values) {
        if (std::isfinite(v)) signal += double{v} * double{v};
      }
      // Summed over the runs of a body: a Loop or Scan body's consumer runs once per iteration.
      sums.signal[r->second] += signal;
      remaining_[r->second] = twinsOf_[r->second];
      held_[r->second] = std::move(values);
      for (auto& early : early_[r->second]) compare(early.first, early.second);
      early_.erase(r->second);
      return;
    }
    auto t = twinIndex_.find(&value);
    if (t == twinIndex_.end()) return;
    const size_t reference = probe_.twins[t->second].reference;
    if (held_.count(reference) == 0) {  // not expected: twins follow their consumer
      early_[reference].emplace_back(t->second, floatsOf(array));
      return;
    }
    compare(t->second, floatsOf(array));
  }

  ProbeSums sums;

 private:
  void compare(size_t twin, const std::vector<float>& values) {
    const size_t reference = probe_.twins[twin].reference;
    const std::vector<float>& expected = held_.at(reference);
    double noise = 0;
    if (values.size() != expected.size()) {
      noise = std::numeric_limits<double>::infinity();
    } else {
      for (size_t i = 0; i < values.size(); ++i) {
        if (!std::isfinite(values[i]) || !std::isfinite(expected[i])) continue;
        const double d = double{values[i]} - double{expected[i]};
        noise += d * d;
      }
    }
    sums.noise[twin] += noise;
    if (--remaining_[reference] == 0) held_.erase(reference);  // the last twin has been seen
  }

  const Probe& probe_;
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, size_t> referenceIndex_;
  std::unordered_map<const Value*, size_t> twinIndex_;
  std::vector<size_t> twinsOf_;    // the twins of each reference
  std::vector<size_t> remaining_;  // those not yet compared in the reference's current run
  std::unordered_map<size_t, std::vector<float>> held_;
  std::unordered_map<size_t, std::vector<std::pair<size_t, std::vector<float>>>> early_;
};

}  // namespace

std::vector<std::vector<double>> measureConsumerErrors(analysis::SampleWorkers& workers,
                                                       const Model& model,
                                                       std::span<const ProbeTensor> tensors,
                                                       const QuantizedWeights& weights,
                                                       std::span<const analysis::Sample> samples) {
  Probe probe = buildProbe(model, tensors, weights);
  const Graph& graph = probe.model->graph();
  ProbeSums total{std::vector<double>(probe.twins.size(), 0),
                  std::vector<double>(probe.references.size(), 0)};
  analysis::observeSamples(
      workers, graph, samples, [&] { return ProbeObserver(probe); },
      [&](ProbeSums&& sample) {  // in sample order: deterministic
        for (size_t t = 0; t < total.noise.size(); ++t) total.noise[t] += sample.noise[t];
        for (size_t r = 0; r < total.signal.size(); ++r) total.signal[r] += sample.signal[r];
      },
      "judging calibrator=auto's candidates");
  std::vector<std::vector<double>> errors;
  for (const auto& candidates : probe.twinOf) {
    std::vector<double> perCandidate;
    for (const std::vector<size_t>& twins : candidates) {
      double sum = 0;
      for (size_t twin : twins) {
        const double signal = total.signal[probe.twins[twin].reference];
        const double noise = total.noise[twin];
        sum += signal > 0 ? noise / signal
                          : (noise > 0 ? std::numeric_limits<double>::infinity() : 0.0);
      }
      perCandidate.push_back(twins.empty() ? 0.0 : sum / static_cast<double>(twins.size()));
    }
    errors.push_back(std::move(perCandidate));
  }
  return errors;
}

}  // namespace qopt::quant
