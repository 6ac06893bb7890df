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

OutputNoise::OutputNoise(analysis::SampleWorkers& workers, const Model& reference,
                         analysis::SampleSource& source, uint64_t keptBytes, std::string doing)
    : workers_(workers),
      source_(source),
      doing_(std::move(doing)),
      outputs_(reference.graph().outputs().size()),
      expected_(keptBytes) {
  for (const Value* output : reference.graph().outputs()) {
    compared_.push_back(floatNumbers(output));
    atLogits_.push_back(preActivationOf(*output) != nullptr);
  }
  expected_ =
      analysis::collectOutputs(workers_, comparedView(reference, compared_, atLogits_)->graph(),
                               source_, keptBytes, doing_ + " (float model)");
}

std::optional<double> OutputNoise::of(const Model& candidate) const {
  if (candidate.graph().outputs().size() != outputs_) return std::nullopt;
  std::unique_ptr<Model> view = comparedView(candidate, compared_, atLogits_);
  if (view == nullptr) return std::nullopt;
  const size_t compared = view->graph().outputs().size();
  std::vector<analysis::ErrorAccumulator> accumulators(compared);
  bool corresponds = true;
  analysis::forEachOutputs(
      workers_, view->graph(), source_,
      [&](std::vector<interp::Array>&& actual, size_t s) {
        if (!corresponds || s >= expected_.size()) return;
        const std::vector<interp::Array> expected = expected_.get(s);
        for (size_t o = 0; o < compared; ++o) {
          const interp::Array& e = expected[o];
          const interp::Array& a = actual[o];
          if (e.numel() != a.numel()) {
            corresponds = false;
            return;
          }
          if (e.dataType() == DataType::Float && a.dataType() == DataType::Float) {
            const auto n = static_cast<size_t>(e.numel());
            accumulators[o].add(std::span<const float>(e.data<float>(), n),
                                std::span<const float>(a.data<float>(), n));
          } else {
            const std::vector<double> ed = analysis::toDoubles(e), ad = analysis::toDoubles(a);
            accumulators[o].add(std::span<const double>(ed), std::span<const double>(ad));
          }
        }
      },
      doing_);
  if (!corresponds) return std::nullopt;
  double sum = 0;
  for (const analysis::ErrorAccumulator& m : accumulators) {
    sum += std::pow(10.0, -m.result().sqnrDb / 10.0);
  }
  return compared == 0 ? 0.0 : sum / static_cast<double>(compared);
}

}  // namespace qopt::quant
