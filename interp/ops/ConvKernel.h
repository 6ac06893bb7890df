// The Conv kernel with an epilogue, for the interpreter's fused steps (Conv followed by
// BatchNormalization and/or Relu/Clip).
#pragma once

#include "qopt/interp/Kernel.h"

namespace qopt::interp {

struct ConvEpilogue;

/// Runs the ONNX Conv node of `ctx`; a float32 convolution applies `epilogue` to its output
/// (null: none, as the registered kernel).
void runConv(KernelContext& ctx, const ConvEpilogue* epilogue);

}  // namespace qopt::interp
