// The two rewrites of fold-bn: folding an inference BatchNormalization into the linear op that
// produces its input, and (optionally) replacing one that cannot be folded by Mul and Add.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "BatchNormFactors.h"
#include "Refusal.h"
#include "qopt/ir/Graph.h"

namespace qopt::foldbn {

struct FoldOptions {
  bool cloneSharedWeights = false;
  bool quantizedWeights = true;
};

struct FoldOutcome {
  std::string counter;  // "bn-folded-into-conv"
  std::string message;  // for the applied remark
  bool quantized = false;
  bool cloned = false;
  int64_t snapped = 0;
};

/// Folds `bn` into the Conv, ConvTranspose, Gemm or MatMul producing its input and erases it.
/// Nothing changes when it returns nullopt (the reason is in `refusal`).
std::optional<FoldOutcome> foldIntoProducer(Node& bn, const BatchNormFactors& factors,
                                            const FoldOptions& options, Refusal& refusal);

/// Replaces `bn` by y = x * scale + shift with per-channel constants (x's rank must be known).
std::optional<FoldOutcome> replaceByMulAdd(Node& bn, const BatchNormFactors& factors,
                                           Refusal& refusal);

}  // namespace qopt::foldbn
