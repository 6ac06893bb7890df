#include "qopt/ir/ConstantNode.h"

#include <fmt/format.h>

namespace qopt {

std::optional<Tensor> constantNodeTensor(const Node& node, std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<Tensor> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (node.attributes().size() != 1) return refuse("it does not have exactly one value attribute");
  const Attribute& attr = node.attributes()[0];
  if (!attr.refAttrName.empty()) return refuse("its value refers to a function attribute");
  if (attr.name == "value" && attr.kind == AttrKind::Tensor && attr.t) {
    Tensor copy = *attr.t;  // shares the bytes
    copy.setName("");
    return copy;
  }
  if (attr.name == "value_float" && attr.kind == AttrKind::Float) {
    return Tensor::fromFloats({}, {&attr.f, 1});
  }
  if (attr.name == "value_floats" && attr.kind == AttrKind::Floats) {
    return Tensor::fromFloats({static_cast<int64_t>(attr.floats.size())}, attr.floats);
  }
  if (attr.name == "value_int" && attr.kind == AttrKind::Int) {
    return Tensor::fromInt64s(DataType::Int64, {}, {&attr.i, 1});
  }
  if (attr.name == "value_ints" && attr.kind == AttrKind::Ints) {
    return Tensor::fromInt64s(DataType::Int64, {static_cast<int64_t>(attr.ints.size())}, attr.ints);
  }
  return refuse(fmt::format("'{}' constants are left as nodes", attr.name));
}

}  // namespace qopt
