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

namespace qopt::biascorrect {

enum class ShiftMode { Analytic, Empirical };

/// One mean per output channel for each layer, in the order given. Throws qopt::Error naming
/// the sample when the probe fails to run.
std::vector<std::vector<double>> measureChannelShifts(const Model& model,
                                                      std::span<const CorrectedLayer> layers,
                                                      ShiftMode mode,
                                                      std::span<const analysis::Sample> samples);

}  // namespace qopt::biascorrect
