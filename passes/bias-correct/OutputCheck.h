// bias-correct's whole-model check. Each layer's correction removes that layer's mean error
// against its float version, which lowers the layer's own error, yet the model's output can get
// worse: on the PP-OCRv4 recognizer with layers in FP16 and smooth's rescaling, corrections that
// each lower their layer's error took the calibration data's output from 31.3 to 16.9 dB (the
// evaluation lines from 92 to 80 %). So the corrected model's outputs are compared with the
// uncorrected one's, both against the pipeline's input model, and the corrections are kept only
// where they do not lower the output SQNR by more than kCheckToleranceDb.
#pragma once

#include <span>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/ir/Graph.h"

namespace qopt::biascorrect {

/// The loss of output SQNR (dB) the corrections may cost before they are dropped: the samples
/// the corrections were measured on do not resolve smaller changes (on random inputs, whose
/// means say nothing, corrections move the output by a few hundredths of a dB either way; the
/// first 8 of the direction classifier's 32 calibration lines, 2 logits each, said -3 dB where
/// all 32 and the evaluation lines say +0.3 and +0.4 dB).
inline constexpr double kCheckToleranceDb = 0.5;

/// For each candidate: the mean over the compared outputs of noise / signal (sum of squared
/// error over sum of squared reference, over `samples`) against `reference`. An output that a
/// Softmax, LogSoftmax or Sigmoid makes in the reference and in every candidate is compared at
/// that op's input, the logits; outputs whose numbers are not float (indices) are not compared.
/// Empty when the candidates' outputs do not correspond to the reference's (another count, or
/// another number of values).
std::vector<double> outputNoise(const Model& reference, std::span<const Model* const> candidates,
                                std::span<const analysis::Sample> samples);

}  // namespace qopt::biascorrect
