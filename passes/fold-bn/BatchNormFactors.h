// An inference-mode BatchNormalization as the per-channel affine map it computes:
//   y[n, c, ...] = scale[c] * x[n, c, ...] + shift[c]
// with scale = gamma / sqrt(var + epsilon) and shift = beta - mean * scale, in double.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "Refusal.h"
#include "qopt/ir/Graph.h"

namespace qopt::foldbn {

struct BatchNormFactors {
  int64_t channels = 0;
  std::vector<double> scale;
  std::vector<double> shift;
};

/// Reads `bn` (a BatchNormalization of the default domain). nullopt, with the reason in
/// `refusal`, when it trains (is_test=0 before opset 7, training_mode=1, or its running or
/// saved statistics outputs are read), uses per-activation statistics (spatial=0), or its
/// parameters are not constants of one channel count with a positive variance + epsilon.
std::optional<BatchNormFactors> readBatchNorm(const Node& bn, Refusal& refusal);

}  // namespace qopt::foldbn
