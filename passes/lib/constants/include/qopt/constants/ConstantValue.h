// What folding passes need to know about constants: the tensor a value always holds, and how to
// put a new constant in place of an old one without leaving dead initializers or Constant nodes.
//
// Shared by every pass that reads or replaces constants (libqopt_constants; it holds no state).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/ir/ConstantNode.h"
#include "qopt/ir/Graph.h"

namespace qopt::fold {

/// The tensor of a Constant node (qopt/ir/ConstantNode.h).
using qopt::constantNodeTensor;

/// The tensor `value` holds on every run: an initializer that callers cannot override (not also
/// a graph input), or the output of a Constant node. nullopt for anything else.
std::optional<Tensor> constantOf(const Value* value);

/// As constantOf, shared: an initializer's own tensor (no copy), a Constant node's in a new one;
/// null for anything else.
TensorPtr sharedConstantOf(const Value* value);

/// As constantOf, also looking through Identity and through Cast nodes whose result is exact
/// here: floating point to floating point (rounded to nearest even, as ONNX's Cast), and
/// integer-valued numbers that the target type holds. QAT exports wrap scales and zero points
/// in such chains.
std::optional<Tensor> constantThroughCasts(const Value* value);

/// Whether constantOf(value) would give a tensor, without materialising it.
bool isConstantValue(const Value* value);

/// Whether `use` reads only the shape and type of its value (Shape, Size, CastLike's second
/// input): rewriting the value with a tensor of the same shape and type leaves it unchanged.
bool readsOnlyShapeAndType(const Use& use);

/// Makes every input slot in `uses` read `tensor`. When those slots all read one value that
/// nothing else reads (an initializer that is not a graph input or output, or a Constant node's
/// output; readers of only its shape and type do not count when `tensor` keeps both), that
/// value is rewritten in place and keeps its name; otherwise a new initializer
/// named after `preferredName` is added to the graph of the first user and the old values are
/// erased when nothing reads them any more. Returns the value the slots now read.
Value* installConstant(const std::vector<Use>& uses, Tensor tensor, std::string_view preferredName);

/// Erases `value` when nothing reads it: an unused initializer (kept when it is a graph input or
/// output), or a node whose outputs are all unused, then, recursively, the inputs that node
/// was the last reader of. Nodes holding subgraphs are left alone. `values` may repeat a value.
void eraseIfUnused(std::span<Value* const> values);
inline void eraseIfUnused(Value* value) {
  eraseIfUnused(std::span<Value* const>(&value, 1));
}

/// "tensor 'w'" for messages.
std::string describeValue(const Value* value);

}  // namespace qopt::fold
