// Activation-aware weight quantization (AWQ, Lin et al. 2023): input channels that carry large
// activations matter more to a MatMul's output, so their weight rows are scaled up by s before
// quantization (less relative rounding error on them) and the activation is divided by s:
//   Y = X W = (X / s) (s W) ~ (X / s) Q(s W).
// s = mean|x|^alpha per input channel, divided by sqrt(max(s) * min(s)) as AWQ does; alpha is
// searched on a grid, minimising the output error on the calibration activations. alpha = 0 is
// plain round to nearest, so the chosen alpha is never worse than RTN on the data it was chosen on.
#pragma once

#include <cstdint>
#include <vector>

#include "qopt/dense/BlockQuant.h"

namespace qopt::wq {

inline constexpr int kAwqGridPoints = 20;

/// Activations of one tensor, as rows of K values (every leading dim flattened).
struct ActivationRows {
  int64_t k = 0;
  std::vector<double> values;  // rows * k
  int64_t rows() const { return k > 0 ? static_cast<int64_t>(values.size()) / k : 0; }
};

struct AwqChoice {
  double alpha = 0;
  std::vector<double> scales;  // s, one per input channel (K)
  double rtnError = 0;         // summed squared output error with alpha = 0 (RTN)
  double bestError = 0;        // the same at the chosen alpha
  double referenceEnergy = 0;  // summed squared float output, for SQNR
};

/// The Gram matrix G = X^T X (K x K, row-major) of the rows: the squared output error of a
/// weight error D is sum_n d_n^T G d_n (quadraticError), so comparing candidate weights costs
/// K^2 N instead of rows * K * N.
std::vector<double> gramMatrix(const ActivationRows& x);

/// sum_n d_n^T G d_n for the K x N matrix d.
double quadraticError(const std::vector<double>& g, const Matrix& d);

/// Searches alpha in [0, 1] (kAwqGridPoints points, ends included) for weights that all read
/// the activation `x` (a group shares one s, since one division of x serves them all).
AwqChoice searchAwqScales(const ActivationRows& x, const std::vector<const Matrix*>& weights,
                          const BlockScheme& scheme);

/// w with row k multiplied by s[k].
Matrix scaleRows(const Matrix& w, const std::vector<double>& s);

}  // namespace qopt::wq
