// The pairs of linear layers that cross-layer equalization rescales: a Conv, ConvTranspose, Gemm
// or MatMul whose output, alone or through one activation that commutes with positive
// per-channel scaling, is the data input of the next linear layer and read by nothing else.
//
// Activations allowed between the two: none, Relu, and Clip without an upper bound (a Relu).
// Relu(x / s) = Relu(x) / s for s > 0, so scaling channel i of the first layer by 1/s_i and the
// second layer's input channel i by s_i leaves the output unchanged. A Clip with an upper
// bound (ReLU6) would need that bound to become 6/s_i per channel: ONNX's Clip takes scalar
// bounds only, and replacing it by Relu and a Min with a per-channel constant would cost an
// elementwise layer that TensorRT fuses into the convolution less reliably than its Clip
// activation, and would turn relu6-asym's known [0, 6] range into a per-channel one that a
// per-tensor activation scale cannot use. Such pairs are left alone with a remark. LeakyRelu
// and PRelu are left out as well.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/rescale/LinearLayer.h"

namespace qopt::equalize {

struct LayerPair {
  LinearLayer* first = nullptr;
  LinearLayer* second = nullptr;
  Node* activation = nullptr;      // Relu or an unbounded Clip; nullptr when none
  Value* preActivation = nullptr;  // the first layer's output
  /// What equalizePairs multiplied the first layer's output channels by, over all sweeps.
  std::vector<double> outputFactor;
};

/// The layers and pairs of a graph; a layer in two pairs (a chain) is one object.
struct LayerPairs {
  LinearLayerCache layers;
  std::vector<LayerPair> pairs;  // in graph order of the second layer
};

/// Finds the pairs of `graph` (main graph only); every near miss (two linear layers joined by
/// something that forbids rescaling) gets a missed remark and a counter in `result`.
LayerPairs findLayerPairs(Graph& graph, PassResult& result);

/// The equalizing factors of one pair: s_i = sqrt(r1_i * r2_i) / r2_i, with r1 the largest
/// |w| of the first layer's output channel i and r2 that of the second layer's input channel
/// i; 1 where either range is 0.
std::vector<double> equalizingScales(const LinearLayer& first, const LinearLayer& second);

struct EqualizeOutcome {
  int sweeps = 0;
  bool converged = false;
  double largestLastChange = 0;  // max |s - 1| of the last sweep
};

/// Rescales every pair, in order, sweep after sweep, until no factor of a sweep differs from 1
/// by more than `tolerance` or `maxSweeps` sweeps have run (a chain needs several: rescaling
/// a layer for its second pair changes the ranges its first pair balanced).
EqualizeOutcome equalizePairs(std::vector<LayerPair>& pairs, int maxSweeps, double tolerance);

}  // namespace qopt::equalize
