#include "qopt/ir/Attribute.h"

#include "qopt/ir/Graph.h"

namespace qopt {

Attribute::Attribute(Attribute&&) noexcept = default;
Attribute& Attribute::operator=(Attribute&&) noexcept = default;
Attribute::~Attribute() = default;

Attribute Attribute::makeFloat(std::string name, float value) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Float;
  a.f = value;
  a.presentFields = 1;
  return a;
}

Attribute Attribute::makeInt(std::string name, int64_t value) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Int;
  a.i = value;
  a.presentFields = 2;
  return a;
}

Attribute Attribute::makeString(std::string name, std::string value) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::String;
  a.s = std::move(value);
  a.presentFields = 4;
  return a;
}

Attribute Attribute::makeFloats(std::string name, std::vector<float> values) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Floats;
  a.floats = std::move(values);
  return a;
}

Attribute Attribute::makeInts(std::string name, std::vector<int64_t> values) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Ints;
  a.ints = std::move(values);
  return a;
}

Attribute Attribute::makeStrings(std::string name, std::vector<std::string> values) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Strings;
  a.strings = std::move(values);
  return a;
}

Attribute Attribute::makeTensor(std::string name, TensorPtr value) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Tensor;
  a.t = std::move(value);
  a.presentFields = 8;
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
