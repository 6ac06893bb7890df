// calibrator=auto: per activation tensor, the threshold of whichever calibrator (max,
// percentile, entropy, mse) makes what the tensor's consumers compute closest to float; then a
// check of the whole model's outputs against each calibrator everywhere (AutoOutputCheck).
//
// The candidates come from the statistics of the one calibration pass (their histograms). Each
// distinct candidate is then judged on a few calibration samples (kAutoCalibrationSamples, the
// first ones in data order; only these samples' model inputs are kept, so memory does not grow
// with the model's tensors) by a probe model: the float model plus, after each consumer of each
// judged tensor, one twin of the consumer per candidate that reads the tensor through a
// QuantizeLinear/DequantizeLinear pair at the candidate's scale (every other input as in the
// float model, except weights the caller gives in their quantized form). The twins' outputs are
// compared with the consumer's own float output as the interpreter produces them, so nothing is
// stored per tensor.
//
// The criterion: the mean over the tensor's consumers of noise / signal of the consumer's first
// output (sum of (twin - float)^2 over sum of float^2, over the judged samples), i.e. the mean
// inverse SQNR of the consumers' outputs with only this tensor (and the weights) quantized. A
// consumer followed only by elementwise activations TensorRT fuses into it (Relu, Clip,
// HardSwish...: a chain of single readers) is compared after them, as the fused layer computes:
// an error they remove (a negative value under a Relu) costs nothing. The
// smallest wins; on equal errors the first in the order max, percentile, entropy, mse (the
// widest range first: equal errors mean clipping bought nothing). Elementwise consumers
// (a residual Add) need no special case: the twin measures them as exactly as a Conv.
//
// A tensor bounded by construction (the output of Softmax, Sigmoid, HardSigmoid, Tanh, or Clip
// with constant bounds, also seen through Reshape, Transpose, Flatten, Squeeze, Unsqueeze and
// Identity) is never clipped below its observed max: values near its bound (an attention
// weight of 1) are few but carry the result, and the few samples judged may not show it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/ir/Graph.h"
#include "qopt/quant/Calibration.h"

namespace qopt::quant {

/// The calibration samples kept to judge the candidates (their model inputs only).
inline constexpr size_t kAutoCalibrationSamples = 8;

/// The calibrators auto chooses among, in the order that breaks ties.
inline constexpr CalibratorKind kAutoCandidateKinds[] = {
    CalibratorKind::Max, CalibratorKind::Percentile, CalibratorKind::Entropy, CalibratorKind::Mse};

/// How a candidate quantizes the tensor in the probe: QuantizeLinear then DequantizeLinear with
/// this scale and zero point, int8 or uint8.
struct FakeQuantization {
  float scale = 1;
  int64_t zeroPoint = 0;
  bool isUnsigned = false;
};

struct AutoCandidate {
  CalibratorKind calibrator = CalibratorKind::Max;
  double amax = 0;
  /// The consumers' mean noise / signal; nullopt when it was not measured (a bounded tensor, or
  /// every candidate equal).
  std::optional<double> error;
};

struct AutoChoice {
  CalibratorKind chosen = CalibratorKind::Max;
  double amax = 0;
  /// Why: "smallest consumer error", "bounded by construction (Softmax)", "all candidates
  /// equal", "every value was 0".
  std::string reason;
  std::vector<AutoCandidate> candidates;  // in kAutoCandidateKinds order
};

/// The op type that bounds `value` by construction (see above), or "" when none does.
std::string boundedByConstruction(const Value& value);

/// One activation auto chooses a threshold for.
struct AutoTensor {
  const Value* value = nullptr;  // in the model given to chooseAutoRanges
  /// The input slots that will read the quantized tensor (the consumers judged).
  std::vector<Use> uses;
  const TensorStatistics* statistics = nullptr;
  /// Quantized levels on the positive side for this tensor (0: the spec's).
  int levels = 0;
};

/// Weights as the quantized model will read them, by (node, input index) of the model given to
/// chooseAutoRanges: the twins read these instead of the float weights.
using QuantizedWeights = std::map<std::pair<const Node*, size_t>, Tensor>;

/// Turns a candidate threshold into the quantization the probe applies.
using FakeQuantizer = std::function<FakeQuantization(const TensorStatistics&, double amax)>;

/// int8 symmetric, scale amax / 127 (TensorRT's activations); a 0 amax gets scale 2^-20.
FakeQuantization symmetricInt8(const TensorStatistics& stats, double amax);

/// The threshold of every candidate calibrator (spec.kind is ignored; spec.percentile and
/// spec.levels are used).
std::vector<AutoCandidate> autoCandidates(const TensorStatistics& stats,
                                          const CalibratorSpec& spec);

/// The whole-model check that follows the per-tensor choices: the model's outputs (mean noise /
/// signal over its float outputs, on the same samples) with every tensor quantized at once at
/// its per-tensor choice, and with every tensor at one calibrator's threshold (tensors bounded
/// by construction at their max). A calibrator that beats the per-tensor choices there replaces
/// them: the consumers' errors are judged one tensor at a time, and their sum over a deep model
/// can be worse than one calibrator everywhere.
struct AutoOutputCheck {
  bool run = false;
  /// "per-tensor choices", then each calibrator's name, with its output error (noise / signal).
  std::vector<std::pair<std::string, double>> errors;
  std::string kept;  // the winner's label
};

/// The choice for each tensor, in the order given, judging on `samples` (the caller passes at
/// most kAutoCalibrationSamples). Runs the probe once per sample, then the whole-model check (its
/// outcome in `check` when given), samples on `workers`; the result does not depend on the
/// thread count. Throws qopt::Error naming the sample when the probe fails to run, and (Internal)
/// for a tensor or use that is not in `model`.
std::vector<AutoChoice> chooseAutoRanges(analysis::SampleWorkers& workers, const Model& model,
                                         std::span<const AutoTensor> tensors,
                                         const CalibratorSpec& spec,
                                         const QuantizedWeights& weights,
                                         std::span<const analysis::Sample> samples,
                                         const FakeQuantizer& quantizer = symmetricInt8,
                                         AutoOutputCheck* check = nullptr);

/// One line for remarks: the output SQNR of each assignment the check ran, and the one kept.
std::string describeOutputCheck(const AutoOutputCheck& check);

/// One line for remarks: "mse (amax 3.2): consumer error max 1.2e-03, percentile 9.1e-04, ...".
std::string describeAutoChoice(const AutoChoice& choice);

/// The smallest output error a replacement must reach to replace the first assignment (the
/// per-tensor choices): kCheckMinGainDb better in SQNR. A few judged samples cannot tell closer
/// outcomes apart (GPT-2: 0.02 dB on 8 samples, 1.9 points of held-out agreement the other way).
inline constexpr double kCheckMinGainDb = 0.2;

/// The assignment the check keeps: the one of least error if that beats errors[0] by
/// kCheckMinGainDb, else 0. Ties go to the earlier.
size_t keptAssignment(std::span<const double> errors);

}  // namespace qopt::quant
