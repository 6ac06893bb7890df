// `qopt inspect`: per compute layer, the precision it will run in on TensorRT (Precision.h), its
// weight type, per-channel or per-tensor scales, scale range and why it stays in float; and the
// share of multiply-accumulates that run in INT8 at the shapes the user gave
// (PrecisionReport.h). As a text table and as JSON.
#pragma once

#include <iosfwd>

#include "qopt/analysis/PrecisionReport.h"
#include "qopt/pass/Json.h"

namespace qopt::analysis {

using InspectResult = PrecisionReport;

/// Classifies every compute layer of `graph` with the shapes `request` leads to; the model must
/// stay alive while the result is used (it points at its nodes).
inline InspectResult inspectGraph(const Graph& graph, const ShapeRequest& request = {}) {
  return reportPrecisions(graph, request);
}

/// {"summary": precisionSummaryJson, "layers": [{"node", "op", "output", "precision", "reason",
/// "weight", "weight-dtype", "granularity", "axis", "weight-scale-min", "weight-scale-max",
/// "input-scale", "macs", "notes"}...]}.
Json inspectJson(const InspectResult& result);

/// The same as an aligned text table followed by the summary line and its caveats.
void printInspectTable(const InspectResult& result, std::ostream& out);

}  // namespace qopt::analysis
