// The float16 (or bfloat16) conversion to-fp16 applies to a model:
//   - a node computes in the half type unless its op type is blocked, its name matches the
//     blocking pattern, it is outside the ONNX domain, a float32 constant it reads lies beyond
//     float16's range, or a tensor it reads or writes was seen beyond half that range when the
//     model ran (ObservedMagnitudes.h); its float32 outputs become half;
//   - float32 initializers and Constant nodes read by converted nodes get a half copy (values
//     beyond float16's range clamp to +-65504, reported); readers kept in float32 keep reading
//     the original;
//   - where a value's precision differs from what a reader needs, one Cast per tensor and type
//     is inserted next to the value's definition and shared by every such reader;
//   - graph inputs and outputs keep float32 behind Casts unless keep-io-types is false;
//   - QuantizeLinear/DequantizeLinear (opset 19 and later, half-qdq) take half scales, so a
//     DequantizeLinear feeding a converted layer yields half and no Cast splits the Q/DQ-compute
//     pattern TensorRT fuses; a reader that needs the other precision gets its own copy of the
//     DequantizeLinear, never a Cast after it; a layer reading a DequantizeLinear whose scale
//     cannot be half stays float32 (QdqPrecision.h);
//   - subgraphs (If/Loop/Scan bodies) follow their node: a converted node's bodies take and
//     return half values;
//   - attributes that name float32 (Cast to, RandomNormal dtype, ConstantOfShape value) follow;
//   - finally Cast pairs that undo each other (float32 -> float16 -> float32) and Casts to the
//     type their input already has are removed.
#pragma once

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "qopt/half/ElementTypes.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"

namespace qopt::tofp16 {

struct ConversionOptions {
  DataType half = DataType::Float16;
  bool keepIoTypes = true;
  std::set<std::string, std::less<>> blockedOps;
  std::optional<std::regex> blockedNodes;
  /// max |x| of main-graph tensors observed on data (ObservedMagnitudes.h); empty: not observed.
  std::unordered_map<const Value*, double> observed;
  /// Q/DQ take half scales (needs opset 19); false: they and the layers they feed stay float32.
  bool halfQdq = false;
};

class Converter {
 public:
  Converter(Model& model, ConversionOptions options, PassResult& result);
  void run();

  /// Names of constants whose values were clamped to float16's range, with how many values.
  const std::vector<std::pair<std::string, int64_t>>& clamped() const { return clamped_; }

 private:
  bool converts(const Node& node) const;
  /// The first float32 constant input of `node` holding finite values beyond float16's range
  /// (a BatchNorm variance of 1e5, say): clamping it would change the result, so the node stays
  /// in float32. Empty when there is none or the target is bfloat16.
  std::optional<std::string> outOfRangeConstant(const Node& node) const;
  /// The first float32 input or output of `node` observed beyond half float16's range (the
  /// other half is headroom for data the samples did not show): in float16 it would overflow.
  std::optional<std::string> outOfRangeObserved(const Node& node) const;
  /// Why a node outside the blocked ops stays in float32 for its values, or empty.
  std::optional<std::string> rangeReason(const Node& node) const;
  /// Why a Q/DQ node stays float32, or why a node reading a DequantizeLinear that stays float32
  /// does (a Cast after the DequantizeLinear would break its fusion); empty otherwise.
  std::optional<std::string> qdqReason(const Node& node) const;
  /// Whether a reader of `value` (a DequantizeLinear's output) would take it in half.
  bool readersWantHalf(const Value* value) const;
  /// A copy of the DequantizeLinear producing `value` that yields `to`, or nullptr when its
  /// scale cannot be written in `to`.
  Value* dequantizeCopy(Value* value, DataType to);
  /// The output of `node` (a Cast or DequantizeLinear it added) that holds `value` in `to`: named
  /// and typed after `value`, and recorded as the converter's.
  Value* addOutputIn(Node& node, const Value& value, DataType to);
  void convertGraph(Graph& graph, bool isMain, bool parentConverted);
  void convertNode(Node& node);
  void fixInputs(Node& node);
  void fixGraphOutputs(Graph& graph, bool wantHalf, bool isMain);
  /// `value` as the reader needs it (`half` or float32).
  Value* inPrecision(Value* value, bool half);
  Value* castOf(Value* value, DataType to);
  Value* halfConstant(Value* value);
  Tensor toHalf(const Tensor& tensor, const std::string& name);
  void makeHalf(Value* value);
  void removeRedundantCasts();
  void eraseUnusedOriginals();

  bool isFloat32(const Value* value) const { return value != nullptr && float32_.count(value) > 0; }
  bool isHalf(const Value* value) const { return half_.count(value) > 0; }

  Model& model_;
  ConversionOptions options_;
  PassResult& result_;
  ElementTypes types_;
  std::unordered_set<const Value*> float32_;  // float32 before the conversion
  std::unordered_set<const Value*> half_;     // half after it
  std::map<std::pair<const Value*, DataType>, Value*> casts_;
  std::unordered_map<const Value*, Value*> halfConstants_;
  std::unordered_map<const Value*, Value*> originalConstants_;  // half copy -> float32 original
  std::unordered_set<const Value*> created_;  // outputs of the Casts and copies inserted
  std::vector<Value*> replacedConstants_;
  std::vector<std::pair<std::string, int64_t>> clamped_;
  mutable std::unordered_map<const Value*, double> constantMaxAbs_;
};

}  // namespace qopt::tofp16
