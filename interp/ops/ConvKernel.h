// The Conv kernel with an epilogue, for the interpreter's fused steps (Conv followed by
// BatchNormalization, a residual Add and/or Relu/Clip).
#pragma once

#include "qopt/interp/Array.h"
#include "qopt/interp/Kernel.h"

namespace qopt::interp {

struct ConvEpilogue;

/// Runs the ONNX Conv node of `ctx` and applies `epilogue` to its output (null: none, as the
/// registered kernel), adding `residual` when the epilogue adds one. Returns false, having
/// computed nothing, when the epilogue does not fit this run: the convolution is not float32,
/// the epilogue's channels are not the filters, or `residual` is not a float32 tensor of the
/// output's shape (the caller then runs the nodes one by one).
bool runConv(KernelContext& ctx, const ConvEpilogue* epilogue, const Array* residual = nullptr);

}  // namespace qopt::interp
