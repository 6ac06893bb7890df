// What TensorRT's If takes (docs/tensorrt.md, "Control flow"): a scalar bool condition, tensors of
// bool, int32, float16, float32 or bfloat16 crossing its boundary, and branch outputs of equal
// rank unless the condition is a build-time constant.
#pragma once

#include <vector>

#include "Finding.h"
#include "qopt/ir/Graph.h"

namespace qopt::checktrt {

/// Adds a finding for every If (at any depth) that breaks one of those rules.
void checkControlFlow(const Model& model, std::vector<Finding>& findings);

}  // namespace qopt::checktrt
