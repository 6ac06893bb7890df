// The activations AWQ and GPTQ read: the model runs on --calib-data (else random samples, with a
// warning) and the inputs of the quantized MatMuls are kept, either as rows of K values, at most
// kMaxActivationRows per tensor (the first ones, in sample order, so the result does not depend
// on threads), or as the Gram matrix X^T X of all their rows (what GPTQ needs: its memory is
// K x K whatever the data's size).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "Awq.h"
#include "qopt/dense/DenseMath.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassContext.h"

namespace qopt::wq {

inline constexpr size_t kMaxActivationRows = 4096;
inline constexpr size_t kRandomAwqSamples = 16;

enum class Keep { Rows, Gram };

struct CapturedActivations {
  std::map<const Value*, ActivationRows> rows;   // Keep::Rows
  std::map<const Value*, dense::GramSum> grams;  // Keep::Gram: X^T X of all rows
  std::string origin;                            // "calib:<path>" or "random"
  size_t samples = 0;
};

/// Runs `model` on at most `limit` samples (0: all) and keeps the rows of each of `values`
/// (whose last dim is `widths[i]`), or their Gram matrix. `method` names the user in messages.
/// Throws qopt::Error when the model cannot run.
CapturedActivations captureActivations(const Model& model, const std::vector<const Value*>& values,
                                       const std::vector<int64_t>& widths, PassContext& context,
                                       size_t limit, Keep keep, const std::string& passName,
                                       const std::string& method);

}  // namespace qopt::wq
