// Subtracts a per-channel shift from a layer's bias, wherever the bias lives: a float constant
// (Conv's input 2, Gemm's C, scaled by beta), an int32 constant behind a DequantizeLinear
// (ONNX Runtime's QDQ format: requantized with its own scales), the constant of the Add that
// follows a MatMul; a layer without one gets one.
#pragma once

#include <string>
#include <vector>

#include "CorrectedLayers.h"

namespace qopt::biascorrect {

enum class BiasOutcome { Corrected, Added, Skipped };

/// Applies `shift` (one value per output channel) to `layer`'s bias. `why` receives the reason
/// when the bias is skipped (its shape does not hold one value per channel, it is shared with a
/// reader that is not this layer...).
BiasOutcome subtractFromBias(const CorrectedLayer& layer, const std::vector<double>& shift,
                             std::string& why);

}  // namespace qopt::biascorrect
