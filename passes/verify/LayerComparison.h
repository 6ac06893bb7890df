// Runs the original and the current model on the same samples and accumulates the error of the
// current model's graph outputs and of the paired intermediate tensors.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "OutputRule.h"
#include "TensorPairs.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/analysis/SampleStream.h"

namespace qopt::verify {

/// The rule of a value of the original model (a graph output, or a pair marked `decides`)
/// whose first sample has the given shape.
using RuleFor = std::function<OutputRule(const Value& reference, const interp::Shape& shape)>;

struct ModelErrors {
  std::vector<analysis::ErrorAccumulator> outputs;   // by output position
  std::vector<OutputRule> outputRules;               // by output position
  std::vector<analysis::ErrorAccumulator> layers;    // by pair; empty() when nothing compared
  std::vector<std::optional<OutputRule>> pairRules;  // by pair: set for the pairs that decide
  /// By pair, with whole layers: the Conv heading the fused layer whose output the current
  /// tensor is (null for any other tensor).
  std::vector<const Node*> layerHeads;
  size_t samples = 0;  // the samples compared
};

/// Both models are fed each sample by input name (passes keep the interface's names), float
/// data converted to each model's input types. Throws qopt::Error (Verification) when the models'
/// outputs differ in number or shape. With `wholeLayers`, the values inside a layer that the
/// interpreter fuses (interp::FusedLayer: a Conv with its BatchNormalization, activation and
/// the like, as TensorRT fuses them) in either model are not compared, so both models run their
/// layers fused; their accumulators stay empty. Graph outputs and the pairs marked `decides`
/// count the decisions of their rule (`ruleFor`, asked once, at the first sample).
/// The samples of `source` stream through both models: on `workers` when only graph outputs are
/// compared, else one at a time (the paired tensors of one sample are compared while the next
/// values are computed), so that every accumulator adds the samples in order.
ModelErrors compareModels(analysis::SampleWorkers& workers, const Graph& original,
                          const Graph& current, std::span<const TensorPair> pairs,
                          analysis::SampleSource& source, int histogramBins, bool wholeLayers,
                          const RuleFor& ruleFor);

}  // namespace qopt::verify
