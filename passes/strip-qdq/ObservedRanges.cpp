#include "ObservedRanges.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/FloatCapture.h"
#include "qopt/analysis/ObservedSamples.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::stripqdq {
namespace {

// The values one sample gave a tensor (empty: lo > hi).
struct Seen {
  double lo = INFINITY;
  double hi = -INFINITY;
};

}  // namespace

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
    analysis::SampleSource source =
        analysis::sampleSource(model.graph(), context, /*preferEval=*/false, limit, 0);
    const size_t samples = analysis::observeSamples(
        analysis::sampleWorkers(context), model.graph(), source,
        [&] {
          return analysis::FloatFold<Seen>(wanted, [](Seen& b, const interp::Array& array) {
            for (float v : array.toFloatVector()) {
              if (std::isnan(v)) continue;
              b.lo = std::min(b.lo, static_cast<double>(v));
              b.hi = std::max(b.hi, static_cast<double>(v));
            }
          });
        },
        [&](std::unordered_map<const Value*, Seen>&& sample) {
          for (const auto& [value, bounds] : sample) {
            Bounds& b = ranges.try_emplace(value, Bounds{INFINITY, -INFINITY}).first->second;
            b.lo = std::min(b.lo, bounds.lo);
            b.hi = std::max(b.hi, bounds.hi);
          }
        },
        "strip-qdq: observing ranges");
    const std::string& origin = source.origin();
    result.note("calibration data",
                fmt::format("{} sample(s) ({}) give the ranges of {} quantized tensor(s)", samples,
                            origin, ranges.size()));
  } catch (const Error& e) {
    ranges.clear();
    result.missed("calibration data",
                  "not used: the model cannot be run on it (" + std::string(e.what()) + ")");
  }
  return ranges;
}

}  // namespace qopt::stripqdq
