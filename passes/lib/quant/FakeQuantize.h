// What calibrator=auto's probes share: Q/DQ pairs inserted into a copy of the model at a
// candidate's scale, and the map from the model's nodes to the copy's.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "qopt/ir/Graph.h"
#include "qopt/quant/AutoCalibration.h"

namespace qopt::quant {

/// Declares the domain the probes' QuantizeLinear/DequantizeLinear use (com.microsoft, run as
/// opset 21: any model opset, float16 scales for float16 tensors) in `model`.
void prepareQdqDomain(Model& model);

/// A node named after `base` (made unique), before `before`.
Node* addProbeNode(Graph& graph, const std::string& op, const std::string& domain, Node* before,
                   const std::string& base);

/// x -> QuantizeLinear -> DequantizeLinear at `q`, before `before`; the dequantized value.
Value* fakeQuantize(Graph& graph, Value* x, const FakeQuantization& q, Node* before);

/// Each node of `model`'s main graph to the node of `copy` (its clone) at the same position.
/// Throws qopt::Error (Internal) when the two differ.
std::unordered_map<const Node*, Node*> nodeCorrespondence(const Model& model, Model& copy);

}  // namespace qopt::quant
