// Graph inputs whose values steer what a model computes rather than being computed on: an If's
// condition, a Loop's trip count or condition, a shape, axis, size or count an op reads. Random
// values there take branches and shapes real data never does, so they are never drawn at random.
#pragma once

#include <map>
#include <string>

#include "qopt/ir/Graph.h"

namespace qopt::analysis {

/// Input name -> what its values steer ("the condition of node 'If_0' (If)"), for the graph
/// inputs of `graph` (bodies included) that reach such an operand through the values computed
/// from them. Through Shape or Size only the input's shape matters: it is not a control input.
/// A float input counts only as a scalar (a float tensor reaching a condition is data a branch
/// depends on, such as a score the model thresholds).
std::map<std::string, std::string> controlInputs(const Graph& graph);

}  // namespace qopt::analysis
