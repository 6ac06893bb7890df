// A scalar initializer for graph-building tests.
#pragma once

#include <memory>
#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::test {

inline Value* scalar(Graph& g, const std::string& name, DataType type, double value) {
  auto t = std::make_shared<Tensor>(Tensor::fromDoubles(type, {}, {&value, 1}));
  t->setName(name);
  return g.addInitializer(std::move(t));
}

}  // namespace qopt::test
