// Each quantized layer's own error in one run per sample: the model runs with, after every
// quantized layer, a float twin of it that reads the same upstream values before their
// QuantizeLinear (across the ops TensorRT moves DequantizeLinear over) and the weights as they
// were before quantization when the model recorded them (Model::recordUnrounded), else the same
// dequantized weights. The twin's output against the layer's is the error the layer's
// quantization adds there.
#include <cmath>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/analysis/Metrics.h"
#include "qopt/analysis/ObservedSamples.h"
#include "qopt/analysis/Precision.h"
#include "qopt/analysis/QuantizedLayers.h"
#include "qopt/analysis/Sensitivity.h"
#include "qopt/interp/Interpreter.h"

namespace qopt::analysis {
namespace {

// The float value a quantized activation input stands for: DequantizeLinear(QuantizeLinear(x))
// read as x, also through re-quantized chains; nullptr when `value` is no such output.
Value* beforeQuantization(Value* value, Node* before) {
  Node* first = nullptr;  // the DequantizeLinear the layer reads: its type is the one to keep
  Node* last = nullptr;   // the QuantizeLinear whose input is returned
  for (int depth = 0; depth < 8; ++depth) {
    Node* dq = value->producer();
    if (dq == nullptr || !dq->is("DequantizeLinear")) break;
    Node* q = dq->input(0)->producer();
    if (q == nullptr || !q->is("QuantizeLinear")) break;
    if (first == nullptr) first = dq;
    last = q;
    value = q->input(0);
  }
  return first != nullptr ? inDequantizedType(*last, *first, value, before) : nullptr;
}

Node* copyNode(Graph& graph, const Node& node, Node* before, const std::string& name) {
  Node* copy = graph.createEmptyNode(node.opType(), node.domain(), before);
  copy->setName(graph.model().uniqueNodeName(name));
  ValueMap none;
  for (const Attribute& attr : node.attributes()) copy->setAttr(attr.clone(copy, none));
  return copy;
}

// The float version of input `value` of a layer: before its Q/DQ, with the ops between the
// DequantizeLinear and the layer copied to read that. nullptr when the input is not a quantized
// activation or the ops in between are not a single chain.
Value* floatInput(Graph& graph, Value* value, Node* before) {
  if (Value* direct = beforeQuantization(value, before)) return direct;
  std::optional<DequantizedInput> dq = findDequantizedInput(value);
  if (!dq || dq->constantData || dq->quantize == nullptr || dq->crossed.empty()) return nullptr;
  Value* current = dq->dequantize->output(0);
  Value* replacement =
      inDequantizedType(*dq->quantize, *dq->dequantize, dq->quantize->input(0), before);
  for (const Node* op : dq->crossed) {
    if (op->numOutputs() != 1) return nullptr;
    Node* copy = copyNode(graph, *op, before, op->name() + "_float_twin");
    bool reads = false;
    for (size_t i = 0; i < op->numInputs(); ++i) {
      Value* in = op->input(i);
      reads = reads || in == current;
      copy->addInput(in == current ? replacement : in);
    }
    if (!reads) return nullptr;
    current = op->output(0);
    replacement = copy->addOutput(graph.model().uniqueValueName(current->name() + "_float_twin"));
  }
  return current == value ? replacement : nullptr;
}

// A constant input the layer reads through DequantizeLinear, as its values before quantization
// (Model::recordUnrounded): the twin then carries no weight error either. nullptr when `value`
// is no such input or nothing was recorded.
Value* unroundedInput(Graph& graph, const Value* value) {
  const Node* dq = value->producer();
  if (dq == nullptr || !dq->is("DequantizeLinear")) return nullptr;
  std::optional<Tensor> values = unroundedConstant(*dq);
  if (!values) return nullptr;
  values->setName(graph.model().uniqueValueName(value->name() + "_float_twin"));
  auto shared = std::make_shared<Tensor>(std::move(*values));
  Value* constant = graph.addInitializer(shared);
  constant->setType(ValueType::tensor(shared->dataType(), shared->dims()));
  return constant;
}

struct Probe {
  std::unique_ptr<Model> model;
  std::vector<LocalSensitivity> layers;
  std::vector<std::pair<const Value*, const Value*>> outputs;  // layer output, twin output
};

Probe buildProbe(const Model& model) {
  Probe probe;
  probe.model = model.clone();
  for (const QuantizedLayer& layer : findQuantizedLayers(probe.model->graph())) {
    Node& node = *layer.node;
    Graph& graph = *node.graph();  // the twin runs where the layer runs (a body, maybe)
    if (node.numOutputs() == 0 || node.output(0) == nullptr) continue;
    Node* after = node.next();
    std::vector<Value*> inputs;
    bool anyFloat = false;
    for (size_t i = 0; i < node.numInputs(); ++i) {
      Value* in = node.input(i);
      Value* replaced = in != nullptr ? floatInput(graph, in, after) : nullptr;
      if (replaced == nullptr && in != nullptr) replaced = unroundedInput(graph, in);
      anyFloat = anyFloat || replaced != nullptr;
      inputs.push_back(replaced != nullptr ? replaced : in);
    }
    if (!anyFloat) continue;  // nothing of its input is quantized, or nothing known before it
    Node* twin = copyNode(graph, node, after, layer.name + "_float_twin");
    for (Value* in : inputs) twin->addInput(in);
    Value* out =
        twin->addOutput(graph.model().uniqueValueName(node.output(0)->name() + "_float_twin"));
    probe.layers.push_back({layer.name, node.opType(), layer.position, {}});
    probe.outputs.emplace_back(node.output(0), out);
  }
  return probe;
}

// The sums an SQNR and a cosine need, for one layer on one sample.
struct NoiseSums {
  double signal = 0, noise = 0, product = 0, actual = 0;
  uint64_t count = 0, nonFinite = 0;
};

class PairObserver : public interp::CaptureObserver {
 public:
  explicit PairObserver(const Probe& probe) {
    for (size_t k = 0; k < probe.outputs.size(); ++k) {
      wanted_.insert(probe.outputs[k].first);
      wanted_.insert(probe.outputs[k].second);
      layerOf_[probe.outputs[k].first] = {k, false};
      layerOf_[probe.outputs[k].second] = {k, true};
    }
    sums.resize(probe.outputs.size());
  }
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void captured(const Value& value, const interp::Array& array) override {
    const auto [k, isTwin] = layerOf_.at(&value);
    auto waiting = pending_.find(k);
    if (waiting == pending_.end()) {
      pending_.emplace(k, std::make_pair(isTwin, toDoubles(array)));
      return;
    }
    std::vector<double> other = toDoubles(array);
    const std::vector<double>& reference = isTwin ? other : waiting->second.second;
    const std::vector<double>& actual = isTwin ? waiting->second.second : other;
    NoiseSums& s = sums[k];
    for (size_t i = 0; i < reference.size() && i < actual.size(); ++i) {
      const double r = reference[i], a = actual[i];
      if (!std::isfinite(r) || !std::isfinite(a)) {
        ++s.nonFinite;
        continue;
      }
      s.signal += r * r;
      s.noise += (a - r) * (a - r);
      s.product += r * a;
      s.actual += a * a;
      ++s.count;
    }
    pending_.erase(waiting);
  }
  std::vector<NoiseSums> sums;

