// GPTQ (Frantar et al. 2023): the weight rows (input channels) are rounded one after another and
// each row's rounding error is spread over the rows not yet rounded, weighted by the inverse of
// the activations' Gram matrix H = X^T X, so that the MatMul's output on the calibration
// activations moves as little as possible. Each block's scale is chosen, as round to nearest
// chooses it, from the block's weights as they stand when the block is reached (the blocks keep
// their order along K: TensorRT's and ONNX Runtime's blocked layouts need that).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qopt/dense/BlockQuant.h"

namespace qopt::wq {

/// H's diagonal gets dampening * mean(diag H) added before it is inverted (GPTQ's 1%).
inline constexpr double kGptqDampening = 0.01;

/// The upper triangular U with H^-1 = U^T U (the Cholesky factor GPTQ's updates read), for the
/// K x K symmetric row-major H after dampening; channels that were never active (H_kk = 0) get
/// H_kk = 1. Empty when H is not positive definite even with a dampening 100 times larger.
std::vector<double> inverseCholeskyUpper(std::vector<double> h, int64_t k, double dampening);

/// The same factor in H's own storage, with no second K x K matrix (a 4096-wide layer's H is
/// 128 MiB): on success the upper triangle of the symmetric `h`, diagonal included, becomes
/// that U, its strict lower triangle keeps H's, and H's diagonal is returned for restoreGram.
/// nullopt, with `h` as it was, when inverseCholeskyUpper would be empty.
std::optional<std::vector<double>> factorInPlace(std::vector<double>& h, int64_t k,
                                                 double dampening);

/// H again from what factorInPlace left in `h` (its strict lower triangle) and H's diagonal.
void restoreGram(std::vector<double>& h, int64_t k, const std::vector<double>& diagonal);

/// w (K x N) quantized by GPTQ against `gram` (K x K, gramMatrix of the activations). nullopt,
/// with `why`, when H cannot be factored.
std::optional<BlockQuantized> quantizeGptq(const Matrix& w, const std::vector<double>& gram,
                                           const BlockScheme& scheme, std::string& why);

}  // namespace qopt::wq
