// Activations whose output range is known without calibration: ReLU6 in each form exporters
// write it, Relu, Sigmoid and HardSigmoid. relu6-asym picks quantization parameters from that
// range.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::relu6 {

struct BoundedActivation {
  /// How it was written: clip-attributes, clip-inputs, relu-min, max-min, min-max, relu,
  /// sigmoid, hardsigmoid.
  std::string form;
  Value* input = nullptr;    // what the activation reads
  Value* output = nullptr;   // the activation's result
  std::vector<Node*> nodes;  // input to output order
  double lo = 0;
  double hi = 0;  // +infinity for Relu
  /// Whether the activation only clips (so a quantization whose range lies inside [lo, hi] can
  /// replace it), and whether its intermediate values have no other reader so it can go.
  bool isClip = false;
  bool removable = false;
};

/// The activation ending at `node` (its last node), or nullopt. `families` lists what to look
/// for: "relu6", "relu", "sigmoid", "hardsigmoid".
std::optional<BoundedActivation> matchBoundedActivation(Node* node,
                                                        const std::vector<std::string>& families);

}  // namespace qopt::relu6
