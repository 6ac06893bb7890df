#include "qopt/opset/OpsetUpgrade.h"

#include <fmt/format.h>

#include "qopt/opset/OpsetConverter.h"

namespace qopt::qdq {

std::optional<int64_t> raiseOpset(Model& model, int64_t target, const std::string& why,
                                  PassResult& result) {
  const int64_t current = model.opsetVersion("").value_or(1);
  if (current >= target) return std::nullopt;
  opset::ConversionResult conversion = opset::convertOpset(model, target);
  for (const auto& [subject, what] : conversion.rewrites) {
    result.applied(subject, fmt::format("opset {} -> {}: {}", current, target, what));
  }
  result.note("model", fmt::format("default opset raised from {} to {} for {} through "
                                   "convert-opset ({} node(s) rewritten)",
                                   current, target, why, conversion.rewrites.size()));
  result.statistics["opset-raised"] = 1;
  return current;
}

}  // namespace qopt::qdq
