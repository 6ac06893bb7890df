// calibrator=auto: the candidates, the bounded-by-construction rule and the choice (see
// AutoCalibration.h; the consumers' errors come from ConsumerProbe.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ConsumerProbe.h"
#include "OutputCheck.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/AutoCalibration.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::quant {

namespace {

/// The constant scalar behind `value` (an initializer or a Constant node's tensor), if any.
std::optional<double> constantScalar(const Value* value) {
  if (value == nullptr || value->isAbsent()) return std::nullopt;
  TensorPtr tensor;
  if (value->isInitializer()) {
    tensor = value->initializer();
  } else if (const Node* producer = value->producer();
             producer != nullptr && producer->is("Constant")) {
    if (const Attribute* attr = producer->findAttr("value"); attr != nullptr) tensor = attr->t;
  }
  if (!tensor || tensor->numElements() != 1 || !isFloatingPoint(tensor->dataType())) {
    return std::nullopt;
  }
  const double v = tensor->doubleAt(0);
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

/// Clip with both bounds constant (attributes before opset 11, inputs from it on).
bool clipHasConstantBounds(const Node& clip) {
  if (clip.hasAttr("min") || clip.hasAttr("max")) {
    return clip.hasAttr("min") && clip.hasAttr("max") && std::isfinite(clip.attrFloat("min", 0)) &&
           std::isfinite(clip.attrFloat("max", 0));
  }
  return constantScalar(clip.input(1)).has_value() && constantScalar(clip.input(2)).has_value();
}

double sqnrOf(double error) {
  return error > 0 ? -10.0 * std::log10(error) : std::numeric_limits<double>::infinity();
}

// The whole-model check (AutoOutputCheck): replaces the per-tensor choices by one calibrator's
// thresholds everywhere when that gives a clearly smaller output error (keptAssignment).
void checkWholeModel(analysis::SampleWorkers& workers, const Model& model,
                     std::span<const AutoTensor> tensors, std::vector<AutoChoice>& choices,
                     const QuantizedWeights& weights, std::span<const analysis::Sample> samples,
                     const FakeQuantizer& quantizer, AutoOutputCheck& check) {
  // Each calibrator everywhere, first with the tensors bounded by construction kept at their
  // max (the per-tensor rule), then truly everywhere: the check sees the model's outputs, so a
  // clipped bound that costs accuracy (an attention Softmax) shows there.
  auto bounded = [](const AutoChoice& c) {
    return c.reason.rfind("bounded by construction", 0) == 0;
  };
  std::vector<std::string> labels{"per-tensor choices"};
  std::vector<std::vector<double>> amaxes{{}};
  std::vector<size_t> kinds{0};  // the calibrator of each assignment (unused for the first)
  for (const AutoChoice& c : choices) amaxes[0].push_back(c.amax);
  for (bool keepBounds : {true, false}) {
    for (size_t k = 0; k < std::size(kAutoCandidateKinds); ++k) {
      std::vector<double> uniform;
      for (const AutoChoice& c : choices) {
        const bool fixed = !(c.amax > 0) || (keepBounds && bounded(c));
        uniform.push_back(fixed ? c.amax : c.candidates[k].amax);
      }
      if (std::find(amaxes.begin(), amaxes.end(), uniform) != amaxes.end()) continue;
      labels.push_back(fmt::format("{} everywhere{}", calibratorName(kAutoCandidateKinds[k]),
                                   keepBounds ? " (bounded tensors at their max)" : ""));
      amaxes.push_back(std::move(uniform));
      kinds.push_back(k);
    }
  }
  if (amaxes.size() == 1) return;  // every calibrator everywhere is the per-tensor choice
  std::vector<std::vector<QuantizedTensor>> assignments;
  for (const std::vector<double>& a : amaxes) {
    std::vector<QuantizedTensor> assignment;
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (!(a[t] > 0)) continue;
      assignment.push_back({tensors[t].value, quantizer(*tensors[t].statistics, a[t])});
    }
    assignments.push_back(std::move(assignment));
  }
  const std::vector<double> errors =
      measureOutputErrors(workers, model, assignments, weights, samples);
  check.run = true;
  for (size_t i = 0; i < errors.size(); ++i) check.errors.emplace_back(labels[i], errors[i]);
  const size_t best = keptAssignment(errors);
  check.kept = labels[best];
  if (best == 0) return;
  const CalibratorKind kind = kAutoCandidateKinds[kinds[best]];
  for (size_t t = 0; t < choices.size(); ++t) {
    AutoChoice& c = choices[t];
    if (c.amax == amaxes[best][t]) continue;
    c.chosen = kind;
    c.amax = amaxes[best][t];
    c.reason = fmt::format(
        "whole-model check: {} gave output SQNR {:.2f} dB, the per-tensor choices {:.2f} dB",
        labels[best], sqnrOf(errors[best]), sqnrOf(errors[0]));
  }
}

std::string candidateErrors(const AutoChoice& choice) {
  std::string out;
  for (const AutoCandidate& c : choice.candidates) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} amax {:.6g}", calibratorName(c.calibrator), c.amax);
    if (c.error) out += fmt::format(" error {:.3e}", *c.error);
  }
  return out;
}

}  // namespace

