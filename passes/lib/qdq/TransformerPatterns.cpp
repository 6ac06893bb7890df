#include "qopt/qdq/TransformerPatterns.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "qopt/analysis/Precision.h"
#include "qopt/constants/ConstantValue.h"

namespace qopt::qdq {
namespace {

// Exports put at most a handful of nodes between the parts of a pattern (a reshape of the heads,
// a Cast, a scale, a mask); a bounded walk keeps a pathological graph cheap.
constexpr int kMaxSteps = 12;

bool isConstant(const Value* value) {
  return value != nullptr && (fold::isConstantValue(value) || analysis::isBuildTimeConstant(value));
}

bool isOneOf(const Node& node, std::span<const std::string_view> ops) {
  if (!node.domain().empty()) return false;
  return std::find(ops.begin(), ops.end(), node.opType()) != ops.end();
}

std::string quoted(const Node& node) {
  return fmt::format("'{}'", analysis::layerName(node));
}

// The non-constant operand of a binary node whose other operand is constant (Div: only a
// constant divisor), or null.
const Value* operandBesideConstant(const Node& node) {
  if (node.numInputs() != 2 || node.input(0) == nullptr || node.input(1) == nullptr) return nullptr;
  const bool c0 = isConstant(node.input(0));
  const bool c1 = isConstant(node.input(1));
  if (c1 && !c0) return node.input(0);
  if (c0 && !c1 && !node.is("Div")) return node.input(1);
  return nullptr;
}

bool isScale(const Node& node) {
  return (node.is("Div") || node.is("Mul")) && operandBesideConstant(node) != nullptr;
}

const Node* soleUser(const Value* value) {
  if (value == nullptr || value->isGraphOutput() || value->uses().size() != 1) return nullptr;
  return value->uses().front().user;
}

bool isMatMulOfActivations(const Node& node) {
  return node.is("MatMul") && node.input(0) != nullptr && node.input(1) != nullptr &&
         !isConstant(node.input(0)) && !isConstant(node.input(1));
}

bool isWeightedProjection(const Node& node) {
  return (node.is("MatMul") || node.is("Gemm")) && node.input(1) != nullptr &&
         isConstant(node.input(1)) && node.input(0) != nullptr && !isConstant(node.input(0));
}

// ---- attention ----

// Ops that move the heads around or change nothing numerically (Dropout in inference).
constexpr std::array<std::string_view, 11> kHeadPlumbing = {
    "Reshape", "Transpose", "Identity", "Cast",   "Squeeze", "Unsqueeze",
    "Flatten", "Split",     "Slice",    "Gather", "Dropout"};

// From the Softmax's input back to the scores MatMul, across scales, a mask (Add or Where) and
// Casts or Reshapes; the nodes crossed go to `crossed`.
const Node* findScores(const Value* value, AttentionBlock& block, std::vector<const Node*>& crossed,
                       int depth) {
  if (value == nullptr || depth > kMaxSteps) return nullptr;
  const Node* producer = value->producer();
  if (producer == nullptr || !producer->domain().empty()) return nullptr;
  if (isMatMulOfActivations(*producer)) return producer;
  // A Q/DQ pair in the chain is not part of the block; check-trt reports what it feeds.
  if (producer->is("QuantizeLinear") || producer->is("DequantizeLinear")) {
    return findScores(producer->input(0), block, crossed, depth + 1);
  }
  auto through = [&](const Value* next, auto&& mark) -> const Node* {
    const size_t size = crossed.size();
    crossed.push_back(producer);
    if (const Node* found = findScores(next, block, crossed, depth + 1)) {
      mark();
      return found;
    }
    crossed.resize(size);
    return nullptr;
  };
  if (isScale(*producer)) {
    return through(operandBesideConstant(*producer),
                   [&] { block.scaleAfter.insert(block.scaleAfter.begin(), producer); });
  }
  const auto markMask = [&] {
    if (block.mask == nullptr) block.mask = producer;
  };
  if (producer->is("Add") && producer->numInputs() == 2) {
    for (size_t i = 0; i < 2; ++i) {
      if (isConstant(producer->input(i))) continue;
      if (const Node* found = through(producer->input(i), markMask)) return found;
    }
    return nullptr;
  }
  if (producer->is("Where") && producer->numInputs() == 3) {
    // masked_fill: Where(mask, fill, scores) or Where(mask, scores, fill).
    for (size_t i : {size_t{2}, size_t{1}}) {
      if (isConstant(producer->input(i))) continue;
      if (const Node* found = through(producer->input(i), markMask)) return found;
    }
    return nullptr;
  }
  if (producer->is("Cast") || producer->is("Reshape") || producer->is("Identity")) {
    return through(producer->input(0), [] {});
  }
  return nullptr;
}

// From the Softmax's output forward to the context MatMul that reads it as input 0, across
// Casts, Dropout, Reshapes and the IsNaN/Where guard; the nodes crossed go to `crossed`.
const Node* findContext(const Value* value, std::vector<const Node*>& crossed, int depth) {
  if (value == nullptr || depth > kMaxSteps) return nullptr;
  const Node* found = nullptr;
  std::vector<const Node*> guards;
  for (const Use& use : value->uses()) {
    const Node& user = *use.user;
    if (!user.domain().empty()) continue;
    if (user.is("MatMul") && use.index == 0 && user.input(1) != nullptr &&
        !isConstant(user.input(1))) {
      found = found != nullptr ? found : &user;
      continue;
    }
    if ((user.is("QuantizeLinear") || user.is("DequantizeLinear")) && use.index == 0) {
      if (found == nullptr) found = findContext(user.output(0), crossed, depth + 1);
      continue;
    }
    if (user.is("IsNaN")) {
      guards.push_back(&user);
      continue;
    }
    const bool passes =
        ((user.is("Cast") || user.is("Identity") || user.is("Dropout") || user.is("Reshape")) &&
         use.index == 0) ||
        (user.is("Where") && use.index >= 1);
    if (!passes || found != nullptr) continue;
    const size_t size = crossed.size();
    crossed.push_back(&user);
    if (const Node* next = findContext(user.output(0), crossed, depth + 1)) {
      found = next;
    } else {
      crossed.resize(size);
    }
  }
  if (found != nullptr) crossed.insert(crossed.end(), guards.begin(), guards.end());
  return found;
}

// The scales applied to Q or K before the scores MatMul, and whether K passes a Transpose.
void readScoreInputs(AttentionBlock& block) {
  for (size_t input = 0; input < 2; ++input) {
    const Value* value = block.scores->input(input);
    for (int step = 0; value != nullptr && step < kMaxSteps; ++step) {
      const Node* producer = value->producer();
      if (producer == nullptr || !producer->domain().empty()) break;
      if (isScale(*producer)) {
        block.scaleBefore.push_back(producer);
        value = operandBesideConstant(*producer);
      } else if (producer->is("Transpose") || producer->is("Reshape") || producer->is("Identity") ||
                 producer->is("Cast")) {
        if (input == 1 && producer->is("Transpose")) block.keyTransposed = true;
        value = producer->input(0);
      } else {
        break;
      }
    }
  }
}

// The projection whose output reaches `value` through head plumbing, a bias Add and scales.
const Node* projectionBehind(const Value* value) {
  for (int step = 0; value != nullptr && step < kMaxSteps; ++step) {
    const Node* producer = value->producer();
    if (producer == nullptr || !producer->domain().empty()) return nullptr;
    if (isWeightedProjection(*producer)) return producer;
    if (isOneOf(*producer, kHeadPlumbing)) {
      value = producer->input(0);
    } else if (producer->is("Add") || producer->is("Mul") || producer->is("Div")) {
      value = operandBesideConstant(*producer);
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

// The output projection reading the context through head plumbing.
const Node* projectionAfter(const Value* value) {
  for (int step = 0; value != nullptr && step < kMaxSteps; ++step) {
    const Node* user = soleUser(value);
    if (user == nullptr || !user->domain().empty()) return nullptr;
    if (isWeightedProjection(*user) && user->input(0) == value) return user;
    if (!(user->is("Transpose") || user->is("Reshape") || user->is("Identity") ||
          user->is("Cast") || user->is("Flatten"))) {
      return nullptr;
    }
    value = user->output(0);
  }
  return nullptr;
}

void addProjection(AttentionBlock& block, const Node* node, std::string role) {
  if (node == nullptr) return;
  for (Projection& p : block.projections) {
    if (p.node == node) {
      p.role += "/" + role;  // packed QKV: one MatMul computes several
      return;
    }
  }
  block.projections.push_back({node, std::move(role)});
}

std::optional<AttentionBlock> matchAttention(const Node& softmax) {
  AttentionBlock block;
  block.softmax = &softmax;
  std::vector<const Node*> before;
  block.scores = findScores(softmax.input(0), block, before, 0);
  if (block.scores == nullptr) return std::nullopt;
  std::vector<const Node*> after;
  block.context = findContext(softmax.output(0), after, 0);
  if (block.context == nullptr || block.context == block.scores) return std::nullopt;
  block.interior = std::move(before);
  std::reverse(block.interior.begin(), block.interior.end());
  block.interior.push_back(&softmax);
  block.interior.insert(block.interior.end(), after.begin(), after.end());
  readScoreInputs(block);
  addProjection(block, projectionBehind(block.scores->input(0)), "query");
  addProjection(block, projectionBehind(block.scores->input(1)), "key");
  addProjection(block, projectionBehind(block.context->input(1)), "value");
  addProjection(block, projectionAfter(block.context->output(0)), "output");
  return block;
}

// ---- LayerNorm ----

// A constant-operand Mul then Add after `last` (LayerNorm's scale and bias), when present.
void extendAffine(FloatPattern& pattern) {
  for (std::string_view op : {"Mul", "Add"}) {
    const Node* user = soleUser(pattern.last->output(0));
    if (user == nullptr || !user->is(op) || operandBesideConstant(*user) == nullptr) return;
    pattern.nodes.push_back(user);
    pattern.last = user;
  }
}

bool isCentered(const Value* value, const Value* x, const Node*& mean) {
  const Node* sub = value ? value->producer() : nullptr;
  if (sub == nullptr || !sub->is("Sub") || sub->input(0) != x) return false;
  const Node* m = sub->input(1) ? sub->input(1)->producer() : nullptr;
  if (m == nullptr || !m->is("ReduceMean") || m->input(0) != x) return false;
  mean = m;
  return true;
}

std::optional<FloatPattern> matchDecomposedLayerNorm(const Node& div) {
  const Node* sub = div.input(0) ? div.input(0)->producer() : nullptr;
  if (sub == nullptr || !sub->is("Sub")) return std::nullopt;
  const Value* x = sub->input(0);
  const Node* mean = nullptr;
  if (!isCentered(sub->output(0), x, mean)) return std::nullopt;
  const Node* sqrt = div.input(1) ? div.input(1)->producer() : nullptr;
  if (sqrt == nullptr || !sqrt->is("Sqrt")) return std::nullopt;
  const Node* epsAdd = sqrt->input(0) ? sqrt->input(0)->producer() : nullptr;
  if (epsAdd == nullptr || !epsAdd->is("Add")) return std::nullopt;
  const Value* variance = operandBesideConstant(*epsAdd);
  const Node* varMean = variance ? variance->producer() : nullptr;
  if (varMean == nullptr || !varMean->is("ReduceMean")) return std::nullopt;
  const Node* square = varMean->input(0) ? varMean->input(0)->producer() : nullptr;
  if (square == nullptr) return std::nullopt;
  const Value* centered = square->input(0);
  const bool isSquare = (square->is("Pow") && isConstant(square->input(1))) ||
                        (square->is("Mul") && square->input(1) == centered);
  const Node* mean2 = nullptr;
  if (!isSquare || !isCentered(centered, x, mean2)) return std::nullopt;
  FloatPattern pattern;
  pattern.kind = FloatPattern::Kind::LayerNorm;
  pattern.form = "decomposed";
  pattern.input = x;
  pattern.nodes = {mean, sub};
  if (centered->producer() != sub) pattern.nodes.push_back(centered->producer());
  if (mean2 != mean) pattern.nodes.push_back(mean2);
  for (const Node* n : {square, varMean, epsAdd, sqrt, &div}) pattern.nodes.push_back(n);
  pattern.last = &div;
  extendAffine(pattern);
  return pattern;
}

// ---- GELU ----

// After `one` = Add(f(x), 1): the multiplication by x and by 0.5, in any of the orders
// exporters write: (x * one) * 0.5, (one * 0.5) * x, or (x * 0.5) * one.
bool finishGelu(FloatPattern& pattern, const Node& one) {
  const Value* x = pattern.input;
  const Node* m1 = soleUser(one.output(0));
  if (m1 == nullptr || !m1->is("Mul") || m1->numInputs() != 2) return false;
  const Value* other = m1->input(0) == one.output(0) ? m1->input(1) : m1->input(0);
  if (other == x) {
    const Node* m2 = soleUser(m1->output(0));
    if (m2 == nullptr || !m2->is("Mul") || operandBesideConstant(*m2) == nullptr) return false;
    pattern.nodes.insert(pattern.nodes.end(), {m1, m2});
    pattern.last = m2;
    return true;
  }
  if (isConstant(other)) {
    const Node* m2 = soleUser(m1->output(0));
    if (m2 == nullptr || !m2->is("Mul") || (m2->input(0) != x && m2->input(1) != x)) {
      return false;
    }
    pattern.nodes.insert(pattern.nodes.end(), {m1, m2});
    pattern.last = m2;
    return true;
  }
  const Node* half = other ? other->producer() : nullptr;
  if (half == nullptr || !half->is("Mul") || operandBesideConstant(*half) != x) return false;
  pattern.nodes.insert(pattern.nodes.end(), {half, m1});
  pattern.last = m1;
  return true;
}

const Node* addOfOne(const Node& node) {
  const Node* add = soleUser(node.output(0));
  if (add == nullptr || !add->is("Add") || operandBesideConstant(*add) != node.output(0)) {
    return nullptr;
  }
  return add;
}

std::optional<FloatPattern> matchErfGelu(const Node& erf) {
  const Node* pre = erf.input(0) ? erf.input(0)->producer() : nullptr;
  if (pre == nullptr || !isScale(*pre)) return std::nullopt;
  const Node* one = addOfOne(erf);
  if (one == nullptr) return std::nullopt;
  FloatPattern pattern;
  pattern.kind = FloatPattern::Kind::Gelu;
  pattern.form = "Erf form";
  pattern.input = operandBesideConstant(*pre);
  pattern.nodes = {pre, &erf, one};
  if (!finishGelu(pattern, *one)) return std::nullopt;
  return pattern;
}

std::optional<FloatPattern> matchTanhGelu(const Node& tanh) {
  const Node* scaled = tanh.input(0) ? tanh.input(0)->producer() : nullptr;
  if (scaled == nullptr || !scaled->is("Mul")) return std::nullopt;
  const Value* innerValue = operandBesideConstant(*scaled);
  const Node* inner = innerValue ? innerValue->producer() : nullptr;
  if (inner == nullptr || !inner->is("Add") || inner->numInputs() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Value* x = inner->input(i);
    const Node* cubic = inner->input(1 - i) ? inner->input(1 - i)->producer() : nullptr;
    if (x == nullptr || cubic == nullptr || !cubic->is("Mul")) continue;
    const Value* powered = operandBesideConstant(*cubic);
    const Node* pow = powered ? powered->producer() : nullptr;
    if (pow == nullptr || !pow->is("Pow") || pow->input(0) != x || !isConstant(pow->input(1))) {
      continue;
    }
    const Node* one = addOfOne(tanh);
    if (one == nullptr) return std::nullopt;
    FloatPattern pattern;
    pattern.kind = FloatPattern::Kind::Gelu;
    pattern.form = "tanh form";
    pattern.input = x;
    pattern.nodes = {pow, cubic, inner, scaled, &tanh, one};
    if (!finishGelu(pattern, *one)) return std::nullopt;
    return pattern;
  }
  return std::nullopt;
}

FloatPattern singleNode(const Node& node, FloatPattern::Kind kind, std::string form) {
  FloatPattern pattern;
  pattern.kind = kind;
  pattern.form = std::move(form);
  pattern.input = node.input(0);
  pattern.nodes = {&node};
  pattern.last = &node;
  return pattern;
}

std::optional<FloatPattern> matchFloatPattern(const Node& node) {
  if (node.is("LayerNormalization")) {
    return singleNode(node, FloatPattern::Kind::LayerNorm, "LayerNormalization");
  }
  if (node.is("Gelu") || node.is("Gelu", "com.microsoft") || node.is("FastGelu", "com.microsoft")) {
    return singleNode(node, FloatPattern::Kind::Gelu, node.opType() + " op");
  }
  if (node.is("Div")) return matchDecomposedLayerNorm(node);
  if (node.is("Erf")) return matchErfGelu(node);
  if (node.is("Tanh")) return matchTanhGelu(node);
  return std::nullopt;
}

std::string listScales(const std::vector<const Node*>& scales) {
  std::vector<std::string> ops;
  for (const Node* n : scales) {
    if (std::find(ops.begin(), ops.end(), n->opType()) == ops.end()) ops.push_back(n->opType());
  }
  return fmt::format("{}", fmt::join(ops, "/"));
}

}  // namespace

std::string AttentionBlock::describe() const {
  std::vector<std::string> traits;
  traits.push_back(keyTransposed ? "K through Transpose" : "K without Transpose");
  if (!scaleBefore.empty())
    traits.push_back(fmt::format("scaled by {} before", listScales(scaleBefore)));
  if (!scaleAfter.empty())
    traits.push_back(fmt::format("scaled by {} after", listScales(scaleAfter)));
  if (mask != nullptr) traits.push_back(fmt::format("mask {} {}", mask->opType(), quoted(*mask)));
  std::string text =
      fmt::format("scores MatMul {} ({}), Softmax {}, context MatMul {}", quoted(*scores),
                  fmt::join(traits, ", "), quoted(*softmax), quoted(*context));
  if (!projections.empty()) {
    std::vector<std::string> parts;
    for (const Projection& p : projections) {
      parts.push_back(fmt::format("{} {}", p.role, quoted(*p.node)));
    }
    text += fmt::format("; projections: {}", fmt::join(parts, ", "));
  }
  return text;
}

std::string FloatPattern::describe() const {
  const char* what = kind == Kind::LayerNorm ? "LayerNorm" : "GELU";
  if (nodes.size() == 1) return fmt::format("{} ({}) {}", what, form, quoted(*last));
  std::vector<std::string> ops;
  for (const Node* n : nodes) ops.push_back(n->opType());
  return fmt::format("{} ({}: {}) ending at {}", what, form, fmt::join(ops, ", "), quoted(*last));
}

const AttentionBlock* TransformerPatterns::attentionOf(const Node* matmul) const {
  auto it = attentionByMatMul.find(matmul);
  return it == attentionByMatMul.end() ? nullptr : &attention[it->second];
}

std::string TransformerPatterns::floatInteriorOf(const Node* node) const {
  auto it = floatInterior.find(node);
  return it == floatInterior.end() ? std::string() : it->second;
}

TransformerPatterns findTransformerPatterns(const Graph& graph) {
  TransformerPatterns patterns;
  for (const Node* node : graph.nodes()) {
    if (node->is("Softmax")) {
      if (std::optional<AttentionBlock> block = matchAttention(*node)) {
        // Two Softmax chains claiming the same MatMul: the first keeps it.
        if (patterns.attentionByMatMul.count(block->scores) ||
            patterns.attentionByMatMul.count(block->context)) {
          continue;
        }
        const size_t index = patterns.attention.size();
        patterns.attentionByMatMul[block->scores] = index;
        patterns.attentionByMatMul[block->context] = index;
        const std::string where = fmt::format("the attention block of Softmax {}", quoted(*node));
        for (const Node* n : block->interior) patterns.floatInterior.emplace(n, where);
        patterns.attention.push_back(std::move(*block));
      }
      continue;
    }
    if (std::optional<FloatPattern> pattern = matchFloatPattern(*node)) {
      const char* what = pattern->kind == FloatPattern::Kind::LayerNorm ? "LayerNorm" : "GELU";
      const std::string where = fmt::format("the {} ending at {}", what, quoted(*pattern->last));
      for (const Node* n : pattern->nodes) patterns.floatInterior.emplace(n, where);
      patterns.floatPatterns.push_back(std::move(*pattern));
    }
  }
  return patterns;
}

}  // namespace qopt::qdq
