// What the HTML report opens with, in words drawn from the JSON report only: the figure each
// output is judged by against the float model (verify's rule: top-1, sequence, class-map,
// binary, map or relative), and one line per pass saying what its statistics say it changed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "qopt/pass/Json.h"

namespace qopt::analysis {

struct TaskFigure {
  std::string output;   // the output's name; "z (logits of y)" for a logits row
  bool logits = false;  // an extra row: the logits of a Softmax, LogSoftmax or Sigmoid output
  bool passed = false;
  /// "Map agreement with FP32 (IoU of positions > 0.5): 98.1 % on 16 evaluation samples —
  /// bound 90 %: passed"
  std::string sentence;
  /// "relative error 0.089 (at most 0.5)", then the output's failures when it failed.
  std::string detail;
};

/// One figure per entry of verify's "outputs" (results.verify of the JSON report); `reference`:
/// the verify pass's reference= option (empty: the pipeline's input model, called FP32).
std::vector<TaskFigure> taskFigures(const Json& verify, std::string_view reference);

/// What the statistics of pass `name` say it changed, in words ("2 of 3 BatchNormalization
/// folded into the layer before them; 1 kept"); empty for a pass without a known summary or
/// whose statistics lack the counters it reads.
std::string passHeadline(std::string_view name, const Json& statistics, const Json& options);

}  // namespace qopt::analysis
