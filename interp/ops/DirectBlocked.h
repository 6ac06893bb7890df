// Direct convolution of float tensors with few inputs per output (a network's first layer: 3
// channels, 3x3 window), 16 output channels at a time. im2col + GEMM is a poor fit there: the
// column matrix is 27 rows by a whole image, and a GEMM with so short a reduction spends its
// time packing. Here every (input channel, tap) is one vector multiply-add of 16 filters' weights
// by one input pixel, for 8 output pixels in flight, straight from a zero-padded copy of the
// input; the results are transposed into the output planes through the channel's epilogue.
#pragma once

#include <cstdint>

#include "Convolution.h"
#include "WindowGeometry.h"

namespace qopt::interp {

/// Whether directBlocked handles the convolution: 2-D, one group, at most `maxReduction`
/// products per output.
bool directBlockedFits(const ConvShape& s, const WindowGeometry& g, int64_t maxReduction);

/// y = conv(x, w) + bias (bias may be null), then `epilogue` (may be null) with `residual` (y's
/// shape, null when the epilogue adds none). Each output sums bias, then input channels, then
/// taps row by row.
void directBlocked(const float* x, const float* w, const float* bias, float* y, const ConvShape& s,
                   const WindowGeometry& g, ThreadPool* pool, const ConvEpilogue* epilogue,
                   const float* residual);

}  // namespace qopt::interp
