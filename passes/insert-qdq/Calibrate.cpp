#include "Calibrate.h"

#include <fmt/format.h>

#include <functional>

#include "qopt/analysis/DataSet.h"
#include "qopt/quant/CalibCache.h"

namespace qopt::qdq {

CalibrationRun calibrate(const Model& model, const std::vector<std::string>& tensors,
                         PassContext& context, size_t limit, const std::string& passName) {
  CalibrationRun run;
  if (tensors.empty()) return run;
  std::vector<analysis::Sample> samples = analysis::samplesFor(
      model.graph(), context, /*preferEval=*/false, limit, kRandomCalibrationSamples, run.origin);
  run.samples = samples.size();
  if (run.origin == "random") {
    context.diagnostics().warning(fmt::format(
        "{}: no --calib-data given: calibrating on {} random samples; their scales rarely fit "
        "real inputs",
        passName, samples.size()));
  }
  auto forEachSample = [&](const std::function<bool(analysis::Sample&)>& fn) {
    for (analysis::Sample& sample : samples) {
      if (!fn(sample)) break;
    }
  };
  quant::ProgressFn progress = quant::terminalProgress(passName + ": calibrating");
  run.statistics =
      quant::collectStatistics(model, tensors, forEachSample, [&](size_t done, size_t) {
        if (progress) progress(done, samples.size());
      });
  return run;
}

quant::ScaleEntry activationScaleEntry(const std::string& tensor, const ActivationParams& params,
                                       quant::CalibratorKind calibrator, uint64_t samples) {
  quant::ScaleEntry entry;
  entry.tensor = tensor;
  entry.amax = {params.amax};
  entry.scale = {params.scale};
  entry.zeroPoint = {params.zeroPoint};
  entry.type = params.isUnsigned ? "uint8" : "int8";
  entry.calibrator = std::string(quant::calibratorName(calibrator));
  entry.samples = samples;
  return entry;
}

quant::ScaleEntry weightScaleEntry(const std::string& tensor, const QuantizedWeight& weight) {
  quant::ScaleEntry entry;
  entry.tensor = tensor;
  entry.amax = weight.amax;
  entry.scale.assign(weight.scales.begin(), weight.scales.end());
  entry.zeroPoint.assign(weight.scales.size(), 0);
  entry.type = "int8";
  if (weight.axis >= 0) entry.axis = weight.axis;
  entry.calibrator = "weights";
  return entry;
}

void writeTensorRtCache(const std::vector<quant::ScaleEntry>& entries, const Target& target,
                        quant::CalibratorKind calibrator, const std::string& path) {
  quant::CalibrationCache cache;
  cache.versionCode = target.trtVersion.cacheVersionCode();
  cache.algorithm = std::string(quant::cacheAlgorithmFor(quant::calibratorName(calibrator)));
  for (const quant::ScaleEntry& entry : entries) {
    if (entry.calibrator == "weights" || entry.scale.size() != 1) continue;
    // The cache holds symmetric scales amax / 127 whatever the Q/DQ model's own scheme.
    float scale = entry.amax[0] > 0 ? static_cast<float>(entry.amax[0] / 127.0) : kZeroRangeScale;
    cache.entries.push_back({entry.tensor, scale});
  }
  quant::writeCalibrationCache(cache, path);
}

}  // namespace qopt::qdq
