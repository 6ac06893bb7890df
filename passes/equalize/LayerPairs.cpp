#include "LayerPairs.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "qopt/rescale/Homogeneous.h"

namespace qopt::equalize {
namespace {

// Conv and ConvTranspose carry channels on axis 1, Gemm and MatMul on the last axis: a pair must
// agree (a Conv's output has rank >= 3, a Gemm's input rank 2, so mixed pairs do not occur in
// valid models anyway).
bool sameChannelAxis(LayerKind a, LayerKind b) {
  auto spatial = [](LayerKind k) { return k == LayerKind::Conv || k == LayerKind::ConvTranspose; };
  return spatial(a) == spatial(b);
}

// Whether `value` is read exactly once, by `reader` at `index`, and is not a graph output.
bool onlyReadBy(const Value* value, const Node* reader, uint32_t index) {
  return !value->isGraphOutput() && value->uses().size() == 1 && value->uses()[0].user == reader &&
         value->uses()[0].index == index;
}

}  // namespace

LayerPairs findLayerPairs(Graph& graph, PassResult& result) {
  LayerPairs found;
  auto layerOf = [&](Node* node, std::string& why) { return found.layers.get(node, why); };

  for (Node* second : graph.allNodes()) {  // bodies included
    std::optional<LayerKind> secondKind = layerKindOf(*second);
    if (!secondKind || second->input(0) == nullptr) continue;
    Value* x = second->input(0);
    Node* producer = x->producer();
    if (producer == nullptr) continue;
    Node* activation = nullptr;
    Node* first = producer;
    if (!layerKindOf(*producer)) {
      if (producer->numInputs() == 0 || producer->input(0) == nullptr) continue;
      Node* before = producer->input(0)->producer();
      if (before == nullptr || !layerKindOf(*before)) continue;
      activation = producer;
      first = before;
    }
    std::string subject = fmt::format("{} -> {}", first->describe(), second->describe());
    auto miss = [&](const char* counter, std::string why) {
      result.statistics.add("pairs-skipped");
      result.statistics.add(counter);
      result.missed(subject, "not equalized: " + why);
    };
    if (activation) {
      std::string why = scalingRefusal(*activation);
      if (!why.empty()) {
        miss("skipped-activation", why);
        continue;
      }
    }
    Value* pre = first->output(0);
    if (!onlyReadBy(pre, activation ? activation : second, 0) ||
        (activation && !onlyReadBy(activation->output(0), second, 0))) {
      miss("skipped-other-readers",
           fmt::format("'{}' between them is read by other nodes or is a graph output",
                       activation && onlyReadBy(pre, activation, 0) ? activation->output(0)->name()
                                                                    : pre->name()));
      continue;
    }
    if (!sameChannelAxis(*layerKindOf(*first), *secondKind)) {
      miss("skipped-layout", "their channels lie on different axes");
      continue;
    }
    if (*secondKind == LayerKind::Gemm && second->attrInt("transA", 0) != 0) {
      miss("skipped-layout", fmt::format("{} transposes its input (transA=1)", second->describe()));
      continue;
    }
    std::string why;
    LinearLayer* a = layerOf(first, why);
    LinearLayer* b = a ? layerOf(second, why) : nullptr;
    if (!a || !b) {
      miss("skipped-weights", why);
      continue;
    }
    if (a->outputChannels() != b->inputChannels()) {
      miss("skipped-channel-mismatch", fmt::format("{} output channels feed {} input channels",
                                                   a->outputChannels(), b->inputChannels()));
      continue;
    }
    found.pairs.push_back({a, b, activation, pre, {}});
  }
  return found;
}

std::vector<double> equalizingScales(const LinearLayer& first, const LinearLayer& second) {
  std::vector<double> r1 = first.outputChannelAbsMax();
  std::vector<double> r2 = second.inputChannelAbsMax();
  std::vector<double> s(r1.size(), 1.0);
  for (size_t i = 0; i < s.size(); ++i) {
    if (r1[i] > 0 && r2[i] > 0) s[i] = std::sqrt(r1[i] * r2[i]) / r2[i];
  }
  return s;
}

EqualizeOutcome equalizePairs(std::vector<LayerPair>& pairs, int maxSweeps, double tolerance) {
  EqualizeOutcome outcome;
  if (pairs.empty()) {
    outcome.converged = true;
    return outcome;
  }
  while (outcome.sweeps < maxSweeps) {
    ++outcome.sweeps;
    double largest = 0;
    for (LayerPair& pair : pairs) {
      std::vector<double> s = equalizingScales(*pair.first, *pair.second);
      std::vector<double> inverse(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        inverse[i] = 1.0 / s[i];
        largest = std::max(largest, std::fabs(s[i] - 1.0));
      }
      pair.first->scaleOutputChannels(inverse);
      if (pair.outputFactor.empty()) pair.outputFactor.assign(inverse.size(), 1.0);
      for (size_t i = 0; i < inverse.size(); ++i) pair.outputFactor[i] *= inverse[i];
      pair.second->scaleInputChannels(s);
    }
    outcome.largestLastChange = largest;
    if (largest <= tolerance) {
      outcome.converged = true;
      break;
    }
  }
  return outcome;
}

}  // namespace qopt::equalize
