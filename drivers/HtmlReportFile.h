// --report-html: the run's report as one self-contained HTML page.
#pragma once

#include <string>

#include "qopt/ir/Graph.h"
#include "qopt/pass/Json.h"
#include "qopt/pass/PassContext.h"

namespace qopt {

/// Writes the page for `report` (the JSON --report writes) to `path`, with the precision table
/// of `model` (the output model). Written atomically.
void writeHtmlReport(const std::string& path, const Json& report, const Model& model,
                     const PassContext& context);

}  // namespace qopt