std::string boundedByConstruction(const Value& value) {
  // A bound on a moved or reshaped value bounds the result.
  const Node* producer = producerOfNumbers(value);
  if (producer == nullptr) return {};
  for (const char* op : {"Softmax", "Sigmoid", "HardSigmoid", "Tanh"}) {
    if (producer->is(op)) return op;
  }
  if (producer->is("Clip") && clipHasConstantBounds(*producer)) return "Clip";
  return {};
}

FakeQuantization symmetricInt8(const TensorStatistics& /*stats*/, double amax) {
  FakeQuantization q;
  // A zero range gets insert-qdq's kZeroRangeScale (2^-20): any positive scale keeps 0 exact.
  q.scale = amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f / 1048576.0f;
  return q;
}

std::vector<AutoCandidate> autoCandidates(const TensorStatistics& stats,
                                          const CalibratorSpec& spec) {
  std::vector<AutoCandidate> out;
  for (CalibratorKind kind : kAutoCandidateKinds) {
    CalibratorSpec one = spec;
    one.kind = kind;
    out.push_back({kind, computeAmax(stats, one), std::nullopt});
  }
  return out;
}

std::vector<AutoChoice> chooseAutoRanges(analysis::SampleWorkers& workers, const Model& model,
                                         std::span<const AutoTensor> tensors,
                                         const CalibratorSpec& spec,
                                         const QuantizedWeights& weights,
                                         std::span<const analysis::Sample> samples,
                                         const FakeQuantizer& quantizer, AutoOutputCheck* check) {
  std::vector<AutoChoice> choices(tensors.size());
  std::vector<ProbeTensor> judged;
  std::vector<std::vector<double>> distinct(tensors.size());  // amax values judged, per tensor
  for (size_t t = 0; t < tensors.size(); ++t) {
    const AutoTensor& tensor = tensors[t];
    if (tensor.value == nullptr || tensor.statistics == nullptr) {
      throw Error(ErrorKind::Internal, model.sourcePath, {}, "auto calibration of a null tensor");
    }
    AutoChoice& choice = choices[t];
    CalibratorSpec own = spec;
    if (tensor.levels > 0) own.levels = tensor.levels;
    choice.candidates = autoCandidates(*tensor.statistics, own);
    choice.chosen = CalibratorKind::Max;
    choice.amax = choice.candidates.front().amax;
    if (!(choice.amax > 0)) {
      choice.reason = "every value was 0";
      continue;
    }
    if (std::string op = boundedByConstruction(*tensor.value); !op.empty()) {
      choice.reason = fmt::format(
          "bounded by construction ({} output): not clipped below its "
          "observed max",
          op);
      continue;
    }
    for (const AutoCandidate& c : choice.candidates) {
      if (std::find(distinct[t].begin(), distinct[t].end(), c.amax) == distinct[t].end()) {
        distinct[t].push_back(c.amax);
      }
    }
    if (distinct[t].size() == 1) {
      choice.reason = "all candidates equal";
      continue;
    }
    if (tensor.uses.empty() || samples.empty()) {
      choice.reason = tensor.uses.empty() ? "no consumer to judge by" : "no sample to judge on";
      continue;
    }
    ProbeTensor probe;
    probe.index = t;
    probe.value = tensor.value;
    probe.uses = tensor.uses;
    for (double amax : distinct[t]) probe.candidates.push_back(quantizer(*tensor.statistics, amax));
    judged.push_back(std::move(probe));
  }
  if (judged.empty()) return choices;

  std::vector<std::vector<double>> errors =
      measureConsumerErrors(workers, model, judged, weights, samples);
  for (size_t j = 0; j < judged.size(); ++j) {
    const size_t t = judged[j].index;
    AutoChoice& choice = choices[t];
    double best = std::numeric_limits<double>::infinity();
    bool any = false;
    for (AutoCandidate& c : choice.candidates) {
      const size_t k = static_cast<size_t>(
          std::find(distinct[t].begin(), distinct[t].end(), c.amax) - distinct[t].begin());
      c.error = errors[j][k];
      // Strictly smaller only: on equal errors the earlier (wider) candidate stays.
      if (!any || *c.error < best) {
        best = *c.error;
        choice.chosen = c.calibrator;
        choice.amax = c.amax;
        any = true;
      }
    }
    choice.reason = "smallest consumer error";
  }
  AutoOutputCheck local;
  checkWholeModel(workers, model, tensors, choices, weights, samples, quantizer,
                  check != nullptr ? *check : local);
  return choices;
}

std::string describeOutputCheck(const AutoOutputCheck& check) {
  std::string out;
  for (const auto& [label, error] : check.errors) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {:.2f} dB", label, sqnrOf(error));
  }
  return fmt::format("auto's whole-model check (output SQNR on the judged samples): {}; kept {}",
                     out, check.kept);
}

std::string describeAutoChoice(const AutoChoice& choice) {
  return fmt::format("auto chose {} (amax {:.6g}; {}): {}", calibratorName(choice.chosen),
                     choice.amax, choice.reason, candidateErrors(choice));
}

}  // namespace qopt::quant
