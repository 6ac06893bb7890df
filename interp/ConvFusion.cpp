#include "ConvFusion.h"

#include <limits>

namespace qopt::interp {

namespace {

// The one node consuming `v`, when there is exactly one use and `v` leaves the graph no other
// way (graph outputs and values read by subgraphs are seen by others).
const Node* soleConsumer(const Value* v) {
  if (v == nullptr || v->isGraphOutput() || v->uses().size() != 1) return nullptr;
  const Node* user = v->uses().front().user;
  if (user->graph() != v->graph() || v->uses().front().index != 0) return nullptr;
  return user;
}

bool onlyFirstOutputUsed(const Node& node) {
  for (size_t i = 1; i < node.numOutputs(); ++i) {
    const Value* out = node.output(i);
    if (!out->isAbsent() && (out->hasUses() || out->isGraphOutput())) return false;
  }
  return true;
}

// A rank-1 floating point constant of `channels` elements, as float (BatchNormalization's
// channelParam does the same conversion).
std::optional<std::vector<float>> channelConstant(const Array* a, int64_t channels) {
  if (a == nullptr || !isFloatingPoint(a->dataType()) || a->rank() != 1 || a->numel() != channels) {
    return std::nullopt;
  }
  return a->toFloatVector();
}

// BatchNormalization in inference form with constant parameters: its affine map.
bool batchNormEpilogue(const Node& bn, int64_t opset, const ConstantLookup& constant,
                       ConvEpilogue& epilogue) {
  if (opset < 9 || bn.numInputs() != 5 || bn.attrInt("training_mode", 0) != 0 ||
      !onlyFirstOutputUsed(bn)) {
    return false;
  }
  const Array* scaleArray = constant(bn.input(1));
  if (scaleArray == nullptr || scaleArray->rank() != 1) return false;
  const int64_t channels = scaleArray->numel();
  auto scale = channelConstant(scaleArray, channels);
  auto bias = channelConstant(constant(bn.input(2)), channels);
  auto mean = channelConstant(constant(bn.input(3)), channels);
  auto var = channelConstant(constant(bn.input(4)), channels);
  if (!scale || !bias || !mean || !var) return false;
  batchNormCoefficients(*scale, *bias, *mean, *var, bn.attrFloat("epsilon", 1e-5f), epilogue.scale,
                        epilogue.shift);
  return true;
}

// Relu, or Clip with constant float32 bounds (attributes before opset 11).
bool activationEpilogue(const Node& act, int64_t opset, const ConstantLookup& constant,
                        Activation& activation) {
  if (act.domain() != "") return false;
  if (act.opType() == "Relu") {
    activation.kind = Activation::Kind::Relu;
    return true;
  }
  if (act.opType() != "Clip") return false;
  float lo = std::numeric_limits<float>::lowest();
  float hi = std::numeric_limits<float>::max();
  if (opset < 11) {
    lo = act.attrFloat("min", lo);
    hi = act.attrFloat("max", hi);
  } else {
    auto bound = [&](size_t i, float& value) {
      const Value* v = act.input(i);
      if (v == nullptr) return true;
      const Array* a = constant(v);
      if (a == nullptr || a->dataType() != DataType::Float || a->numel() != 1) return false;
      value = a->data<float>()[0];
      return true;
    };
    if (act.numInputs() > 3 || !bound(1, lo) || !bound(2, hi)) return false;
  }
  activation = {Activation::Kind::Clip, lo, hi};
  return true;
}

}  // namespace

std::vector<ConvChain> findConvChains(const Graph& graph, const ConstantLookup& constant,
                                      const std::function<int64_t(const Node&)>& opsetOf) {
  std::vector<ConvChain> chains;
  for (const Node* node : graph.nodes()) {
    if (!node->is("Conv") || node->numOutputs() != 1) continue;
    ConvChain chain;
    chain.conv = node;
    const Node* next = soleConsumer(node->output(0));
    if (next != nullptr && next->is("BatchNormalization") &&
        batchNormEpilogue(*next, opsetOf(*next), constant, chain.epilogue)) {
      chain.batchNorm = next;
      next = soleConsumer(next->output(0));
    }
    if (next != nullptr && next->numOutputs() == 1 &&
        activationEpilogue(*next, opsetOf(*next), constant, chain.epilogue.activation)) {
      chain.activation = next;
    }
    if (chain.batchNorm != nullptr || chain.activation != nullptr) {
      chains.push_back(std::move(chain));
    }
  }
  return chains;
}

}  // namespace qopt::interp
