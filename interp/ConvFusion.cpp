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

// The one float32 value of a constant of one element whose rank is at most `rank` (so that
// broadcasting it leaves the other operand's shape as it is).
std::optional<float> scalarConstant(const Array* a, size_t rank) {
  if (a == nullptr || a->dataType() != DataType::Float || a->numel() != 1 ||
      static_cast<size_t>(a->rank()) > rank) {
    return std::nullopt;
  }
  return a->data<float>()[0];
}

// An Add of `value` (the Conv's output, of rank `rank`) and a float32 constant that holds one
// value per output channel, broadcast over the rest ([C, 1, ...] or [1, C, 1, ...]): the
// affine map v * 1 + b, which is v + b exactly (also when contracted to a fused multiply-add).
bool biasEpilogue(const Node& add, size_t valueIndex, int64_t opset, int64_t filters, size_t rank,
                  const ConstantLookup& constant, ConvEpilogue& epilogue) {
  if (opset < 7 || add.numInputs() != 2 || valueIndex > 1) return false;
  const Array* c = constant(add.input(1 - valueIndex));
  if (c == nullptr || c->dataType() != DataType::Float || c->numel() != filters || rank < 2) {
    return false;
  }
  const Shape& dims = c->shape();
  // The channel axis is 1 in the output; counted from the end, rank - 2.
  const size_t fromEnd = rank - 2;
  if (dims.size() < fromEnd + 1 || dims.size() > rank) return false;
  const size_t channelAxis = dims.size() - 1 - fromEnd;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != (i == channelAxis ? filters : 1)) return false;
  }
  epilogue.scale.assign(static_cast<size_t>(filters), 1.0f);
  epilogue.shift = c->toFloatVector();
  return true;
}

// x * Clip(x + offset, lo, hi) / divisor written out with Add, Clip, Mul and Div from `x` (of
// rank `rank`), which nothing else reads: the four nodes in order, and the activation.
std::optional<std::vector<const Node*>> writtenOutHardSwish(
    const Value* x, size_t rank, const ConstantLookup& constant,
    const std::function<int64_t(const Node&)>& opsetOf, Activation& activation) {
  if (x == nullptr || x->isGraphOutput() || x->uses().size() != 2) return std::nullopt;
  const Node* add = nullptr;
  const Node* mul = nullptr;
  for (const Use& use : x->uses()) {
    if (use.user->graph() != x->graph() || use.user->domain() != "" || use.user->numInputs() != 2 ||
        use.user->numOutputs() != 1) {
      return std::nullopt;
    }
    if (use.user->opType() == "Add") add = use.user;
    if (use.user->opType() == "Mul") mul = use.user;
  }
  if (add == nullptr || mul == nullptr || opsetOf(*add) < 7 || opsetOf(*mul) < 7) {
    return std::nullopt;
  }
  const std::optional<float> offset =
      scalarConstant(constant(add->input(add->input(0) == x ? 1 : 0)), rank);
  const Node* clip = soleConsumer(add->output(0));
  Activation bounds;
  if (!offset || clip == nullptr || !clip->is("Clip") || clip->numOutputs() != 1 ||
      !activationEpilogue(*clip, opsetOf(*clip), constant, bounds)) {
    return std::nullopt;
  }
  std::optional<Use> gateUse = soleUse(clip->output(0));
  if (!gateUse || gateUse->user != mul) return std::nullopt;
  const Node* div = soleConsumer(mul->output(0));
  if (div == nullptr || !div->is("Div") || div->numInputs() != 2 || div->numOutputs() != 1 ||
      opsetOf(*div) < 7) {
    return std::nullopt;
  }
  const std::optional<float> divisor = scalarConstant(constant(div->input(1)), rank);
  if (!divisor) return std::nullopt;
  activation = {Activation::Kind::HardSwish, bounds.lo, bounds.hi, *offset, *divisor};
  return std::vector<const Node*>{add, clip, mul, div};
}

// A Mul by a scalar constant, then an Add of one, each optional, after `value`: their nodes in
// order, the scale, and the value they end at.
const Value* scalarScale(const Value* value, size_t rank, const ConstantLookup& constant,
                         const std::function<int64_t(const Node&)>& opsetOf, ScalarScale& scale,
                         std::vector<const Node*>& nodes) {
  auto step = [&](const char* op, float& into) {
    std::optional<Use> use = soleUse(value);
    if (!use || use->index > 1 || !use->user->is(op) || use->user->numInputs() != 2 ||
        use->user->numOutputs() != 1 || opsetOf(*use->user) < 7) {
      return;
    }
    const std::optional<float> c = scalarConstant(constant(use->user->input(1 - use->index)), rank);
    if (!c) return;
    into = *c;
    nodes.push_back(use->user);
    value = use->user->output(0);
  };
  step("Mul", scale.multiplier);
  step("Add", scale.addend);
  return value;
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
    const Array* weight = constant(node->input(1));
    const Value* value = node->output(0);
    if (std::optional<Use> use = soleUse(value);
        use && weight != nullptr && use->user->is("Add") &&
        biasEpilogue(*use->user, use->index, opsetOf(*use->user), weight->dim(0),
                     static_cast<size_t>(weight->rank()), constant, chain.epilogue)) {
      chain.bias = use->user;
      value = chain.bias->output(0);
    } else if (const Node* next = soleConsumer(value);
               next != nullptr && next->is("BatchNormalization") &&
               batchNormEpilogue(*next, opsetOf(*next), constant, chain.epilogue)) {
      chain.batchNorm = next;
      value = chain.batchNorm->output(0);
    }
    // The output's rank; 0 when the weight is computed (then only rank-0 scalars are taken).
    const size_t rank = weight != nullptr ? static_cast<size_t>(weight->rank()) : 0;
    value = scalarScale(value, rank, constant, opsetOf, chain.epilogue.before, chain.before);
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
    const Node* next = soleConsumer(value);
    if (next != nullptr && next->numOutputs() == 1 &&
        activationEpilogue(*next, opsetOf(*next), constant, chain.epilogue.activation)) {
      chain.activation = {next};
    } else if (auto nodes =
                   writtenOutHardSwish(value, rank, constant, opsetOf, chain.epilogue.activation)) {
      chain.activation = std::move(*nodes);
    }
    if (!chain.activation.empty()) {
      scalarScale(chain.activation.back()->output(0), rank, constant, opsetOf, chain.epilogue.after,
                  chain.after);
    }
    if (!chain.laterNodes().empty()) {
      chains.push_back(std::move(chain));
    }
  }
  return chains;
}

}  // namespace qopt::interp
