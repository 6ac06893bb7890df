#include "qopt/ir/Type.h"

namespace qopt {

std::optional<std::vector<int64_t>> ValueType::staticShape() const {
  if (!shape) return std::nullopt;
  std::vector<int64_t> dims;
  dims.reserve(shape->size());
  for (const Dim& d : *shape) {
    if (!d.value) return std::nullopt;
    dims.push_back(*d.value);
  }
  return dims;
}

}  // namespace qopt
