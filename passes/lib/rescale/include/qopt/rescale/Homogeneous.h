// Which activations commute with positive per-channel scaling: f(x / s) = f(x) / s for s > 0.
// Relu does, and Clip without an upper bound (a Relu, or the identity). A Clip with an upper
// bound (ReLU6) would need that bound to become bound / s per channel, which ONNX's Clip cannot
// hold; LeakyRelu and PRelu commute too but are not handled.
#pragma once

#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::equalize {

/// Why `activation` forbids rescaling the channels through it, or "" when it commutes with
/// positive per-channel scaling.
std::string scalingRefusal(const Node& activation);

}  // namespace qopt::equalize
