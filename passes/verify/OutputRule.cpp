#include "OutputRule.h"

#include <cmath>

#include <fmt/format.h>

#include "qopt/quant/GraphValues.h"

namespace qopt::verify {

namespace {

bool turnsScoresIntoDecisions(const Node& node) {
  return node.is("Softmax") || node.is("LogSoftmax") || node.is("Sigmoid");
}

int64_t aiOnnxOpset(const Value& value) {
  for (const OpsetImport& import : value.graph()->model().opsetImports) {
    if (import.domain.empty() || import.domain == "ai.onnx") return import.version;
  }
  return 0;
}

// The Softmax, LogSoftmax or Sigmoid that makes `value` a decision: its producer (looking
// through reshapes and transposes), or, for logits, the node that reads them.
const Node* decider(const Value& value, bool& logits) {
  logits = false;
  if (const Node* producer = quant::producerOfNumbers(value)) {
    if (turnsScoresIntoDecisions(*producer)) return producer;
  }
  if (value.isGraphOutput()) return nullptr;
  for (const Node* user : value.users()) {
    if (turnsScoresIntoDecisions(*user)) {
      logits = true;
      return user;
    }
  }
  return nullptr;
}

OutputRule classesAlong(const interp::Shape& shape, int64_t axis, std::string reason) {
  const auto rank = static_cast<int64_t>(shape.size());
  OutputRule rule;
  rule.reason = std::move(reason);
  if (rank >= 2 && axis == rank - 1 && shape.back() > 1) {
    rule.kind = rank == 2 ? OutputKind::Classes : OutputKind::Sequence;
    rule.decisions.kind = analysis::DecisionRule::Kind::LastAxis;
  } else if (rank >= 3 && axis == 1 && shape[1] > 1) {
    rule.kind = OutputKind::ClassMap;
    rule.decisions.kind = analysis::DecisionRule::Kind::ChannelAxis;
  } else {
    rule.reason += ", not a class axis of [N, C], [N, T, C] or [N, C, H, W]";
  }
  return rule;
}

std::string shapeText(const interp::Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

std::string OutputRule::name() const {
  switch (kind) {
    case OutputKind::Classes:
      return "top-1";
    case OutputKind::Sequence:
      return "sequence";
    case OutputKind::ClassMap:
      return "class-map";
    case OutputKind::Binary:
      return "binary";
    case OutputKind::ThresholdMap:
      return "map";
    case OutputKind::Relative:
      return "relative";
  }
  return "relative";
}

OutputRule ruleFor(const Value& value, const interp::Shape& shape) {
  const auto rank = static_cast<int64_t>(shape.size());
  bool logits = false;
  if (const Node* node = decider(value, logits)) {
    const std::string of = logits ? fmt::format("logits of a {}", node->opType()) : node->opType();
    if (node->is("Sigmoid")) {
      OutputRule rule;
      rule.kind = rank >= 3 ? OutputKind::ThresholdMap : OutputKind::Binary;
      rule.decisions.kind = analysis::DecisionRule::Kind::Threshold;
      rule.decisions.logits = logits;
      rule.decisions.threshold = logits ? 0.0 : 0.5;
      rule.reason = fmt::format("{} {}", of, shapeText(shape));
      return rule;
    }
    // Before opset 13 the axis defaults to 1 (Softmax flattened from it on; for [N, C] that is
    // the last axis all the same), from 13 on to -1.
    int64_t axis = node->attrInt("axis", aiOnnxOpset(*node->output(0)) < 13 ? 1 : -1);
    if (axis < 0) axis += rank;
    return classesAlong(shape, axis,
                        fmt::format("{} over axis {} of {}", of, axis, shapeText(shape)));
  }
  // Scores without a Softmax or Sigmoid may be logits or features: nothing says which, so
  // their top-1 is reported (and judged by an explicit top1= budget) but the verdict is their
  // relative error.
  OutputRule rule;
  rule.reason = fmt::format("{}, no Softmax or Sigmoid", shapeText(shape));
  return rule;
}

std::vector<std::string> verdictFailures(const OutputRule& rule, const analysis::ErrorMetrics& m,
                                         const VerdictBudget& budget) {
  std::vector<std::string> out;
  if (m.nonFinite > 0) out.push_back(fmt::format("{} values are NaN or infinite", m.nonFinite));
  const double relative = m.relativeError();
  if (!rule.decides()) {
    if (!(relative <= budget.relativeError)) {
      out.push_back(fmt::format("relative error {:.4g} > {}", relative, budget.relativeError));
    }
    return out;
  }
  if (rule.kind == OutputKind::ThresholdMap) {
    if (m.mapIou && !(*m.mapIou >= budget.mapIou)) {
      out.push_back(fmt::format("map IoU {:.4f} < {}", *m.mapIou, budget.mapIou));
    }
  } else if (m.clearTop1Agreement && !(*m.clearTop1Agreement >= budget.decisions)) {
    const auto flipped = static_cast<uint64_t>(
        std::llround((1.0 - *m.clearTop1Agreement) * static_cast<double>(m.clearTop1Rows)));
    out.push_back(fmt::format("clear decisions agree {:.4f} < {} ({} of {} flipped)",
                              *m.clearTop1Agreement, budget.decisions, flipped, m.clearTop1Rows));
  }
  if (!(relative <= budget.guard)) {
    out.push_back(fmt::format("relative error {:.4g} > {}", relative, budget.guard));
  }
  return out;
}

std::string describeRule(const OutputRule& rule, const VerdictBudget& budget) {
  std::string bound;
  switch (rule.kind) {
    case OutputKind::Classes:
    case OutputKind::Sequence:
    case OutputKind::ClassMap:
      bound = fmt::format("clear top-1 >= {}, rel-err <= {}", budget.decisions, budget.guard);
      break;
    case OutputKind::Binary:
      bound = fmt::format("clear decisions (> {}) >= {}, rel-err <= {}", rule.decisions.threshold,
                          budget.decisions, budget.guard);
      break;
    case OutputKind::ThresholdMap:
      bound = fmt::format("IoU of map > {} >= {}, rel-err <= {}", rule.decisions.threshold,
                          budget.mapIou, budget.guard);
      break;
    case OutputKind::Relative:
      bound = fmt::format("rel-err <= {}", budget.relativeError);
      break;
  }
  return fmt::format("{} ({}): {}", rule.name(), rule.reason, bound);
}

}  // namespace qopt::verify
