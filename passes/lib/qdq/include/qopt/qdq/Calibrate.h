// Calibration for the quantization passes: the statistics of the named activations over the
// pass's data (--calib-data, else random samples with a warning), in one pass over the samples,
// and the files that record the chosen scales (qopt-scales JSON, TensorRT calibration cache).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/qdq/QuantNumbers.h"
#include "qopt/qdq/Sites.h"
#include "qopt/quant/AutoCalibration.h"
#include "qopt/quant/Calibration.h"
#include "qopt/quant/ScalesFile.h"

namespace qopt::qdq {

/// Random samples used when no calibration data is given.
inline constexpr size_t kRandomCalibrationSamples = 16;

struct CalibrationRun {
  std::map<std::string, quant::TensorStatistics> statistics;
  std::string origin;  // "calib:<path>" or "random"
  size_t samples = 0;
  /// The first samples in data order (their model inputs), as many as calibrate was asked to
  /// keep: calibrator=auto judges its candidates on them.
  std::vector<analysis::Sample> kept;
};

/// Runs `model` over at most `limit` samples (0: all) and collects the statistics of `tensors`,
/// reading --calib-data lazily, on `threads` workers (0: the run's --threads).
/// Warnings and the progress bar name `passName`. The first `keep` samples are kept in the
/// result (CalibrationRun::kept).
CalibrationRun calibrate(const Model& model, const std::vector<std::string>& tensors,
                         PassContext& context, size_t limit, const std::string& passName,
                         int threads = 0, size_t keep = 0);

/// The lower-case type name a scales file records ("int8", "uint8", "float8e4m3fn").
std::string typeWord(DataType type);

/// calibrator=auto's choice for every planned activation, in plan order, judged on run.kept with
/// the planned weights as `quantized` holds them (by weight and axis; biases stay float in the
/// probe).
std::vector<quant::AutoChoice> chooseAutoRanges(
    analysis::SampleWorkers& workers, const Model& model,
    const std::vector<ActivationSite>& activations, const std::vector<WeightSite>& weights,
    const PlannedWeights& quantized, const CalibrationRun& run, const quant::CalibratorSpec& spec,
    ActivationScheme scheme, quant::AutoOutputCheck* check = nullptr);

/// `choice`: what calibrator=auto chose and why (nullptr for the other calibrators).
quant::ScaleEntry activationScaleEntry(const std::string& tensor, const ActivationParams& params,
                                       quant::CalibratorKind calibrator, uint64_t samples,
                                       const quant::AutoChoice* choice = nullptr);
quant::ScaleEntry weightScaleEntry(const std::string& tensor, const QuantizedWeight& weight);

/// Writes the TensorRT calibration cache of the activations in `entries` (weights are left
/// out: TensorRT computes their scales itself) for TensorRT `target`'s version. Throws
/// qopt::Error for an entry that is not int8 or uint8: the cache is INT8 only.
void writeTensorRtCache(const std::vector<quant::ScaleEntry>& entries, const Target& target,
                        quant::CalibratorKind calibrator, const std::string& path);

}  // namespace qopt::qdq
