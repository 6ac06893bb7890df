// bias-correct: after insert-qdq, removes the mean error that quantization adds to each
// quantized Conv, Gemm and MatMul output, per output channel, by subtracting it from the layer's
// bias (a float bias in TensorRT's scheme; an int32 one, requantized, in ONNX Runtime's). The
// error is measured on the calibration data against the layer's float version from the
// pipeline's input model (ChannelShift.h: analytic, the weights' error (W_q - W) E[x]; or
// empirical, the whole layer's including its activation's quantization). A layer without a bias
// gets one (a MatMul an Add after it, which TensorRT fuses).
//
// The whole-model check. Each correction removes its layer's mean error against its float
// version, which lowers that layer's own error, yet the model's output can get worse: on the
// PP-OCRv4 recognizer with layers in FP16 and smooth's rescaling, the corrections took the
// calibration data's output from 31.3 to 16.9 dB (the evaluation lines from 92 to 80 %). So the
// corrected model's outputs are compared with the uncorrected one's, both against the input
// model on the samples the corrections were measured on (quant/OutputNoise.h), and the
// corrections are kept only where they do not lower the output SQNR by more than
// kCheckToleranceDb.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "BiasUpdate.h"
#include "ChannelShift.h"
#include "CorrectedLayers.h"
#include "qopt/analysis/ChannelAffine.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/PassOutcomes.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/quant/OutputNoise.h"

namespace qopt {
namespace {

using biascorrect::ShiftMode;

/// The loss of output SQNR (dB) the corrections may cost before they are dropped: the samples
/// the corrections were measured on do not resolve smaller changes (on random inputs, whose
/// means say nothing, corrections move the output by a few hundredths of a dB either way; the
/// first 8 of the direction classifier's 32 calibration lines, 2 logits each, said -3 dB where
/// all 32 and the evaluation lines say +0.3 and +0.4 dB).
constexpr double kCheckToleranceDb = 0.5;

/// Random samples when no data is given (a warning says that they prove little).
constexpr size_t kRandomSamples = 16;

class BiasCorrectPass : public Pass {
 public:
  BiasCorrectPass()
      : Pass("bias-correct",
             "Subtracts the mean per-channel error of each quantized Conv/Gemm/MatMul from its "
             "bias (after insert-qdq)") {}

  bool needsOriginalModel() const override { return true; }

  void validateOptions() const override {
    if (*samples_ < 0) failOption("samples", "must be 0 (all) or positive");
  }

  std::vector<Requirement> requirements() const override {
    return {{ModelProperty::Quantized,
             "run insert-qdq before it in the same pipeline (it corrects each quantized layer "
             "against its float version in the pipeline's input)"}};
  }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    for (const char* name : {"biases-corrected", "biases-added", "layers-skipped"}) {
      result.statistics[name] = 0;
    }
    const Model* original = context.originalModel();
    if (original == nullptr) {
      throw Error(ErrorKind::Internal, model.sourcePath, "pass 'bias-correct'",
                  "the pass manager kept no copy of the input model");
    }
    std::vector<biascorrect::CorrectedLayer> layers = biascorrect::findCorrectedLayers(
        model, *original, context.nameMap(), analysis::channelAffines(context), result);
    result.statistics["layers-skipped"] = static_cast<int64_t>(result.remarks.size());
    if (layers.empty()) {
      result.note("model",
                  "no quantized Conv, Gemm or MatMul with a float counterpart in the "
                  "input model: nothing to correct (run bias-correct in the pipeline "
                  "that quantizes, after insert-qdq)");
      return result;
    }
    analysis::SampleSource source =
        analysis::sampleSource(model.graph(), context, /*preferEval=*/false,
                               static_cast<size_t>(*samples_), kRandomSamples);
    const std::string& origin = source.origin();
    if (source.isRandom()) {
      context.diagnostics().warning(fmt::format(
          "bias-correct: no --calib-data given: measuring on {} random samples; the means of "
          "real inputs differ",
          source.expectedCount().value_or(0)));
    }
    analysis::SampleWorkers& workers = analysis::sampleWorkers(context);
    size_t samples = 0;
    std::vector<biascorrect::ChannelShift> shifts =
        biascorrect::measureChannelShifts(workers, model, layers, *mode_, source, &samples);
    std::vector<size_t> chosen;
    for (size_t k = 0; k < layers.size(); ++k) {
      if (shifts[k].rescaledShare > biascorrect::kMaxRescaledShare) {
        result.statistics.add("layers-skipped");
        result.missed(
            layers[k].node->describe(),
            fmt::format("bias not corrected: its float version in the input model "
                        "computes something else ({:.0f}% of its output in channels "
                        "off by more than {:.0f}%, one {:.3g} times the float one; "
                        "SQNR {:.1f} dB): a pass before insert-qdq rescaled the "
                        "layer without recording it",
                        100 * shifts[k].rescaledShare, 100 * biascorrect::kMaxGainDeviation,
                        shifts[k].worstGain, shifts[k].sqnrDb));
        continue;
      }
      const std::vector<double>& mean = shifts[k].mean;
      if (!std::all_of(mean.begin(), mean.end(), [](double m) { return std::isfinite(m); })) {
        result.statistics.add("layers-skipped");
        result.missed(layers[k].node->describe(),
                      "bias not corrected: its mean error is not finite");
        continue;
      }
      chosen.push_back(k);
    }
    Json& out = context.results()["bias-correct"];
    out = Json::object();
    if (*check_ && !chosen.empty() &&
        !outputsImprove(model, *original, context, layers, shifts, chosen, source, result, out)) {
      chosen.clear();
    }
    for (size_t k : chosen) apply(layers[k], shifts[k], result);
    result.changed = result.statistics["biases-corrected"] + result.statistics["biases-added"] > 0;
    out["mode"] = std::string(*mode_ == ShiftMode::Analytic ? "analytic" : "empirical");
    out["data"] = origin;
    out["samples"] = static_cast<uint64_t>(samples);
    out["biases-changed"] =
        result.statistics["biases-corrected"] + result.statistics["biases-added"];
    analysis::publishOutcome(context, analysis::BiasCorrectOutcome{out["biases-changed"].asInt()});
    return result;
  }

