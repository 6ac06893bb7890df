#include "ChannelShift.h"

#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/ObservedSamples.h"
#include "qopt/analysis/QuantizedLayers.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::biascorrect {
namespace {

struct Probe {
  std::unique_ptr<Model> model;
  /// Per layer: the value measured (the quantized layer's output, or its twin on the float
  /// activation) and the float layer's output.
  std::vector<std::pair<const Value*, const Value*>> pairs;
};

Node* copyNode(Graph& graph, const Node& node, Node* before) {
  Node* copy = graph.createEmptyNode(node.opType(), node.domain(), before);
  copy->setName(graph.model().uniqueNodeName((node.name().empty() ? node.opType() : node.name()) +
                                             "_bias_twin"));
  ValueMap none;
  for (const Attribute& attr : node.attributes()) copy->setAttr(attr.clone(copy, none));
  return copy;
}

Value* addTwinOutput(Graph& graph, const Node& node, Node* copy) {
  const Value* out = node.output(0);
  Value* twin = copy->addOutput(graph.model().uniqueValueName(out->name() + "_bias_twin"));
  twin->setType(out->type());
  return twin;
}

Value* constantCopy(Graph& graph, const Value* value) {
  std::optional<Tensor> tensor = fold::constantOf(value);
  if (!tensor) {
    throw Error(ErrorKind::Internal, graph.model().sourcePath, fold::describeValue(value),
                "a constant of the float layer could not be read");
  }
  tensor->setName(graph.model().uniqueValueName(value->name() + "_bias_twin"));
  auto shared = std::make_shared<Tensor>(std::move(*tensor));
  Value* copy = graph.addInitializer(shared);
  copy->setType(ValueType::tensor(shared->dataType(), shared->dims()));
  return copy;
}

/// `op`(in, constant) before `before`, the constant one value per channel (`dims`), the output
/// typed as `in`.
Value* withChannelConstant(Graph& graph, Node* before, const char* op, Value* in,
                           const std::vector<int64_t>& dims, const std::vector<double>& values) {
  const DataType type = in->type().isTensor() && in->type().elemType != DataType::Undefined
                            ? in->type().elemType
                            : DataType::Float;
  auto constant = std::make_shared<Tensor>(Tensor::fromDoubles(type, dims, values));
  constant->setName(graph.model().uniqueValueName(in->name() + "_bias_channels"));
  Value* c = graph.addInitializer(constant);
  c->setType(ValueType::tensor(type, dims));
  Node* node = graph.createEmptyNode(op, {}, before);
  node->setName(graph.model().uniqueNodeName(in->name() + "_bias_" + op));
  node->addInput(in);
  node->addInput(c);
  Value* out = node->addOutput(graph.model().uniqueValueName(in->name() + "_bias_" + op));
  out->setType(in->type());
  return out;
}

/// x from a * x + b (the record undone).
Value* undoAffine(Graph& graph, Node* before, Value* changed, const analysis::ChannelAffine& a,
                  const std::vector<int64_t>& dims) {
  Value* out = changed;
  if (!a.offset.empty()) out = withChannelConstant(graph, before, "Sub", out, dims, a.offset);
  return withChannelConstant(graph, before, "Div", out, dims, a.scale);
}

/// a * x + b (the record applied).
Value* redoAffine(Graph& graph, Node* before, Value* x, const analysis::ChannelAffine& a,
                  const std::vector<int64_t>& dims) {
  Value* out = withChannelConstant(graph, before, "Mul", x, dims, a.scale);
  if (!a.offset.empty()) out = withChannelConstant(graph, before, "Add", out, dims, a.offset);
  return out;
}

Probe buildProbe(const Model& model, std::span<const CorrectedLayer> layers, ShiftMode mode) {
  Probe probe;
  probe.model = model.clone();
  const std::vector<Node*> nodes = probe.model->graph().allNodes();
  auto unique = [&](const Value* value) -> Value* {
    const std::vector<Value*> named = probe.model->valuesNamed(value->name());
    return named.size() == 1 ? named.front() : nullptr;
  };
  for (const CorrectedLayer& layer : layers) {
    Node* node = layer.position < nodes.size() ? nodes[layer.position] : nullptr;
    Value* x = unique(layer.input);
    Value* chainInput = unique(layer.chainInput);
    if (node == nullptr || node->opType() != layer.node->opType() || x == nullptr ||
        chainInput == nullptr) {
      throw Error(ErrorKind::Internal, model.sourcePath, layer.node->describe(),
                  "the probe's copy of the graph differs");
    }
    Graph& graph = *node->graph();  // the float twin runs where the layer runs
    Node* before = node->next();
    // The float layer, reading x as the input model computed it; its output as the current
    // model should compute it (CorrectedLayers.h).
    Value* current = chainInput;
    if (layer.inputAffine) {
      current = undoAffine(graph, before, current, *layer.inputAffine, layer.inputAffineDims);
    }
    for (const Node* original : layer.floatChain) {
      Node* copy = copyNode(graph, *original, before);
      for (const Value* in : original->inputs()) {
        if (in == nullptr || in->isAbsent()) {
          copy->addInput(nullptr);
        } else if (fold::isConstantValue(in)) {
          copy->addInput(constantCopy(graph, in));
        } else {
          copy->addInput(current);  // the one run-time input (CorrectedLayers.cpp checked)
        }
      }
      current = addTwinOutput(graph, *original, copy);
    }
    if (layer.outputAffine) {
      current = redoAffine(graph, before, current, *layer.outputAffine, layer.outputAffineDims);
    }
    const Value* measured = node->output(0);
    if (mode == ShiftMode::Analytic && layer.inputQuantized) {
      // The quantized weights on the float activation: only the weights' error remains.
      Node* twin = copyNode(graph, *node, before);
      twin->addInput(x);
      for (size_t i = 1; i < node->numInputs(); ++i) twin->addInput(node->input(i));
      measured = addTwinOutput(graph, *node, twin);
    }
    probe.pairs.emplace_back(measured, current);
  }
  return probe;
}

/// Per layer and channel: the sum of (measured - float) and the count of values summed.
// Channels whose float output carries less than this share of the strongest channel's energy are
// not named as the worst gain (a weak channel, its output nearly cancelled, moves with
// quantization noise).
constexpr double kSignalShare = 0.05;

struct ShiftSums {
  std::vector<std::vector<double>> sum;
  std::vector<uint64_t> perChannel;
  std::vector<double> errorSquared;                 // per layer: sum of (measured - reference)^2
  std::vector<std::vector<double>> product;         // per channel: sum of measured * reference
  std::vector<std::vector<double>> channelSquared;  // per channel: sum of reference^2
};

class ShiftObserver : public interp::CaptureObserver {
 public:
  ShiftObserver(const Probe& probe, std::span<const CorrectedLayer> layers)
      : probe_(probe), layers_(layers) {
    for (size_t k = 0; k < probe.pairs.size(); ++k) {
      wanted_.insert(probe.pairs[k].first);
      wanted_.insert(probe.pairs[k].second);
      slot_[probe.pairs[k].first] = {k, false};
      slot_[probe.pairs[k].second] = {k, true};
      sums.sum.emplace_back(static_cast<size_t>(layers[k].channels), 0.0);
    }
    sums.perChannel.assign(probe.pairs.size(), 0);
    for (size_t k = 0; k < probe.pairs.size(); ++k) {
      sums.product.emplace_back(static_cast<size_t>(layers[k].channels), 0.0);
      sums.channelSquared.emplace_back(static_cast<size_t>(layers[k].channels), 0.0);
    }
    sums.errorSquared.assign(probe.pairs.size(), 0.0);
  }

  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }

