// The structural verifier: passes and tests call it to prove the IR is well formed.
#pragma once

#include <string>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt {

struct VerifyIssue {
  std::string subject;  // the node, value or graph concerned ("node 'conv1' (Conv)")
  std::string message;
  bool operator==(const VerifyIssue&) const = default;
};

/// Checks, over the main graph and every subgraph:
/// - structure: nodes, subgraphs and values point back at the graph, node and model holding them;
/// - each value is defined once (graph input, initializer or node output), and no two values of
///   the model share a name (ONNX forbids shadowing an outer name in a subgraph);
/// - no cycles, and nodes in topological order;
/// - every use is defined: a graph input, an initializer, an output of an earlier node of the same
///   graph, or a value of an enclosing graph defined before the node owning the subgraph; omitted
///   (absent) outputs are never used;
/// - use lists match node inputs exactly (every Use names a node of the model whose input is the
///   value, and every node input is recorded once in the value's uses);
/// - graph outputs are defined (in the graph or an enclosing one) and isGraphOutput() agrees with
///   the output lists;
/// - an opset import for every domain used by a node ("" = ai.onnx), and no domain imported twice.
/// Issues come in a deterministic order (graph order, depth first).
std::vector<VerifyIssue> verifyModel(const Model& model);

/// Throws qopt::Error of kind Internal naming the first issue when the model is not valid.
/// `context` says when the check ran ("after pass 'dce'") and is part of the message.
void verifyModelOrThrow(const Model& model, const std::string& context);

}  // namespace qopt
