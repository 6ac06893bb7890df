// `qopt inspect`: per compute layer, the precision it will run in on TensorRT (Precision.h), its
// weight type, per-channel or per-tensor scales, scale range and why it stays in float; and the
// share of multiply-accumulates that run in INT8. As a text table and as JSON.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "qopt/analysis/Precision.h"
#include "qopt/pass/Json.h"
#include "qopt/pass/PassContext.h"

namespace qopt::analysis {

struct PrecisionTotals {
  int64_t layers = 0;
  uint64_t macs = 0;
};

struct InspectResult {
  std::vector<LayerInfo> layers;
  PrecisionTotals int8, fp16, fp32;
  uint64_t totalMacs = 0;
  int64_t layersWithoutMacs = 0;  // shapes unknown
  /// "interpreter" when shapes come from a run on random inputs, else why only declared
  /// shapes were available.
  std::string shapeSource;

  double int8MacShare() const {
    return totalMacs > 0 ? static_cast<double>(int8.macs) / static_cast<double>(totalMacs) : 0.0;
  }
};

/// Classifies every compute layer of `graph`. Shapes come from one interpreter run on random
/// inputs (dims fixed by `shapes`, values from `seed`); the model must stay alive while the
/// result is used (it points at its nodes).
InspectResult inspectGraph(const Graph& graph, std::span<const InputShape> shapes = {},
                           uint64_t seed = 0);

/// {"summary": {...}, "layers": [{"node", "op", "output", "precision", "reason", "weight",
/// "weight-dtype", "granularity", "axis", "weight-scale-min", "weight-scale-max",
/// "input-scale", "macs", "notes"}...]}.
Json inspectJson(const InspectResult& result);

/// The same as an aligned text table followed by the summary.
void printInspectTable(const InspectResult& result, std::ostream& out);

}  // namespace qopt::analysis