  void captured(const Value& value, const interp::Array& array) override {
    const auto [k, isFloat] = slot_.at(&value);
    auto waiting = pending_.find(k);
    Held held{array.shape(), array.toFloatVector()};  // the interpreter reuses its buffers
    if (waiting == pending_.end()) {
      pending_.emplace(k, std::move(held));
      return;
    }
    accumulate(k, isFloat ? waiting->second : held, isFloat ? held : waiting->second);
    pending_.erase(waiting);
  }

  ShiftSums sums;

 private:
  struct Held {
    interp::Shape shape;
    std::vector<float> values;
  };

  void accumulate(size_t k, const Held& measured, const Held& reference) {
    const CorrectedLayer& layer = layers_[k];
    const interp::Shape& shape = measured.shape;
    const auto rank = static_cast<int64_t>(shape.size());
    const int64_t axis = channelAxis(*layer.node, rank);
    if (shape != reference.shape || axis < 0 || axis >= rank ||
        shape[static_cast<size_t>(axis)] != layer.channels) {
      throw Error(ErrorKind::Input, layer.node->graph()->model().sourcePath, layer.node->describe(),
                  fmt::format("its float counterpart in the input model gives another shape or "
                              "channel count ({} channels expected)",
                              layer.channels));
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[static_cast<size_t>(d)];
    const std::vector<float>& a = measured.values;
    const std::vector<float>& b = reference.values;
    std::vector<double>& sum = sums.sum[k];
    const int64_t channels = layer.channels;
    double errorSquared = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t c = 0; c < channels; ++c) {
        const size_t base = static_cast<size_t>((o * channels + c) * inner);
        double s = 0, ab = 0, bb = 0;
        for (int64_t i = 0; i < inner; ++i) {
          const double reference = b[base + static_cast<size_t>(i)];
          const double value = a[base + static_cast<size_t>(i)];
          const double e = value - reference;
          s += e;
          ab += value * reference;
          bb += reference * reference;
          errorSquared += e * e;
        }
        sum[static_cast<size_t>(c)] += s;
        sums.product[k][static_cast<size_t>(c)] += ab;
        sums.channelSquared[k][static_cast<size_t>(c)] += bb;
      }
    }
    sums.errorSquared[k] += errorSquared;
    sums.perChannel[k] += static_cast<uint64_t>(outer * inner);
  }

  const Probe& probe_;
  std::span<const CorrectedLayer> layers_;
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, std::pair<size_t, bool>> slot_;
  std::unordered_map<size_t, Held> pending_;
};

}  // namespace

