#include "HtmlReportFile.h"

#include "qopt/analysis/HtmlReport.h"
#include "qopt/analysis/Inspect.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt {

void writeHtmlReport(const std::string& path, const Json& report, const Model& model,
                     const PassContext& context) {
  analysis::InspectResult inspected =
      analysis::inspectGraph(model.graph(), analysis::ShapeRequest::from(context));
  Json inspect = analysis::inspectJson(inspected);
  writeFileAtomically(path, analysis::renderHtmlReport(report, &inspect));
}

}  // namespace qopt
