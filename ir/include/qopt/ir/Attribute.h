// Node attributes. Graph-valued attributes own their subgraphs (If/Loop/Scan bodies).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "qopt/ir/Tensor.h"

namespace qopt {

class Graph;
class Node;
class Value;
using ValueMap = std::unordered_map<const Value*, Value*>;

/// Numbered as ONNX's AttributeProto.AttributeType.
enum class AttrKind : int32_t {
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};

class Attribute {
 public:
  Attribute() = default;
  Attribute(const Attribute&) = delete;
  Attribute& operator=(const Attribute&) = delete;
  Attribute(Attribute&&) noexcept;
  Attribute& operator=(Attribute&&) noexcept;
  ~Attribute();

  static Attribute makeFloat(std::string name, float value);
  static Attribute makeInt(std::string name, int64_t value);
  static Attribute makeString(std::string name, std::string value);
  static Attribute makeFloats(std::string name, std::vector<float> values);
  static Attribute makeInts(std::string name, std::vector<int64_t> values);
  static Attribute makeStrings(std::string name, std::vector<std::string> values);
  static Attribute makeTensor(std::string name, TensorPtr value);

  // Declared first, together: every pass asks every node for its subgraphs (g, graphs) and looks
  // attributes up by name, so these share the attribute's first cache line (the object is large).
  std::unique_ptr<Graph> g;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::string name;
  AttrKind kind = AttrKind::Undefined;
  std::string docString;
  /// Set in function bodies: the attribute refers to an attribute of the calling node.
  std::string refAttrName;

  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  TensorPtr t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorPtr> tensors;
  /// Sparse tensors and type protos are not interpreted by qopt: kept serialized, written back.
  std::string opaqueSingle;
  std::vector<std::string> opaqueList;
  /// Which scalar fields were present in the file (ONNX lets an attribute carry several; a
  /// faithful round-trip writes exactly those back). Bits: 1=f 2=i 4=s 8=t 16=g 32=sparse 64=tp.
  uint32_t presentFields = 0;
  std::string unknownFields;

  /// Deep copy. Subgraphs are cloned with `owner` as their parent node; their references to
  /// outer-scope values are redirected through `valueMap` (original value -> copy).
  Attribute clone(Node* owner, ValueMap& valueMap) const;
};

}  // namespace qopt
