// The places a quantization pass puts Q/DQ: an activation with the input slots that will read
// its dequantized value, a constant weight with its per-channel axis, a bias to quantize as
// int32. insert-qdq's placement plans them; calibration and the emitter work on them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::qdq {

struct ActivationSite {
  Value* value = nullptr;
  std::vector<Use> uses;  // the input slots that will read the dequantized value
};

struct WeightSite {
  Node* node = nullptr;
  size_t input = 0;
  Value* weight = nullptr;
  int64_t axis = -1;  // -1: per tensor
};

/// A float bias to quantize as int32 (target ort): node input `input`, scaled by the
/// activation scale of `activation` times the weight scales of `weight`.
struct BiasSite {
  Node* node = nullptr;
  size_t input = 0;
  Value* bias = nullptr;
  Value* activation = nullptr;
  size_t weight = 0;  // index into Placement::weights
};

}  // namespace qopt::qdq
