// The calibration options insert-qdq and static-quant share: one declaration, one validation, one
// help text. A pass holds a CalibrationOptions member where these options stand in its option list
// (they print in this order in --list-passes and the canonical pipeline).
#pragma once

#include <cstdint>
#include <string>

#include "qopt/pass/Options.h"

namespace qopt::qdq {

struct CalibrationOptions {
  explicit CalibrationOptions(OptionSet& pass)
      : percentile{pass, "percentile", 99.99, "Percentile of |x| for calibrator=percentile"},
        samples{pass, "samples", 0, "Calibration samples to use (0: all)"},
        threads{
            pass, "threads", 0,
            "Calibration threads, one sample each (0: the run's --threads, at most 16); the scales "
            "do not depend on it"},
        cache{pass, "cache", "",
              "Write a TensorRT calibration cache of the activation scales here"},
        scales{pass, "scales", "", "Write every activation and weight scale to this JSON file"} {}

  /// Refuses values out of range through `pass.failOption` (naming the pass and the option).
  void validate(const OptionSet& pass) const {
    if (!(*percentile > 0 && *percentile <= 100))
      pass.failOption("percentile", "must be in (0, 100]");
    if (*samples < 0) pass.failOption("samples", "must be 0 (all) or positive");
    if (*threads < 0 || *threads > 256) pass.failOption("threads", "must be 0 (automatic) to 256");
  }

  Option<double> percentile;
  Option<int64_t> samples;
  Option<int64_t> threads;
  Option<std::string> cache;
  Option<std::string> scales;
};

}  // namespace qopt::qdq