 private:
  // The whole-model check (above): the chosen corrections applied to a copy of `model`,
  // whose outputs on the samples the corrections were measured on are compared with `model`'s,
  // both against the input model. False (with a remark) when the corrections raise the output
  // error.
  bool outputsImprove(const Model& model, const Model& original, PassContext& context,
                      const std::vector<biascorrect::CorrectedLayer>& layers,
                      const std::vector<biascorrect::ChannelShift>& shifts,
                      const std::vector<size_t>& chosen, analysis::SampleSource& source,
                      PassResult& result, Json& out) const {
    std::unique_ptr<Model> corrected = model.clone();
    PassResult scratch;
    std::vector<biascorrect::CorrectedLayer> copies = biascorrect::findCorrectedLayers(
        *corrected, original, context.nameMap(), analysis::channelAffines(context), scratch);
    if (copies.size() != layers.size()) {
      throw Error(ErrorKind::Internal, model.sourcePath, "pass 'bias-correct'",
                  "the copy of the model has other layers to correct");
    }
    for (size_t k : chosen) {
      std::string why;
      biascorrect::subtractFromBias(copies[k], shifts[k].mean, why);
    }
    const quant::OutputNoise noise(analysis::sampleWorkers(context), original, source,
                                   analysis::keptBytes(context),
                                   "bias-correct: checking the outputs");
    const size_t samples = noise.samples();
    const std::optional<double> before = noise.of(model);
    const std::optional<double> after = noise.of(*corrected);
    if (!before || !after) {
      result.note("model",
                  "the corrections are not checked on the outputs: the model has "
                  "other outputs than the input model");
      return true;
    }
    auto db = [](double n) { return n > 0 ? -10.0 * std::log10(n) : INFINITY; };
    auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json("inf"); };
    Json check = Json::object();
    check["samples"] = static_cast<uint64_t>(samples);
    check["uncorrected-sqnr-db"] = number(db(*before));
    check["corrected-sqnr-db"] = number(db(*after));
    const bool kept = db(*after) >= db(*before) - kCheckToleranceDb;
    check["kept"] = kept;
    out["output-check"] = std::move(check);
    if (kept) {
      result.note("model", fmt::format("with the corrections the output SQNR on {} calibration "
                                       "samples goes from {:.2f} to {:.2f} dB (outputs of a "
                                       "Softmax, LogSoftmax or Sigmoid at their logits): kept",
                                       samples, db(*before), db(*after)));
      return true;
    }
    result.statistics.add("corrections-rejected", static_cast<int64_t>(chosen.size()));
    result.missed("model",
                  fmt::format("no bias corrected: together the {} corrections lower the output "
                              "SQNR on {} calibration samples from {:.2f} to {:.2f} dB (outputs "
                              "of a Softmax, LogSoftmax or Sigmoid at their logits), although "
                              "each lowers its own layer's error",
                              chosen.size(), samples, db(*before), db(*after)));
    return false;
  }

  static void apply(const biascorrect::CorrectedLayer& layer,
                    const biascorrect::ChannelShift& measured, PassResult& result) {
    const std::string subject = layer.node->describe();
    const std::vector<double>& shift = measured.mean;
    double largest = 0;
    for (double s : shift) largest = std::max(largest, std::fabs(s));
    std::string why;
    const biascorrect::BiasOutcome outcome = biascorrect::subtractFromBias(layer, shift, why);
    if (outcome == biascorrect::BiasOutcome::Skipped) {
      result.statistics.add("layers-skipped");
      result.missed(subject, "bias not corrected: " + why);
      return;
    }
    const bool added = outcome == biascorrect::BiasOutcome::Added;
    result.statistics.add(added ? "biases-added" : "biases-corrected");
    result.applied(subject, fmt::format("bias {} over {} channels (largest mean error {:.4g} "
                                        "removed; SQNR {:.1f} dB against its float version)",
                                        added ? "added" : "corrected", shift.size(), largest,
                                        measured.sqnrDb));
  }

  EnumOption<ShiftMode> mode_{
      *this,
      "mode",
      ShiftMode::Analytic,
      "analytic: the weights' error (W_q - W) E[x]; empirical: the whole layer's, its "
      "activation's quantization included",
      {{ShiftMode::Analytic, "analytic"}, {ShiftMode::Empirical, "empirical"}}};
  Option<int64_t> samples_{*this, "samples", 0, "Calibration samples to measure on (0: all)"};
  Option<bool> check_{*this, "check", true,
                      "Keep the corrections only if, together, they do not lower the output "
                      "SQNR against the input model by more than 0.5 dB on the samples they "
                      "were measured on"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("bias-correct", QOPT_VERSION_STRING, qopt::BiasCorrectPass)
