// What an output decides, and so how verify judges it by default: the agreement of the
// decisions users take from it (a class, a class per position, a thresholded score or map),
// guarded by a loose bound on its relative error; an output that decides nothing is judged by
// its relative error alone.
#pragma once

#include <string>

#include "qopt/analysis/Metrics.h"
#include "qopt/interp/Array.h"
#include "qopt/ir/Graph.h"

namespace qopt::verify {

enum class OutputKind {
  Classes,       // [N, C] class scores: top-1 per row
  Sequence,      // [N, T, C] (or more) scores: top-1 per position along the last axis
  ClassMap,      // [N, C, H, W] scores: top-1 per pixel along the channel axis
  Binary,        // scores of rank <= 2 through a sigmoid: each thresholded
  ThresholdMap,  // maps of rank >= 3 through a sigmoid: thresholded, judged by their IoU
  Relative,      // anything else: the relative error
};

struct OutputRule {
  OutputKind kind = OutputKind::Relative;
  analysis::DecisionRule decisions;
  /// Why this kind: "Softmax over the last axis", "plain [N, C] scores", "rank 4, no class axis".
  std::string reason;

  bool decides() const { return kind != OutputKind::Relative; }
  /// "top-1", "sequence", "class-map", "binary", "map", "relative".
  std::string name() const;
};

/// The rule for `value` of the original model (a graph output, or the logits a Softmax,
/// LogSoftmax or Sigmoid turns into one) whose first sample has shape `shape`.
OutputRule ruleFor(const Value& value, const interp::Shape& shape);

/// The bounds an output is judged by. Measured on the trained corpus with good pipelines and
/// deliberately broken ones (bench/verify/measure_verdicts.py; docs/passes/verify.md has the
/// table): every good pipeline's row stays inside them with at least 2x to spare on the
/// relative error, while doubled scales, lost clamps and reversed channels that change what an
/// output decides fall outside.
struct VerdictBudget {
  double decisions = 0.98;     // lowest agreement over the decisions the reference takes clearly
  double mapIou = 0.9;         // lowest IoU of thresholded maps
  double relativeError = 0.2;  // the relative error of an output that decides nothing
  double guard = 0.5;          // the relative error of an output that decides
};

/// Empty when `m` meets the rule's bounds, else each failed bound.
std::vector<std::string> verdictFailures(const OutputRule& rule, const analysis::ErrorMetrics& m,
                                         const VerdictBudget& budget);

/// The rule printed for a reader: "top-1 (Softmax over the last axis): clear top-1 >= 0.99,
/// rel-err <= 0.5".
std::string describeRule(const OutputRule& rule, const VerdictBudget& budget);

}  // namespace qopt::verify
