#include "qopt/ir/Attribute.h"

#include "qopt/ir/Graph.h"

namespace qopt {

namespace {

// A new attribute `name` of `kind`; `presentFields` marks the singular field the makers set (see
// Attribute::presentFields).
Attribute named(std::string name, AttrKind kind, uint32_t presentFields = 0) {
  Attribute a;
  a.name = std::move(name);
  a.kind = kind;
  a.presentFields = presentFields;
  return a;
}

}  // namespace

Attribute::Attribute(Attribute&&) noexcept = default;
Attribute& Attribute::operator=(Attribute&&) noexcept = default;
Attribute::~Attribute() = default;

Attribute Attribute::makeFloat(std::string name, float value) {
  Attribute a = named(std::move(name), AttrKind::Float, 1);
  a.f = value;
  return a;
}

Attribute Attribute::makeInt(std::string name, int64_t value) {
  Attribute a = named(std::move(name), AttrKind::Int, 2);
  a.i = value;
  return a;
}

Attribute Attribute::makeString(std::string name, std::string value) {
  Attribute a = named(std::move(name), AttrKind::String, 4);
  a.s = std::move(value);
  return a;
}

Attribute Attribute::makeFloats(std::string name, std::vector<float> values) {
  Attribute a = named(std::move(name), AttrKind::Floats);
  a.floats = std::move(values);
  return a;
}

Attribute Attribute::makeInts(std::string name, std::vector<int64_t> values) {
  Attribute a = named(std::move(name), AttrKind::Ints);
  a.ints = std::move(values);
  return a;
}

Attribute Attribute::makeStrings(std::string name, std::vector<std::string> values) {
  Attribute a = named(std::move(name), AttrKind::Strings);
  a.strings = std::move(values);
  return a;
}

Attribute Attribute::makeTensor(std::string name, TensorPtr value) {
  Attribute a = named(std::move(name), AttrKind::Tensor, 8);
  a.t = std::move(value);
  return a;
}

Attribute Attribute::clone(Node* owner, ValueMap& valueMap) const {
  Attribute c;
  c.name = name;
  c.kind = kind;
  c.docString = docString;
  c.refAttrName = refAttrName;
  c.f = f;
  c.i = i;
  c.s = s;
  if (t) c.t = std::make_shared<Tensor>(*t);
  if (g) c.g = g->clone(&owner->graph()->model(), owner, valueMap);
  c.floats = floats;
  c.ints = ints;
  c.strings = strings;
  for (const TensorPtr& tensor : tensors) c.tensors.push_back(std::make_shared<Tensor>(*tensor));
  for (const auto& sub : graphs) {
    c.graphs.push_back(sub->clone(&owner->graph()->model(), owner, valueMap));
  }
  c.opaqueSingle = opaqueSingle;
  c.opaqueList = opaqueList;
  c.presentFields = presentFields;
  c.unknownFields = unknownFields;
  return c;
}

}  // namespace qopt
