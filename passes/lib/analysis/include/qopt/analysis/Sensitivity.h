// How much each quantized layer (QuantizedLayers.h) costs in output accuracy: the output error
// when only that layer is quantized and when only it is left in float, measured against the
// float model (every Q/DQ removed). Shared by the sensitivity and mixed-precision passes.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/QuantizedLayers.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/analysis/SpillStore.h"

namespace qopt::analysis {

/// A copy of `model` in which the layers at `positions` (node positions of findQuantizedLayers)
/// are returned to float.
std::unique_ptr<Model> withLayersInFloat(const Model& model, std::span<const size_t> positions,
                                         FloatFallback fallback = FloatFallback::Float);

/// A copy of `model` in which only the layers at `positions` still read quantized values: every
/// other Q/DQ is removed (removeQuantization), including pairs no layer owns (on Add inputs,
/// on outputs), so that re-quantization elsewhere cannot hide a layer's own error.
std::unique_ptr<Model> withOnlyLayersQuantized(const Model& model,
                                               std::span<const size_t> positions);

/// The float model: every Q/DQ of `model` removed, weights dequantized.
std::unique_ptr<Model> floatReference(const Model& model);

struct LayerSensitivity {
  std::string name;
  std::string op;
  size_t position = 0;
  ErrorMetrics onlyQuantized;             // worst output error with only this layer quantized
  std::optional<ErrorMetrics> onlyFloat;  // with only this layer in float (when measured)
};

struct SensitivityResult {
  ErrorMetrics allQuantized;  // the model as it is
  /// Most sensitive first: lowest SQNR with only the layer quantized (then lowest cosine, then
  /// graph order).
  std::vector<LayerSensitivity> layers;
};

/// Measures every quantized layer of `model` on the samples of `source` (on `workers`);
/// `reference` holds the outputs of floatReference(model) on the same samples (collectOutputs).
/// Streams the samples 1 + L times, or 1 + 2L with `measureOnlyFloat`; `doing` names the runs
/// on the progress line and in a sample's error.
SensitivityResult measureSensitivity(SampleWorkers& workers, const Model& model,
                                     SampleSource& source, const SpillStore& reference,
                                     bool measureOnlyFloat,
                                     FloatFallback fallback = FloatFallback::Float,
                                     const std::string& doing = "running sample");

/// A quantized layer's own error: its output against a float twin reading the same upstream
/// values before their Q/DQ (LocalSensitivity.cpp).
struct LocalSensitivity {
  std::string name;
  std::string op;
  size_t position = 0;
  ErrorMetrics error;  // count, mse, sqnrDb, cosine
};

/// Every quantized layer with a quantized activation input, lowest local SQNR first, from one
/// run of `model` per sample of `source` (on `workers`): what mixed-precision ranks by, at the
/// cost of about two runs instead of one run per layer.
std::vector<LocalSensitivity> measureLocalSensitivity(SampleWorkers& workers, const Model& model,
                                                      SampleSource& source,
                                                      const std::string& doing = "running sample");

/// What a sensitivity measurement compares against: the samples (eval data, else calibration
/// data, else random inputs), read again for each model measured, and the float reference's
/// outputs on them (held up to keptBytes, the rest spilled to a temporary file).
struct FloatBaseline {
  SampleSource source;
  SpillStore reference;                                          // entry i: sample i's outputs
  size_t samples = 0;                                            // the samples the stream gave
  const std::string& origin() const { return source.origin(); }  // as sampleSource says
  bool randomInputs() const { return source.isRandom(); }
};

/// `sampleLimit` caps the samples read (0: all); random inputs number `sampleLimit`, or 8 when 0.
/// The reference is `model` with its Q/DQ removed; when bias-correct changed biases earlier in
/// the pipeline, that reference and every layer returned to float carry the corrections, and
/// a warning naming `passName` says to run it before bias-correct. Without data, a warning says
/// that it measures on random inputs, ending with `randomInputsNote` (what that costs the pass).
/// The samples stream on the run's workers (sampleWorkers).
FloatBaseline measureFloatBaseline(const Model& model, PassContext& context, size_t sampleLimit,
                                   std::string_view passName, std::string_view randomInputsNote);

/// The node positions of every quantized layer of `model`.
std::vector<size_t> quantizedLayerPositions(const Model& model);

}  // namespace qopt::analysis
