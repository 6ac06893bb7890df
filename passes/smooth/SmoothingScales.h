// SmoothQuant's per-channel factors (Xiao et al. 2022) and the choice of alpha.
//
// A layer Y = X W (W as K x N: input channel j, output channel n) computes the same with
// X' = X / s and W' = diag(s) W. With s_j = max|X_j|^alpha / max|W_j|^(1 - alpha) the
// activation's outlier channels shrink and the weight rows reading them grow: alpha = 0 leaves
// X alone and flattens W's rows, alpha = 1 flattens X's channels. alpha=auto measures, on rows
// of the calibration data, the error that int8 quantization as qopt places it for TensorRT
// (per-tensor symmetric activation with amax = the largest |X'| seen, per-output-channel
// symmetric weights) leaves in Y, for alpha = 0, 0.05, ..., 1, and keeps the smallest. The
// products go to BLAS on the int8 codes, exact in double whatever its summation order, and are
// scaled afterwards (a ViT-B/16's search: 87 s on 2 cores, about 15 minutes in plain loops).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace qopt::smooth {

/// A weight as K x N doubles, row-major (row j: what input channel j contributes).
struct WeightMatrix {
  size_t rows = 0, cols = 0;
  std::vector<double> values;
};

/// s_j = actMax_j^alpha / weightMax_j^(1 - alpha); 1 where either maximum is 0 (a dead
/// channel gives nothing to balance).
std::vector<double> smoothingScales(std::span<const double> actMax,
                                    std::span<const double> weightMax, double alpha);

/// The largest |w| of each row over several weights sharing their input (K rows each).
std::vector<double> rowAbsMax(std::span<const WeightMatrix> weights);

/// Sum over layers and rows of the squared difference between the int8 fake-quantized
/// Q(X / s) Q(diag(s) W) and the float X W. `rows` holds rowCount x K activations; `actMax`
/// the largest |X_j| over all the data (it sets the activation's per-tensor amax).
double quantizedError(std::span<const float> rows, std::span<const double> actMax,
                      std::span<const WeightMatrix> weights, std::span<const double> scales);

struct AlphaChoice {
  double alpha = 0.5;
  double error = 0;            // at alpha
  double unsmoothedError = 0;  // with s = 1
};

/// The alpha of {0, 0.05, ..., 1} with the smallest quantizedError (the smallest alpha on ties).
AlphaChoice searchAlpha(std::span<const float> rows, std::span<const double> actMax,
                        std::span<const WeightMatrix> weights);

}  // namespace qopt::smooth
