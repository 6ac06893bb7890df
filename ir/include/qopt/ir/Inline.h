// Inlining a body (an If branch) into the graph that holds its node: what folding an If whose
// condition is constant does.
#pragma once

#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt {

/// Replaces `node` (an If, or any node whose body takes no inputs) by the nodes of `body`, one
/// of its subgraphs: the body's initializers and nodes are copied into `node`'s graph before it
/// (node names kept; value names kept where `node`'s removal frees them, else made unique), each
/// output of `node` is replaced by the copy of the body's corresponding output (through an Identity
/// where that is a value of an enclosing graph or a constant, so that graph outputs keep their
/// names and producers), and `node` is erased with its bodies. Values of enclosing graphs the body
/// read are read as they are. Returns the nodes added, in order.
std::vector<Node*> inlineBody(Node& node, const Graph& body);

}  // namespace qopt
