#include "ConvFusion.h"

#include <limits>

namespace qopt::interp {

namespace {

// The one use of `v`, when there is exactly one and `v` leaves the graph no other way (graph
// outputs and values read by subgraphs are seen by others).
std::optional<Use> soleUse(const Value* v) {
  if (v == nullptr || v->isGraphOutput() || v->uses().size() != 1) return std::nullopt;
  const Use& use = v->uses().front();
  if (use.user->graph() != v->graph()) return std::nullopt;
  return use;
}

// The node consuming `v` as its first input, when that is `v`'s only use.
const Node* soleConsumer(const Value* v) {
  std::optional<Use> use = soleUse(v);
  return use && use->index == 0 ? use->user : nullptr;
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

std::vector<ConvChain> findConvChains(
    const Graph& graph, const ConstantLookup& constant,
    const std::function<int64_t(const Node&)>& opsetOf,
    const std::function<bool(const Value*, const Node*)>& residualReady) {
  std::vector<ConvChain> chains;
  for (const Node* node : graph.nodes()) {
    if (!node->is("Conv") || node->numOutputs() != 1) continue;
    ConvChain chain;
    chain.conv = node;
    const Node* next = soleConsumer(node->output(0));
    if (next != nullptr && next->is("BatchNormalization") &&
        batchNormEpilogue(*next, opsetOf(*next), constant, chain.epilogue)) {
      chain.batchNorm = next;
    }
    const Value* value = chain.batchNorm ? chain.batchNorm->output(0) : node->output(0);
    if (std::optional<Use> use = soleUse(value); use && use->user->is("Add") &&
                                                 use->user->numInputs() == 2 && use->index <= 1 &&
                                                 opsetOf(*use->user) >= 7) {
      const Node* add = use->user;
      const Value* other = add->input(1 - use->index);
      if (other != nullptr && residualReady(other, node)) {
        chain.add = add;
        chain.residual = other;
        chain.epilogue.addsResidual = true;
        chain.epilogue.residualFirst = use->index == 1;
        value = add->output(0);
      }
    }
    next = soleConsumer(value);
    if (next != nullptr && next->numOutputs() == 1 &&
        activationEpilogue(*next, opsetOf(*next), constant, chain.epilogue.activation)) {
      chain.activation = next;
    }
    if (chain.batchNorm != nullptr || chain.add != nullptr || chain.activation != nullptr) {
      chains.push_back(std::move(chain));
    }
  }
  return chains;
}

}  // namespace qopt::interp