std::vector<ChannelShift> measureChannelShifts(analysis::SampleWorkers& workers, const Model& model,
                                               std::span<const CorrectedLayer> layers,
                                               ShiftMode mode, analysis::SampleSource& source,
                                               size_t* samples) {
  Probe probe = buildProbe(model, layers, mode);
  const Graph& graph = probe.model->graph();
  ShiftSums total;  // sums over the samples, each sample's added in order: deterministic
  bool first = true;
  const size_t count = analysis::observeSamples(
      workers, graph, source, [&] { return ShiftObserver(probe, layers); },
      [&](ShiftSums&& sample) {
        if (first) {
          total = std::move(sample);
          first = false;
          return;
        }
        for (size_t k = 0; k < total.sum.size(); ++k) {
          for (size_t c = 0; c < total.sum[k].size(); ++c) {
            total.sum[k][c] += sample.sum[k][c];
            total.product[k][c] += sample.product[k][c];
            total.channelSquared[k][c] += sample.channelSquared[k][c];
          }
          total.perChannel[k] += sample.perChannel[k];
          total.errorSquared[k] += sample.errorSquared[k];
        }
      },
      "bias-correct: measuring");
  if (samples != nullptr) *samples = count;
  if (count == 0) {
    throw Error(ErrorKind::Input, source.origin(), {}, "bias-correct: the data holds no sample");
  }
  std::vector<ChannelShift> shifts;
  for (size_t k = 0; k < layers.size(); ++k) {
    ChannelShift shift;
    shift.mean.assign(static_cast<size_t>(layers[k].channels), 0.0);
    uint64_t count = 0;
    double errorSquared = 0;
    // Per channel: the gain (least squares of the layer's output on its float version's) from
    // these sums.
    std::vector<double> product(shift.mean.size(), 0.0), squared(shift.mean.size(), 0.0);
    for (size_t c = 0; c < shift.mean.size(); ++c) {
      shift.mean[c] += total.sum[k][c];
      product[c] += total.product[k][c];
      squared[c] += total.channelSquared[k][c];
    }
    count += total.perChannel[k];
    errorSquared += total.errorSquared[k];
    for (double& s : shift.mean) s = count > 0 ? s / static_cast<double>(count) : 0.0;
    double largestSquared = 0, totalSquared = 0, rescaledSquared = 0;
    for (double v : squared) {
      largestSquared = std::max(largestSquared, v);
      totalSquared += v;
    }
    shift.worstGain = 1.0;
    for (size_t c = 0; c < product.size(); ++c) {
      if (!(squared[c] > 0)) continue;
      const double gain = product[c] / squared[c];
      if (std::abs(gain - 1.0) > kMaxGainDeviation) rescaledSquared += squared[c];
      if (!(squared[c] > kSignalShare * largestSquared)) continue;
      if (std::abs(gain - 1.0) > std::abs(shift.worstGain - 1.0)) shift.worstGain = gain;
    }
    shift.rescaledShare = totalSquared > 0 ? rescaledSquared / totalSquared : 0.0;
    shift.sqnrDb = errorSquared > 0 ? 10 * std::log10(totalSquared / errorSquared)
                                    : std::numeric_limits<double>::infinity();
    shifts.push_back(std::move(shift));
  }
  return shifts;
}

}  // namespace qopt::biascorrect
