// The per-output-channel mean error of each corrected layer over the calibration samples, in one
// probe run per sample: the current model plus, after each layer, a copy of its float layer
// (CorrectedLayers.h) reading the same activation, compared as the interpreter computes them.
//
//   analytic   the layer's quantized weights against its float ones, both reading the float
//              activation: E[W_q x] - E[W x] = (W_q - W) E[x] per output channel (for a 1x1
//              Conv, a Gemm or a MatMul exactly the product with the per-input-channel mean of
//              x; a wider Conv also counts its zero padding at the borders).
//   empirical  the quantized layer as the model runs it (activation through its Q/DQ too)
//              against the float layer on the float activation: also the mean error of the
//              activation's quantization (its clipping).
// Both compare each layer with its own float version on the same input, so correcting every
// layer at once counts no upstream error twice.
#pragma once

#include <span>
#include <vector>

#include "CorrectedLayers.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/SampleStream.h"

namespace qopt::biascorrect {

enum class ShiftMode { Analytic, Empirical };

struct ChannelShift {
  std::vector<double> mean;  // one per output channel
  /// The layer's output against its float version's over all samples.
  double sqnrDb = 0;
  /// The gain of each channel is the least-squares slope of the layer's output on its float
  /// version's: quantization noise leaves it near 1 (a weak channel, its output nearly
  /// cancelled, strays further). A float version in the input model that computes something
  /// else, a layer that a pass between it and insert-qdq rescaled per channel without
  /// recording it (CorrectedLayers.h), moves most of the output's energy to gains far from 1.
  double worstGain = 1;      // furthest from 1 among channels with a share of the signal
  double rescaledShare = 0;  // of the float output's energy, in channels off by kMaxGainDeviation
};

/// A channel whose gain is further than this from 1 counts as rescaled.
inline constexpr double kMaxGainDeviation = 0.1;
/// The share of the output's energy in rescaled channels above which the layer's float version
/// is taken to compute something else.
inline constexpr double kMaxRescaledShare = 0.1;

/// One mean per output channel for each layer, in the order given, over the samples of
/// `source` streamed on `workers` (each sample's sums folded in order, then dropped). Throws
/// qopt::Error naming the sample when the probe fails to run, and (Input) when `source` holds
/// no sample.
std::vector<ChannelShift> measureChannelShifts(analysis::SampleWorkers& workers, const Model& model,
                                               std::span<const CorrectedLayer> layers,
                                               ShiftMode mode, analysis::SampleSource& source,
                                               size_t* samples = nullptr);

}  // namespace qopt::biascorrect
