// What TensorRT's If and loops take (docs/tensorrt.md, "Control flow"). An If: a scalar bool
// condition, tensors of bool, int32, float16, float32 or bfloat16 crossing its boundary, and branch
// outputs of equal rank unless the condition is a build-time constant. A Loop or Scan, built as an
// ILoop: a trip count or a condition of one element each, a body that reads its iteration number
// and condition input only when the parser binds them, carried values of a fixed shape, no
// quantized tensor carried, scanned or output, scan outputs sized by a trip count, and a Scan with
// a state variable, non-negative axes and no sequence_lens.
#pragma once

#include <vector>

#include "Finding.h"
#include "qopt/ir/Graph.h"

namespace qopt::checktrt {

/// Adds a finding for every If, Loop and Scan (at any depth) that breaks one of those rules.
void checkControlFlow(const Model& model, std::vector<Finding>& findings);

}  // namespace qopt::checktrt
