#include "ObservedRanges.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/FloatCapture.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::stripqdq {
ObservedRanges observeQuantizedInputs(const Model& model, PassContext& context, size_t limit,
                                      PassResult& result) {
  ObservedRanges ranges;
  std::unordered_set<const Value*> wanted;
  for (const Node* node : model.graph().allNodes()) {  // bodies included
    if (node->opType() == "QuantizeLinear" && node->input(0) != nullptr &&
        !fold::isConstantValue(node->input(0))) {
      wanted.insert(node->input(0));
    }
  }
  if (wanted.empty()) return ranges;
  try {
    std::string origin;
    std::vector<analysis::Sample> samples =
        analysis::samplesFor(model.graph(), context, /*preferEval=*/false, limit, 0, origin);
    interp::Interpreter interpreter(model.graph());
    analysis::FloatCapture observer(
        std::move(wanted), [&](const Value& value, const interp::Array& array) {
          Bounds& b = ranges.try_emplace(&value, Bounds{INFINITY, -INFINITY}).first->second;
          for (float v : array.toFloatVector()) {
            if (std::isnan(v)) continue;
            b.lo = std::min(b.lo, static_cast<double>(v));
            b.hi = std::max(b.hi, static_cast<double>(v));
          }
        });
    for (analysis::Sample& sample : samples) {
      analysis::runningSample(sample, [&] { return interpreter.run(sample.inputs, &observer); });
    }
    result.note("calibration data",
                fmt::format("{} sample(s) ({}) give the ranges of {} quantized tensor(s)",
                            samples.size(), origin, ranges.size()));
  } catch (const Error& e) {
    ranges.clear();
    result.missed("calibration data",
                  "not used: the model cannot be run on it (" + std::string(e.what()) + ")");
  }
  return ranges;
}

}  // namespace qopt::stripqdq
