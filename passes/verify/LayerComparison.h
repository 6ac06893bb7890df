// Runs the original and the current model on the same samples and accumulates the error of the
// current model's graph outputs and of the paired intermediate tensors.
#pragma once

#include <span>
#include <vector>

#include "TensorPairs.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Metrics.h"

namespace qopt::verify {

struct ModelErrors {
  std::vector<analysis::ErrorAccumulator> outputs;  // by output position
  std::vector<analysis::ErrorAccumulator> layers;   // by pair; empty() when nothing compared
};

/// Both models are fed each sample by input name (passes keep the interface's names), float
/// data converted to each model's input types. Throws qopt::Error (Verification) when the models'
/// outputs differ in number or shape.
ModelErrors compareModels(const Graph& original, const Graph& current,
                          std::span<const TensorPair> pairs,
                          std::span<const analysis::Sample> samples, int histogramBins);

}  // namespace qopt::verify
