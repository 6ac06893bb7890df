#include "Finding.h"

#include <algorithm>

#include <fmt/format.h>

#include "qopt/analysis/Precision.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/EnumNames.h"

namespace qopt::checktrt {

std::string_view severityName(Severity severity) {
  constexpr EnumName<Severity> kNames[] = {
      {Severity::Error, "error"}, {Severity::Warning, "warning"}, {Severity::Note, "note"}};
  return enumName(kNames, severity, "note");
}

Finding makeFinding(Severity severity, std::string id, const Node& node, std::string cause,
                    std::string fix) {
  return Finding{severity,      std::move(id),    analysis::layerName(node),
                 node.opType(), std::move(cause), std::move(fix)};
}

std::string formatFinding(const Finding& finding) {
  if (finding.node.empty()) {
    return fmt::format("{} [{}] model: {}; fix: {}", severityName(finding.severity), finding.id,
                       finding.cause, finding.fix);
  }
  return fmt::format("{} [{}] node '{}' ({}): {}; fix: {}", severityName(finding.severity),
                     finding.id, finding.node, finding.op, finding.cause, finding.fix);
}

FindingCounts countFindings(const std::vector<Finding>& findings) {
  FindingCounts counts;
  for (const Finding& f : findings) {
    switch (f.severity) {
      case Severity::Error:
        ++counts.errors;
        break;
      case Severity::Warning:
        ++counts.warnings;
        break;
      case Severity::Note:
        ++counts.notes;
        break;
    }
    auto it = std::find_if(counts.perId.begin(), counts.perId.end(),
                           [&](const auto& entry) { return entry.first == f.id; });
    if (it == counts.perId.end()) {
      counts.perId.emplace_back(f.id, 1);
    } else {
      ++it->second;
    }
  }
  return counts;
}

std::string countOf(int64_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

Json findingJson(const Finding& finding) {
  Json json = Json::object();
  json.append("severity", std::string(severityName(finding.severity)));
  json.append("id", finding.id);
  json.append("node", finding.node);
  json.append("op", finding.op);
  json.append("cause", finding.cause);
  json.append("fix", finding.fix);
  return json;
}

}  // namespace qopt::checktrt
