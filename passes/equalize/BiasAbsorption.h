// High-bias absorption (Nagel et al. 2019, section 4.1), after equalization: a channel whose
// pre-activation x_i never falls below c_i > 0 passes Relu unchanged on that range, so
//   W2 Relu(x) + b2 = W2 (Relu(x - c) + c) + b2 = W2 Relu(x - c) + (b2 + W2 c)
// and c moves from the first layer's bias into the second's. The paper takes
// c_i = max(0, beta_i - 3 gamma_i) from BatchNorm statistics (the pre-activation's mean less
// three standard deviations); after fold-bn those are gone, so qopt measures x_i on the
// calibration data and takes c_i = max(0, min(observed minimum, mean - 3 std)): never above
// the observed minimum, so the result is exact on every calibration sample, and no closer to it
// than the paper's 3-sigma bound, so that inputs the calibration data did not show rarely fall
// below c_i (elsewhere the result is exact wherever x_i stays above c_i).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "LayerPairs.h"

namespace qopt::equalize {

/// Why `pair` cannot take absorption, or "" when it can: it needs a Relu between the layers,
/// a first layer with a bias (not a MatMul), and a second layer that adds W2 c to every output
/// position (a Conv without padding, a Gemm; not a ConvTranspose or a bias-less MatMul).
std::string absorptionRefusal(const LayerPair& pair);

/// The amount to absorb per channel: max(0, min(minimum, mean - 3 std)); 0 where nothing was
/// observed.
std::vector<double> absorbableShift(std::span<const double> minimum, std::span<const double> mean,
                                    std::span<const double> standardDeviation);

/// Moves `shift` from the first layer's bias into the second's: b1 -= c, b2 += W2 c.
void absorbShift(LayerPair& pair, std::span<const double> shift);

}  // namespace qopt::equalize
