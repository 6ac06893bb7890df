// What verify found: per output and per compared tensor the metrics and failed bounds, the first
// layer whose error exceeds the budget, and how that is published and printed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "OutputRule.h"
#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/Histogram.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/pass/Json.h"

namespace qopt::verify {

struct CheckedTensor {
  std::string tensor;  // name in the original model
  /// For the logits of an output a Softmax, LogSoftmax or Sigmoid computes: that output's name.
  std::string logitsOf;
  std::string node;  // the layer computing it now
  std::string op;
  analysis::ErrorMetrics metrics;
  /// How an output (or its logits) is judged; unset for inner layers.
  std::optional<OutputRule> rule;
  std::vector<std::string> failures;  // bounds of the budget it misses
  bool flagged = false;               // fails, among the weakest, or its values visibly changed
  bool weakest = false;               // among the layers of lowest SQNR
  /// The lowest SQNR among the compared tensors it is computed from (nullopt: from exact
  /// inputs only); the drop from there to its own SQNR is where the error jumps.
  std::optional<double> inputSqnrDb;
  analysis::PairedHistogram histogram;
};

struct VerifyOutcome {
  std::string data;  // "random", "calib:<path>", "eval:<path>"
  size_t samples = 0;
  /// The verified model's compute layers (Conv, ConvTranspose, Gemm, MatMul; bodies included)
  /// and how many of them read quantized inputs: 0 means nothing quantized was verified.
  size_t computeLayers = 0;
  size_t quantizedLayers = 0;
  std::string layersMode;             // "outputs", "all", "outputs (localized)"
  VerdictBudget verdict;              // what outputs are judged by
  analysis::ErrorBudget budget;       // explicit bounds for every output (negative: none)
  analysis::ErrorBudget layerBudget;  // explicit per-layer bounds (negative: none)
  std::vector<CheckedTensor> outputs;
  std::vector<CheckedTensor> layers;  // topological order of the original model
  size_t removedTensors = 0;
  std::optional<size_t> firstDivergence;  // index into layers
  bool passed = true;
  std::vector<std::string> failures;  // one line per failed output or layer
};

/// Fills failures/flagged of an output from its rule's verdict and the explicit budget.
void judgeOutput(CheckedTensor& tensor, const VerdictBudget& verdict,
                 const analysis::ErrorBudget& budget);
/// Fills failures/flagged of an inner layer: it fails only an explicit per-layer budget.
void judgeLayer(CheckedTensor& tensor, const analysis::ErrorBudget& layerBudget);
/// Marks (weakest, flagged) the `count` layers of lowest SQNR.
void markWeakest(std::vector<CheckedTensor>& layers, size_t count);

/// The JSON published as results["verify"]; histograms of at most `maxHistograms` flagged
/// tensors (outputs first), on 64 bins.
Json outcomeJson(const VerifyOutcome& outcome, int maxHistograms);

/// The table printed on stderr.
std::string outcomeTable(const VerifyOutcome& outcome);

/// "node 'conv2' (Conv), tensor 'c2': SQNR 3.10 dB (inputs 80.00 dB): cosine 0.93 < 0.99".
std::string describeDivergence(const CheckedTensor& tensor);

}  // namespace qopt::verify
