#include "qopt/quant/OutputNoise.h"

#include <cmath>
#include <memory>

#include "qopt/analysis/Metrics.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::quant {
namespace {

bool floatNumbers(const Value* value) {
  const DataType type = value->type().elemType;
  return type == DataType::Undefined || isFloatingPoint(type);
}

// A copy of `model` whose outputs are the compared values; nullptr when a position compared at
// the logits has none in `model`.
std::unique_ptr<Model> comparedView(const Model& model, const std::vector<bool>& compared,
                                    const std::vector<bool>& atLogits) {
  std::unique_ptr<Model> copy = model.clone();
  Graph& graph = copy->graph();
  for (size_t o = compared.size(); o-- > 0;) {
    if (!compared[o]) {
      graph.removeOutput(o);
    } else if (atLogits[o]) {
      Value* logits = preActivationOf(*graph.outputs()[o]);
      if (logits == nullptr) return nullptr;
      graph.setOutput(o, logits);
    }
  }
  return copy;
}

}  // namespace

OutputNoise::OutputNoise(const Model& reference, std::span<const analysis::Sample> samples)
    : samples_(samples), outputs_(reference.graph().outputs().size()) {
  for (const Value* output : reference.graph().outputs()) {
    compared_.push_back(floatNumbers(output));
    atLogits_.push_back(preActivationOf(*output) != nullptr);
  }
  expected_ = analysis::runOutputs(comparedView(reference, compared_, atLogits_)->graph(), samples);
}

std::optional<double> OutputNoise::of(const Model& candidate) const {
  if (candidate.graph().outputs().size() != outputs_) return std::nullopt;
  std::unique_ptr<Model> view = comparedView(candidate, compared_, atLogits_);
  if (view == nullptr) return std::nullopt;
  const analysis::OutputSets actual = analysis::runOutputs(view->graph(), samples_);
  const size_t compared = view->graph().outputs().size();
  std::vector<analysis::ErrorAccumulator> accumulators(compared);
  for (size_t s = 0; s < actual.size() && s < expected_.size(); ++s) {
    for (size_t o = 0; o < compared; ++o) {
      const interp::Array& e = expected_[s][o];
      const interp::Array& a = actual[s][o];
      if (e.numel() != a.numel()) return std::nullopt;
      if (e.dataType() == DataType::Float && a.dataType() == DataType::Float) {
        const auto n = static_cast<size_t>(e.numel());
        accumulators[o].add(std::span<const float>(e.data<float>(), n),
                            std::span<const float>(a.data<float>(), n));
      } else {
        const std::vector<double> ed = analysis::toDoubles(e), ad = analysis::toDoubles(a);
        accumulators[o].add(std::span<const double>(ed), std::span<const double>(ad));
      }
    }
  }
  double sum = 0;
  for (const analysis::ErrorAccumulator& m : accumulators) {
    sum += std::pow(10.0, -m.result().sqnrDb / 10.0);
  }
  return compared == 0 ? 0.0 : sum / static_cast<double>(compared);
}

}  // namespace qopt::quant
