#include "Stripper.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "ValueBounds.h"
#include "qopt/analysis/QuantizedLayers.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Error.h"

namespace qopt::stripqdq {
namespace {

bool isQdqDomain(const Node& node) {
  return node.domain().empty() || node.domain() == "com.microsoft";
}

bool isQuantize(const Node* node) {
  return node != nullptr && node->opType() == "QuantizeLinear" && isQdqDomain(*node);
}

// Ops that only move or select values: an integer tensor through them holds the same quantized
// values, so they can as well move the float values.
bool movesValues(const Node& node) {
  static constexpr std::string_view kOps[] = {
      "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",      "Identity",
      "Slice",   "Gather",    "MaxPool", "Expand",    "DepthToSpace", "SpaceToDepth"};
  return node.domain().empty() &&
         std::find(std::begin(kOps), std::end(kOps), node.opType()) != std::end(kOps);
}

// The only reader of `value` is one node, and the graph does not return it.
bool readOnlyOnce(const Value* value) {
  return value->uses().size() == 1 && !value->isGraphOutput();
}

std::string tensorSubject(const Value* value) {
  return fmt::format("tensor '{}'", value->name());
}

}  // namespace

bool Stripper::strip(Node& dq) {
  if (dq.opType() != "DequantizeLinear" || !isQdqDomain(dq)) return false;
  std::string why;
  std::optional<QuantParams> params = readQuantParams(dq, &why);
  Value* x = dq.input(0);
  if (!params || x == nullptr) {
    result_.missed(dq.describe(), "kept: " + (params ? std::string("it has no input") : why));
    result_.statistics.add("dequantize-kept");
    return false;
  }
  Node* producer = x->producer();
  if (isQuantize(producer)) {
    if (fold::constantThroughCasts(producer->input(0))) {
      return restoreQatWeight(dq, *producer, *params);
    }
    return removePair(dq, *producer, *params);
  }
  if (fold::constantThroughCasts(x)) return foldConstant(dq, *params);

  std::vector<Node*> moves;
  for (Value* v = x; v->producer() != nullptr && !isQuantize(v->producer());) {
    Node* move = v->producer();
    if (!movesValues(*move) || !readOnlyOnce(v) || move->numOutputs() != 1 ||
        move->input(0) == nullptr) {
      moves.clear();
      break;
    }
    moves.insert(moves.begin(), move);
    v = move->input(0);
  }
  if (!moves.empty() && isQuantize(moves.front()->input(0)->producer())) {
    return removeAcrossMoves(dq, *moves.front()->input(0)->producer(), moves, *params);
  }
  result_.missed(dq.describe(),
                 fmt::format("kept: it reads '{}', which no QuantizeLinear of this model produces "
                             "(directly or through Reshape, Transpose and similar ops)",
                             x->name()));
  result_.statistics.add("dequantize-kept");
  return false;
}

bool Stripper::foldConstant(Node& dq, const QuantParams& params) {
  Tensor values;
  try {
    values = analysis::dequantizeConstant(dq);
  } catch (const Error& e) {
    result_.missed(dq.describe(), "kept: " + e.cause());
    result_.statistics.add("dequantize-kept");
    return false;
  }
  const std::string name = dq.output(0)->name();
  values.setName(name + "_float");
  Value* folded = dq.graph()->addInitializer(std::make_shared<Tensor>(std::move(values)));
  weightScales_.emplace_back(name, params);
  replaceAndErase(dq, folded);
  if (!model_.isNameUsed(name)) folded->setName(name);
  result_.applied(tensorSubject(folded), "stored in float (the dequantized values)");
  result_.statistics.add("weights-folded");
  return true;
}

bool Stripper::restoreQatWeight(Node& dq, Node& q, const QuantParams& params) {
  std::string why;
  std::optional<QuantParams> qParams = readQuantParams(q, &why);
  Value* weight = q.input(0);
  // A float weight quantized in the graph: the original weight is what the pair stood for. When
  // the two nodes disagree, only the dequantized values are faithful.
  if (!qParams || !sameQuantization(*qParams, params) || !fold::isConstantValue(weight) ||
      weight->type().elemType != DataType::Float) {
    return foldConstant(dq, params);
  }
  weightScales_.emplace_back(weight->name(), params);
  replaceAndErase(dq, weight);
  result_.applied(tensorSubject(weight), "the float weight is read directly (QAT Q/DQ removed)");
  result_.statistics.add("weights-restored");
  return true;
}

bool Stripper::removePair(Node& dq, Node& q, const QuantParams& params) {
  std::string why;
  std::optional<QuantParams> qParams = readQuantParams(q, &why);
  if (!qParams || !sameQuantization(*qParams, params)) {
    result_.missed(dq.describe(),
                   qParams ? std::string("kept: its QuantizeLinear uses other parameters, so the "
                                         "pair is not a rounding of one tensor")
                           : "kept: its QuantizeLinear " + why);
    result_.statistics.add("dequantize-kept");
    return false;
  }
  Value* x = q.input(0);
  if (!dq.output(0)->hasUses() && !dq.output(0)->isGraphOutput()) {
    // Nothing reads the pair: it goes, and its scale describes no tensor of the output.
    replaceAndErase(dq, x);
    result_.statistics.add("pairs-removed");
    return true;
  }
  Value* replacement = clamped(x, params, dq);
  record(x, params);
  if (replacement != x) record(replacement, params);
  replaceAndErase(dq, replacement);
  result_.statistics.add("pairs-removed");
  return true;
}

bool Stripper::removeAcrossMoves(Node& dq, Node& q, std::vector<Node*> moves,
                                 const QuantParams& params) {
  std::string why;
  std::optional<QuantParams> qParams = readQuantParams(q, &why);
  if (!qParams || !sameQuantization(*qParams, params)) {
    result_.missed(dq.describe(), "kept: its QuantizeLinear uses other parameters");
    result_.statistics.add("dequantize-kept");
    return false;
  }
  Value* x = q.input(0);
  Value* start = clamped(x, params, *moves.front());
  record(x, params);
  if (start != x) record(start, params);
  moves.front()->setInput(0, start);
  for (Node* move : moves) {
    move->output(0)->mutableType().elemType = x->type().elemType;
    record(move->output(0), params);
  }
  replaceAndErase(dq, moves.back()->output(0));
  // The QuantizeLinear may now be unread.
  fold::eraseIfUnused(q.output(0));
  result_.statistics.add("pairs-removed");
  result_.statistics.add("pairs-removed-across-moves");
  return true;
}

Value* Stripper::clamped(Value* x, const QuantParams& params, Node& insertBefore) {
  if (!clamp_) return x;
  if (!params.perTensor()) {
    result_.note(tensorSubject(x), "per-axis activation quantization: no clamp restored");
    return x;
  }
  const FloatRange range = representableRange(params, 0);
  const Bounds known = knownBounds(x);
  const double half = 0.5 * params.scales[0];
  // Values calibration data showed beyond the range (by more than rounding) were clamped by it.
  bool seenBelow = false;
  bool seenAbove = false;
  if (observed_ != nullptr) {
    if (auto it = observed_->find(x); it != observed_->end()) {
      seenBelow = it->second.lo < range.lo - half;
      seenAbove = it->second.hi > range.hi + half;
    }
  }
  // The quantized range starting at zero means a Relu or Clip was folded into it: restore it
  // with the upper bound the range had. Otherwise an upper bound changes values where it is
  // below a bound the producer is known to keep (a Clip(0, 6) quantized to a narrower range) or
  // below values the data showed.
  const bool needLo = known.lo < range.lo && (range.lo >= 0 || seenBelow);
  const bool needHi =
      range.hi < known.hi &&
      (needLo || (std::isfinite(known.hi) && range.hi < known.hi - half) || seenAbove);
  if (!needLo && !needHi) return x;
  const double inf = std::numeric_limits<double>::infinity();
  auto key = std::make_tuple(insertBefore.graph(), static_cast<const Value*>(x),
                             needLo ? range.lo : -inf, needHi ? range.hi : inf);
  if (auto it = clamps_.find(key); it != clamps_.end()) return it->second;
  DataType type = x->type().elemType != DataType::Undefined ? x->type().elemType : params.scaleType;
  Node* clamp = makeClamp(x, range.lo, range.hi, needLo, needHi, type, insertBefore);
  clamps_[key] = clamp->output(0);
  result_.applied(clamp->describe(),
                  fmt::format("restores the clamp of the removed quantization of '{}' to [{}, {}]",
                              x->name(), needLo ? fmt::format("{:g}", range.lo) : "-inf",
                              needHi ? fmt::format("{:g}", range.hi) : "inf"));
  result_.statistics.add(clamp->opType() == "Relu" ? "relu-inserted" : "clip-inserted");
  return clamp->output(0);
}

Node* Stripper::makeClamp(Value* x, double lo, double hi, bool needLo, bool needHi, DataType type,
                          Node& insertBefore) {
  Graph& graph = *insertBefore.graph();
  const bool relu = needLo && !needHi && lo == 0.0;
  Node* node = graph.createEmptyNode(relu ? "Relu" : "Clip", "", &insertBefore);
  node->setName(model_.uniqueNodeName(x->name() + "_clamp"));
  node->addInput(x);
  if (!relu) {
    if (model_.opsetVersion("").value_or(13) < 11) {
      if (needLo) node->setAttr(Attribute::makeFloat("min", static_cast<float>(lo)));
      if (needHi) node->setAttr(Attribute::makeFloat("max", static_cast<float>(hi)));
    } else {
      auto scalar = [&](double v, const char* suffix) {
        Tensor t = Tensor::fromDoubles(type, {}, std::span<const double>(&v, 1));
        t.setName(model_.uniqueValueName(x->name() + suffix));
        return graph.addInitializer(std::make_shared<Tensor>(std::move(t)));
      };
      node->addInput(needLo ? scalar(lo, "_clamp_min") : nullptr);
      if (needHi) node->addInput(scalar(hi, "_clamp_max"));
    }
  }
  Value* out = node->addOutput(model_.uniqueValueName(x->name() + "_clamped"));
  out->setType(x->type());
  return node;
}

void Stripper::record(Value* value, const QuantParams& params) {
  for (RemovedScale& entry : scales_) {
    if (entry.value != value) continue;
    // Two pairs on one tensor (a chain): the narrower range is what both together clamp to.
    if (cacheAmax(params, 0) < cacheAmax(entry.params, 0)) entry.params = params;
    return;
  }
  scales_.push_back({value, params});
}

void Stripper::replaceAndErase(Node& dq, Value* replacement) {
  Value* out = dq.output(0);
  if (out->isGraphOutput() &&
      (replacement->producer() == nullptr || replacement->isGraphOutput())) {
    // A graph output would otherwise take the name of a graph input, an initializer or another
    // output: an Identity keeps the model's interface as it was.
    Node* identity = dq.graph()->createEmptyNode("Identity", "", &dq);
    identity->addInput(replacement);
    Value* copy = identity->addOutput(model_.uniqueValueName(out->name() + "_float"));
    copy->setType(out->type());
    replacement = copy;
  }
  out->replaceAllUsesWith(replacement);
  std::vector<Value*> inputs;
  for (Value* in : dq.inputs()) {
    if (in != nullptr) inputs.push_back(in);
  }
  dq.graph()->eraseNode(&dq);
  fold::eraseIfUnused(inputs);
}

}  // namespace qopt::stripqdq
