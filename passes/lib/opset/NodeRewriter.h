// What raising and lowering an opset share: the direction-agnostic test of whether a node's
// version boundary lies between the two opsets, and the small edits both make (new constant
// inputs, attributes that become inputs and back, remarks). Internal to the converter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/opset/OpsetConverter.h"

namespace qopt::opset {

/// The opset in which `op` (default domain) first appeared, for the ops that appeared after
/// opset 7; nullopt for older ops and for ops qopt does not know.
std::optional<int64_t> introducedIn(std::string_view op);

/// The input's rank when its type says it, else nullopt.
std::optional<int64_t> rankOf(const Value* value);

/// The value's element type; Undefined when its type does not say.
DataType elementTypeOf(const Value* value);

/// The type a constant standing in for an attribute of `value`'s op takes: `value`'s element
/// type, float when unknown (the only type those attributes had).
DataType constantTypeFor(const Value* value);

class NodeRewriter {
 public:
  NodeRewriter(Model& model, int64_t from, int64_t to) : model_(model), from_(from), to_(to) {}

  std::vector<Rewrite> rewrites;

 protected:
  /// Whether the conversion passes the version `version` of an op (in either direction): the
  /// op's definition at one end differs from the other's.
  bool crosses(int64_t version) const {
    const int64_t lo = from_ < to_ ? from_ : to_;
    const int64_t hi = from_ < to_ ? to_ : from_;
    return lo < version && hi >= version;
  }

  Value* constant(Node& at, const std::string& base, Tensor tensor);
  Value* int64s(Node& at, const std::string& base, const std::vector<int64_t>& values);
  Value* scalar(Node& at, const std::string& base, DataType type, double value);
  std::string baseName(const Node& node, std::string_view what) const;
  void note(const Node& node, std::string what);

  /// An attribute of ints becomes input `index` (omitted inputs before it stay omitted).
  bool attributeToInput(Node& node, const char* attr, size_t index);
  /// Input `index`, a constant of ints, becomes attribute `attr`; the input slot is dropped
  /// (with trailing omitted slots) and the constant erased when nothing else reads it. An
  /// omitted input gives no attribute.
  void inputToAttribute(Node& node, size_t index, const char* attr);
  /// The ints a constant input holds; nullopt when the input is not a constant.
  static std::optional<std::vector<int64_t>> constantInts(const Node& node, size_t index);
  static std::optional<std::vector<double>> constantDoubles(const Node& node, size_t index);
  /// Whether input `index` is given (present and named).
  static bool hasInput(const Node& node, size_t index);
  /// Drops input `index` and the omitted slots that then trail.
  void dropInput(Node& node, size_t index);

  Model& model_;
  int64_t from_;
  int64_t to_;
};

/// Raising: refusal(node) is asked of every node before anything changes; convert(node) then
/// rewrites one node whose meaning would otherwise change.
class Raiser : public NodeRewriter {
 public:
  using NodeRewriter::NodeRewriter;
  std::optional<std::string> refusal(const Node& node) const;
  void convert(Node& node);

 private:
  void upsampleToResize(Node& node);
  void resize10To11(Node& node);
  void clipBoundsToInputs(Node& node);
  void padToInputs(Node& node);
  void softmaxTo13(Node& node);
  void groupNormTo21(Node& node);
};

/// Lowering: the same protocol. Inputs that older opsets held as attributes must be constants;
/// attributes that older opsets lack must have their default values.
class Lowerer : public NodeRewriter {
 public:
  using NodeRewriter::NodeRewriter;
  std::optional<std::string> refusal(const Node& node) const;
  void convert(Node& node);

 private:
  std::optional<std::string> newAttributeRefusal(const Node& node) const;
  std::optional<std::string> inputsRefusal(const Node& node) const;
  std::optional<std::string> resizeRefusal(const Node& node) const;
  void dropDefaultAttributes(Node& node);
  void normalizeNegativeAxes(Node& node);
  void softmaxBelow13(Node& node);
  void splitBelow18(Node& node);
  void resizeDown(Node& node);
  void padDown(Node& node);
  void groupNormBelow21(Node& node);
};

}  // namespace qopt::opset
