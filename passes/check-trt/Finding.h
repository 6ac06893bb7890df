// One construct of a model that TensorRT would reject, silently read differently, or run in float
// although the model asks for INT8: what check-trt reports, one line per finding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/pass/Json.h"

namespace qopt {
class Node;
}

namespace qopt::checktrt {

enum class Severity {
  Error,    // TensorRT refuses the model (the parser or the builder fails)
  Warning,  // TensorRT builds it, but not as written (misread values, float layers, no fusion)
  Note,     // worth knowing, nothing to fix
};

/// "error", "warning", "note".
std::string_view severityName(Severity severity);

struct Finding {
  Severity severity = Severity::Note;
  /// Stable identifier, lower-case words joined by '-' ("nonzero-zero-point"): tests, scripts
  /// and suppressions key on it.
  std::string id;
  std::string node;  // the node's name (its first output's name when unnamed); empty: the model
  std::string op;
  std::string cause;
  std::string fix;
};

/// Builds a finding about `node`.
Finding makeFinding(Severity severity, std::string id, const Node& node, std::string cause,
                    std::string fix);

/// "error [nonzero-zero-point] node 'q' (QuantizeLinear): <cause>; fix: <fix>" ("model:" in
/// place of the node for findings about the whole model).
std::string formatFinding(const Finding& finding);

/// How many findings of each severity and of each id (ids in first-seen order).
struct FindingCounts {
  int errors = 0;
  int warnings = 0;
  int notes = 0;
  std::vector<std::pair<std::string, int>> perId;
};

FindingCounts countFindings(const std::vector<Finding>& findings);

/// "1 error", "3 errors": `count` and `noun`, plural with an "s" unless count is 1.
std::string countOf(int64_t count, std::string_view noun);

/// {"severity", "id", "node", "op", "cause", "fix"}.
Json findingJson(const Finding& finding);

}  // namespace qopt::checktrt
