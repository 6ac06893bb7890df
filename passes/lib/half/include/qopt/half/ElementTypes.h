// Element types of every value, also where the model gives none (exporters and builders often
// leave intermediate values untyped): the declared type, else one derived from the producer
// (most ops return their first input's type; Shape returns int64, Equal bool, Cast its `to`...).
// to-fp16 needs them to know which values are float32.
#pragma once

#include <unordered_map>

#include "qopt/ir/Graph.h"

namespace qopt::tofp16 {

class ElementTypes {
 public:
  /// Derives the types of every value of `model` (all graphs).
  explicit ElementTypes(const Model& model);

  /// The element type of `value` (Undefined when neither declared nor derivable).
  DataType of(const Value* value) const;
  void set(const Value* value, DataType type) { types_[value] = type; }

 private:
  void deriveGraph(const Graph& graph);
  void deriveNode(const Node& node);

  std::unordered_map<const Value*, DataType> types_;
};

}  // namespace qopt::tofp16
