// The values the tensors that QuantizeLinear reads take on calibration data: with them,
// strip-qdq also restores an upper (or lower) bound the quantized range cut off even where the
// producer's own bounds are unknown (a Clip(0, 6) removed before an int8 symmetric pair).
#pragma once

#include <cstddef>
#include <unordered_map>

#include "ValueBounds.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassContext.h"

namespace qopt::stripqdq {

using ObservedRanges = std::unordered_map<const Value*, Bounds>;

/// Runs the main graph on up to `limit` samples of --calib-data and records the smallest and
/// largest value of each float tensor a QuantizeLinear of the main graph reads. Empty (with a
/// remark saying why) when the model cannot be run.
ObservedRanges observeQuantizedInputs(const Model& model, PassContext& context, size_t limit,
                                      PassResult& result);

}  // namespace qopt::stripqdq
