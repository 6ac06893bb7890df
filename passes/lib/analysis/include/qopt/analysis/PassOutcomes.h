// What a pass did, for the passes after it to read (typed, through the pass context; the same
// facts go into the JSON results that reports show). A later pass asks for an outcome instead of
// looking into another pass's report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/pass/PassContext.h"

namespace qopt::analysis {

/// mixed-precision's choice: the quantized layers it returned to float (or FP16).
struct MixedPrecisionOutcome {
  static constexpr std::string_view kKey = "outcome:mixed-precision";
  std::vector<std::string> keptInFloat;  // node names
  bool budgetMet = false;
};

/// bias-correct's corrections.
struct BiasCorrectOutcome {
  static constexpr std::string_view kKey = "outcome:bias-correct";
  int64_t biasesChanged = 0;
};

template <class Outcome>
void publishOutcome(PassContext& context, Outcome outcome) {
  context.setAnalysis<Outcome>(Outcome::kKey, PassContext::AnalysisScope::Outcome,
                               std::move(outcome));
}

/// The outcome of the last run of its pass in this pipeline, or nullptr when it did not run.
template <class Outcome>
const Outcome* findOutcome(const PassContext& context) {
  return context.findAnalysis<Outcome>(Outcome::kKey);
}

}  // namespace qopt::analysis
