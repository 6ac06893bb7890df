// The type a value carries: element type and (possibly partial) shape, as in ONNX's TypeProto.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qopt/ir/DataType.h"

namespace qopt {

struct Dim {
  /// A known size; otherwise `param` names a symbolic dim ("batch"), or both are empty: unknown.
  std::optional<int64_t> value;
  std::string param;
  std::string denotation;

  static Dim known(int64_t size) { return Dim{size, {}, {}}; }
  static Dim symbolic(std::string name) { return Dim{std::nullopt, std::move(name), {}}; }
  bool isKnown() const { return value.has_value(); }
  bool operator==(const Dim&) const = default;
};

struct ValueType {
  enum class Kind {
    Unknown,  // no type given
    Tensor,
    SparseTensor,
    Other,  // sequence, map, optional...: kept as the serialized TypeProto in `opaque`
  };
  Kind kind = Kind::Unknown;
  DataType elemType = DataType::Undefined;
  /// Absent: rank unknown. Present: one Dim per axis.
  std::optional<std::vector<Dim>> shape;
  std::string denotation;
  /// The serialized TypeProto for Kind::Other, and unknown fields of tensor types, kept verbatim.
  std::string opaque;

  static ValueType tensor(DataType elem) {
    ValueType t;
    t.kind = Kind::Tensor;
    t.elemType = elem;
    return t;
  }
  static ValueType tensor(DataType elem, const std::vector<int64_t>& dims) {
    ValueType t = tensor(elem);
    t.shape.emplace();
    for (int64_t d : dims) t.shape->push_back(d >= 0 ? Dim::known(d) : Dim{});
    return t;
  }
  bool isTensor() const { return kind == Kind::Tensor; }
  /// Dims when every one is known.
  std::optional<std::vector<int64_t>> staticShape() const;
  bool operator==(const ValueType&) const = default;
};

}  // namespace qopt
