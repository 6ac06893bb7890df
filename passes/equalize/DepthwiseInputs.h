// Depthwise input balancing: the activation a depthwise convolution reads is quantized per
// tensor, so a channel whose values span a hundredth of the widest channel's range gets a
// hundredth of the int8 levels, and the convolution multiplies that channel's rounding error by
// its own weights, often the largest ones (BatchNormalization folded in). A depthwise
// convolution reads input channel c with output channel c's weights only, so dividing the
// activation's channel c by s_c and multiplying the weights of channel c by s_c is exact, and,
// with per-channel weight quantization (TensorRT's), costs the weights nothing: each channel's
// weights are rounded on their own scale whatever their magnitude. Choosing s_c = r_c / R, with
// r_c the channel's largest magnitude on the calibration data and R the widest channel's, gives
// every channel the full range: each one's rounding error shrinks by R / r_c.
//
// The division goes into whatever computes the activation when that is exact (the constants
// of an affine Mul/Add or a Div, a preceding Conv's output channels, through Relu;
// qopt/rescale/ScaleFolding.h), else into a Mul inserted before the depthwise convolutions: an
// elementwise scale right after the activation, which TensorRT's pointwise fusion merges into
// the producing layer.
#pragma once

#include <span>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/rescale/LinearLayer.h"

namespace qopt::equalize {

/// The depthwise convolutions (group equal to the input channels, any channel multiplier)
/// reading one activation at their data input.
struct DepthwiseGroup {
  Value* input = nullptr;
  std::vector<LinearLayer*> layers;
};

/// Every depthwise Conv of `graph` (main graph only) with a constant float32 weight, grouped by
/// input; those whose weight cannot be rescaled, or is 16-bit (rescaled by up to max-factor, it
/// would round again), get a missed remark.
std::vector<DepthwiseGroup> findDepthwiseGroups(Graph& graph, LinearLayerCache& layers,
                                                PassResult& result);

/// s_c = r_c / max r, not below 1 / maxFactor (the weights of a nearly silent channel would
/// otherwise grow without bound); 1 for channels that were never non-zero.
std::vector<double> balancingScales(std::span<const double> absMax, double maxFactor);

}  // namespace qopt::equalize
