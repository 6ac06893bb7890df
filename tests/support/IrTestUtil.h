// Building IR by hand in tests: a fixture with an empty model, and subgraph attributes, which
// the IR tests attach to If nodes.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "qopt/ir/Graph.h"

namespace qopt::testing {

/// An empty model `m` and its main graph `g`, for tests that build their IR from scratch.
class ModelTest : public ::testing::Test {
 protected:
  Model m;
  Graph& g = m.graph();
};

/// Gives `node` the graph attribute `name`: a subgraph that `fill` builds before it is attached,
/// as the importer attaches a finished body. Returns the subgraph.
template <typename Fill>
Graph& addSubgraph(Node* node, const std::string& name, Fill&& fill) {
  Attribute attr;
  attr.name = name;
  attr.kind = AttrKind::Graph;
  attr.g = std::make_unique<Graph>(&node->graph()->model(), node);
  Graph& body = *attr.g;
  std::forward<Fill>(fill)(body);
  node->setAttr(std::move(attr));
  return body;
}

}  // namespace qopt::testing
