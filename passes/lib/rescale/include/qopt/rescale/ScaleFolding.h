// Where SmoothQuant's division X / s goes. Exactly into the node computing X when it is
//   - LayerNormalization over the last axis (the channel axis of MatMul and Gemm): its scale
//     and bias are divided by s;
//   - a Mul by a constant: the constant is divided by s (broadcast to the channels if needed);
//   - a Div by a constant: the constant is multiplied by s;
//   - an Add of a constant to something that folds: the constant is divided by s and the fold
//     continues into the other operand;
//   - a Relu or unbounded Clip (Relu(x / s) = Relu(x) / s for s > 0) whose input folds;
//   - a Conv, ConvTranspose, Gemm or MatMul with a constant weight whose output channels are
//     X's channels: its output channels are divided by s;
// and X is read by nothing but the layers being smoothed (which then share s). Otherwise a Mul
// by 1/s is inserted before them: exact as well, but it costs an elementwise kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/rescale/LinearLayer.h"

namespace qopt::smooth {

/// The layer object of a node, shared by everyone rescaling it (nullptr, with the reason, when
/// its weight cannot be rescaled).
using LayerLookup = std::function<equalize::LinearLayer*(Node*, std::string&)>;

/// How a per-channel factor broadcasts against the smoothed tensor: dims [K] for channels on
/// the last axis (MatMul, Gemm), [K, 1, ..., 1] for axis 1 of a Conv input (whose rank is its
/// weight's), and the tensor's element type. Taken from the layers, so that models without
/// intermediate shapes are handled.
struct FactorShape {
  int64_t axis = -1;
  std::vector<int64_t> dims;
  DataType type = DataType::Float;
  int64_t channels() const { return dims.empty() ? 0 : dims[0]; }
};

/// The factor shape of `x` read by `layer` at its data input: the layer's input channels on its
/// channel axis, x's float type (the weight's when x has none recorded).
FactorShape factorShape(const Value* x, const equalize::LinearLayer& layer);

struct FoldStep {
  enum class Kind { LayerNorm, ConstantOperand, ConstantDivisor, Through, Layer };
  Kind kind = Kind::Layer;
  Node* node = nullptr;
  size_t operand = 0;                      // ConstantOperand: which input is the constant
  equalize::LinearLayer* layer = nullptr;  // Layer
};

/// The steps that divide `x` by s exactly, or an empty list with the reason in `why`. Looks
/// only at the nodes computing x; the caller checks x's readers.
std::vector<FoldStep> planFold(Value* x, const FactorShape& shape, const LayerLookup& layers,
                               std::string& why);

/// Applies planned steps with the factors `scales` (x becomes x / scales). Layer steps rescale
/// the shared layer objects, written back by their owner.
void applyFold(const std::vector<FoldStep>& steps, const FactorShape& shape,
               std::span<const double> scales);

/// Describes the steps for a remark ("into LayerNormalization 'ln' (scale and bias)").
std::string describeFold(const std::vector<FoldStep>& steps);

/// Inserts x * (1 / scales) before the first of `readers` (in graph order) and makes them read
/// it at input 0. Returns the Mul.
Node* insertScaleMul(Value* x, const FactorShape& shape, std::span<const double> scales,
                     const std::vector<Node*>& readers);

struct Division {
  bool folded = false;  // into what computes x; else a Mul was inserted
  std::string where;    // "folded into ..." or "inserted ... (costs an elementwise kernel: why)"
};

/// Divides x by `scales` for `readers` (the layers reading it at input 0, which the caller
/// rescales): folded into what computes x when nothing else reads x and planFold finds a way,
/// else by a Mul inserted before them. Folded, the division is recorded in `context` (see
/// qopt/analysis/ChannelAffine.h) for verify.
Division divideFor(Value* x, const FactorShape& shape, std::span<const double> scales,
                   const std::vector<Node*>& readers, const LayerLookup& layers,
                   PassContext& context);

}  // namespace qopt::smooth
