// The largest magnitude each float tensor of the main graph takes when the model runs: on up to
// 8 samples of --calib-data, else on 4 random samples. A constant check cannot see that
// x * 2^20 or a power spectrum overflows float16; a run can, and to-fp16 then keeps the nodes
// that produce or read such tensors in float32.
#pragma once

#include <unordered_map>

#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassContext.h"

namespace qopt::tofp16 {

using Magnitudes = std::unordered_map<const Value*, double>;

/// Runs the main graph and records max |x| (finite values) of every float graph input and node
/// output. Empty, with a remark in `result` saying why, when the model cannot be run.
Magnitudes observeMagnitudes(const Model& model, PassContext& context, PassResult& result);

}  // namespace qopt::tofp16
