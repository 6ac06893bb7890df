// Depthwise convolution of float tensors, 16 channels at a time. The planes of 16 channels are
// transposed into one zero-padded buffer that holds, per pixel, the 16 channels' values side by
// side; every tap is then one vector multiply-add for all 16 channels, and the results are
// transposed back into the output planes through the channel's epilogue. A plane-at-a-time
// kernel spends most of its time on the per-plane work (padding, gathers, short rows) when the
// planes are small, as they are in the later layers of MobileNets; this one has none of it.
//
// Each output is the same sum, in the same order (bias, then the taps row by row, padding
// included), as the plane-at-a-time kernel computes, so the two give the same bits.
#pragma once

#include <cstdint>

#include "Convolution.h"
#include "WindowGeometry.h"

namespace qopt::interp {

/// Whether depthwiseBlocked handles `g` (2-D, filters a multiple of channels, one channel per
/// group) with a padded buffer of at most `maxBufferBytes` per 16 channels.
bool depthwiseBlockedFits(const ConvShape& s, const WindowGeometry& g, int64_t maxBufferBytes);

/// y = depthwise conv(x, w) + bias (bias may be null), then `epilogue` (may be null) with
/// `residual` (y's shape, null when the epilogue adds none). With `columnReuse` (the default),
/// rows of horizontal stride and dilation 1 load each input column once for the kernel row's
/// taps that read it; without it every tap loads its own (the same bits either way).
void depthwiseBlocked(const float* x, const float* w, const float* bias, float* y,
                      const ConvShape& s, const WindowGeometry& g, ThreadPool* pool,
                      const ConvEpilogue* epilogue, const float* residual, bool columnReuse = true);

}  // namespace qopt::interp
