// AWQ multiplies weight rows by s, so the activation those MatMuls read must be divided by s.
// Where the activation's producer applies a per-channel affine map of its own and nothing else
// reads its output, the division folds into that map exactly (in double, rounded once to the
// constants' type): a LayerNormalization's scale and bias, or a Mul by a constant. Otherwise a
// Mul by 1/s is inserted before the MatMuls.
#pragma once

#include <string>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::wq {

enum class FoldKind { LayerNormalization, ConstantMul, InsertedMul };

struct FoldOutcome {
  FoldKind kind = FoldKind::InsertedMul;
  std::string message;  // for the remark: where the division went and why
};

/// Makes `readers` (each reading `activation` as input 0) see activation / s, s one value per
/// last-dim channel. `floatType` is the activation's type.
FoldOutcome applyInverseScales(Value* activation, const std::vector<Node*>& readers,
                               const std::vector<double>& s, DataType floatType);

}  // namespace qopt::wq
