// `qopt --report-html=FILE`: one self-contained HTML page (inline CSS and SVG, no scripts, nothing
// fetched). It opens with the figure verify judged each output by against the float model ("Map
// agreement with FP32 (IoU of positions > 0.5): 98.1 % on 16 evaluation samples — bound 90 %:
// passed"), then verify's per-layer SQNR chart and what each pass changed (its statistics, in
// words where the pass is known); then the run and its pipeline, warnings, verify's tables and
// the value histograms of its flagged layers, sensitivity and mixed-precision results, and the
// inspect table of the output model.
#pragma once

#include <string>

#include "qopt/pass/Json.h"

namespace qopt::analysis {

/// `report` is the JSON --report writes (qopt-version, pipeline, input, output, passes,
/// warnings, results: verify, sensitivity, mixed-precision, inspect...; "failure" when a check
/// stopped the run); `inspect` (optional)
/// is inspectJson() of the output model.
std::string renderHtmlReport(const Json& report, const Json* inspect);

}  // namespace qopt::analysis
