// The activations AWQ searches its scales on: the model runs on --calib-data (else random
// samples, with a warning) and the inputs of the quantized MatMuls are kept as rows of K values,
// at most kMaxActivationRows per tensor (the first ones, in sample order, so the result does
// not depend on threads).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "Awq.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassContext.h"

namespace qopt::wq {

inline constexpr size_t kMaxActivationRows = 4096;
inline constexpr size_t kRandomAwqSamples = 16;

struct CapturedActivations {
  std::map<const Value*, ActivationRows> rows;
  std::string origin;  // "calib:<path>" or "random"
  size_t samples = 0;
};

/// Runs `model` on at most `limit` samples (0: all) and keeps the rows of each of `values`
/// (whose last dim is `widths[i]`). Throws qopt::Error when the model cannot run.
CapturedActivations captureActivations(const Model& model, const std::vector<const Value*>& values,
                                       const std::vector<int64_t>& widths, PassContext& context,
                                       size_t limit, const std::string& passName);

}  // namespace qopt::wq