 private:
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, std::pair<size_t, bool>> layerOf_;
  std::map<size_t, std::pair<bool, std::vector<double>>> pending_;
};

}  // namespace

std::vector<LocalSensitivity> measureLocalSensitivity(SampleWorkers& workers, const Model& model,
                                                      SampleSource& source,
                                                      const std::string& doing) {
  Probe probe = buildProbe(model);
  const Graph& graph = probe.model->graph();
  std::vector<LocalSensitivity> layers = std::move(probe.layers);
  // Folded in sample order, each total from zero: the same sums whatever the thread count.
  std::vector<NoiseSums> totals(layers.size());
  observeSamples(
      workers, graph, source, [&] { return PairObserver(probe); },
      [&](std::vector<NoiseSums>&& sample) {
        for (size_t k = 0; k < totals.size(); ++k) {
          NoiseSums& total = totals[k];
          total.signal += sample[k].signal;
          total.noise += sample[k].noise;
          total.product += sample[k].product;
          total.actual += sample[k].actual;
          total.count += sample[k].count;
          total.nonFinite += sample[k].nonFinite;
        }
      },
      doing);
  for (size_t k = 0; k < layers.size(); ++k) {
    const NoiseSums& total = totals[k];
    ErrorMetrics& m = layers[k].error;
    m.count = total.count;
    m.nonFinite = total.nonFinite;
    m.mse = total.count > 0 ? total.noise / static_cast<double>(total.count) : 0;
    m.sqnrDb = total.noise > 0 ? 10 * std::log10(total.signal / total.noise) : INFINITY;
    const double norms = std::sqrt(total.signal) * std::sqrt(total.actual);
    m.cosine = norms > 0 ? total.product / norms : 1.0;
  }
  std::stable_sort(layers.begin(), layers.end(),
                   [](const LocalSensitivity& a, const LocalSensitivity& b) {
                     return a.error.sqnrDb < b.error.sqnrDb;
                   });
  return layers;
}

}  // namespace qopt::analysis
