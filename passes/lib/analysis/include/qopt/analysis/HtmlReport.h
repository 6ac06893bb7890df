// `qopt --report-html=FILE`: one self-contained HTML page (inline CSS and SVG, no scripts, nothing
// fetched) with the pipeline, per-pass statistics, verify's per-layer error chart and the value
// histograms of its flagged layers, sensitivity and mixed-precision results, and the inspect
// table of the output model.
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
