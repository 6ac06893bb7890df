// The rewriting strip-qdq does, one DequantizeLinear at a time:
//   - DequantizeLinear of a constant (weight, bias): a float initializer with the dequantized
//     values; when the constant is QuantizeLinear of a float initializer (QAT), that initializer.
//   - DequantizeLinear(QuantizeLinear(x)) with equal parameters: readers read x, through a Relu or
//     Clip where the quantized range clamped x and x's producer does not already bound it.
//   - DequantizeLinear reading QuantizeLinear through ops that only move values (Reshape,
//     Transpose, ...): those ops read x instead and compute in float.
// Anything else is left alone with the reason.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ObservedRanges.h"
#include "QuantRange.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"

namespace qopt::stripqdq {

/// An activation scale that was removed, for the calibration cache and the scales file. `value`
/// is the float tensor readers now read (its name is taken once the pass is done).
struct RemovedScale {
  Value* value = nullptr;
  QuantParams params;
};

class Stripper {
 public:
  /// `observed`: the values the tensors QuantizeLinear reads took on calibration data (may be
  /// null); it must outlive the stripper.
  Stripper(Model& model, bool clamp, const ObservedRanges* observed, PassResult& result)
      : model_(model), clamp_(clamp), observed_(observed), result_(result) {}

  /// Rewrites one DequantizeLinear node (see above). Returns true when it was removed.
  bool strip(Node& dequantize);

  /// Removed activation scales, in the order they were removed (one entry per tensor; when two
  /// pairs sat on one tensor, the narrower range is kept).
  const std::vector<RemovedScale>& removedScales() const { return scales_; }
  /// Weight and bias scales that were folded (for the scales file).
  const std::vector<std::pair<std::string, QuantParams>>& weightScales() const {
    return weightScales_;
  }

 private:
  bool foldConstant(Node& dq, const QuantParams& params);
  bool restoreQatWeight(Node& dq, Node& q, const QuantParams& params);
  bool removePair(Node& dq, Node& q, const QuantParams& params);
  bool removeAcrossMoves(Node& dq, Node& q, std::vector<Node*> moves, const QuantParams& params);
  /// `x`, or a Relu/Clip of it that keeps the clamp the quantized range applied.
  Value* clamped(Value* x, const QuantParams& params, Node& insertBefore);
  Node* makeClamp(Value* x, double lo, double hi, bool needLo, bool needHi, DataType type,
                  Node& insertBefore);
  void record(Value* value, const QuantParams& params);
  void replaceAndErase(Node& dq, Value* replacement);

  Model& model_;
  bool clamp_;
  const ObservedRanges* observed_;
  PassResult& result_;
  std::vector<RemovedScale> scales_;
  std::vector<std::pair<std::string, QuantParams>> weightScales_;
  // One clamp per (graph, tensor, bounds): shared by every pair on the tensor.
  std::map<std::tuple<const Graph*, const Value*, double, double>, Value*> clamps_;
};

}  // namespace qopt::stripqdq
