#include "qopt/qdq/Calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/ir/Error.h"
#include "qopt/qdq/QdqEmitter.h"
#include "qopt/quant/CalibCache.h"

namespace qopt::qdq {

CalibrationRun calibrate(const Model& model, const std::vector<std::string>& tensors,
                         PassContext& context, size_t limit, const std::string& passName,
                         int threads, size_t keep) {
  CalibrationRun run;
  if (tensors.empty()) return run;
  quant::ProgressFn bar = quant::terminalProgress(passName + ": calibrating");
  quant::CollectOptions options;
  options.threads = threads;  // 0: all of the run's workers
  options.workers = &analysis::sampleWorkers(context);
  // Read lazily, through the run's shared cache: past its bound a sample lives only until it
  // has run, however many the folder holds.
  analysis::SampleSource source = analysis::sampleSource(
      model.graph(), context, /*preferEval=*/false, limit, kRandomCalibrationSamples);
  run.origin = source.origin();
  const size_t total = source.expectedCount().value_or(0);  // 0: not known before reading
  if (source.isRandom()) {
    context.diagnostics().warning(
        fmt::format("{}: no --calib-data given: calibrating on {} random samples; their scales "
                    "rarely fit real inputs",
                    passName, total));
  }
  // The reading thread hands samples out in data order, so the kept ones are the first `keep`
  // whatever the thread count. Arrays share their storage: keeping costs no copy.
  auto keeping = [&](const std::function<bool(analysis::Sample&)>& fn) {
    source.forEach([&](analysis::Sample& sample) {
      if (run.kept.size() < keep) run.kept.push_back(sample);
      return fn(sample);
    });
  };
  size_t seen = 0;
  run.statistics = quant::collectStatistics(
      model, tensors, keeping,
      [&](size_t done, size_t) {
        seen = done;
        if (bar) bar(done, total);
      },
      options);
  run.samples = seen;
  if (run.samples == 0) {
    throw Error(ErrorKind::Input, context.data.calibData, {},
                fmt::format("{}: the calibration data holds no sample", passName));
  }
  return run;
}

std::string typeWord(DataType type) {
  std::string word(dataTypeName(type));
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return word;
}

std::vector<quant::AutoChoice> chooseAutoRanges(
    analysis::SampleWorkers& workers, const Model& model,
    const std::vector<ActivationSite>& activations, const std::vector<WeightSite>& weights,
    const PlannedWeights& planned, const CalibrationRun& run, const quant::CalibratorSpec& spec,
    ActivationScheme scheme, quant::AutoOutputCheck* check) {
  std::vector<quant::AutoTensor> tensors;
  for (const ActivationSite& site : activations) {
    auto found = run.statistics.find(site.value->name());
    if (found == run.statistics.end()) {
      throw Error(ErrorKind::Internal, model.sourcePath,
                  fmt::format("tensor '{}'", site.value->name()),
                  "calibration returned no statistics for it");
    }
    quant::AutoTensor tensor;
    tensor.value = site.value;
    tensor.uses = site.uses;
    tensor.statistics = &found->second;
    tensor.levels = schemeSpec(found->second, spec, scheme).levels;
    tensors.push_back(std::move(tensor));
  }
  quant::QuantizedWeights quantized;
  for (const WeightSite& site : weights) {
    auto found = planned.find({site.weight, site.axis});
    if (found == planned.end()) continue;  // not a constant: the emitter reports it
    quantized.emplace(std::make_pair(static_cast<const Node*>(site.node), site.input),
                      dequantizedWeight(found->second, floatTypeOf(site.weight)));
  }
  return quant::chooseAutoRanges(
      workers, model, tensors, spec, quantized, run.kept,
      [scheme](const quant::TensorStatistics& stats, double amax) {
        ActivationParams params = activationParamsForAmax(stats, amax, scheme);
        return quant::FakeQuantization{params.scale, params.zeroPoint, params.isUnsigned};
      },
      check);
}

quant::ScaleEntry activationScaleEntry(const std::string& tensor, const ActivationParams& params,
                                       quant::CalibratorKind calibrator, uint64_t samples,
                                       const quant::AutoChoice* choice) {
  quant::ScaleEntry entry;
  entry.tensor = tensor;
  entry.amax = {params.amax};
  entry.scale = {params.scale};
  entry.zeroPoint = {params.zeroPoint};
  entry.type = typeWord(params.type);
  entry.calibrator = std::string(quant::calibratorName(calibrator));
  entry.samples = samples;
  if (choice != nullptr) {
    quant::AutoRecord record;
    record.chosen = std::string(quant::calibratorName(choice->chosen));
    record.reason = choice->reason;
    for (const quant::AutoCandidate& c : choice->candidates) {
      record.candidates.push_back(
          {std::string(quant::calibratorName(c.calibrator)), c.amax, c.error});
    }
    entry.autoChoice = std::move(record);
  }
  return entry;
}

quant::ScaleEntry weightScaleEntry(const std::string& tensor, const QuantizedWeight& weight) {
  quant::ScaleEntry entry;
  entry.tensor = tensor;
  entry.amax = weight.amax;
  entry.scale.assign(weight.scales.begin(), weight.scales.end());
  entry.zeroPoint.assign(weight.scales.size(), 0);
  entry.type = typeWord(weight.values.dataType());
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
    if (entry.type != "int8" && entry.type != "uint8") {
      // TensorRT's calibration cache is INT8 implicit quantization: an FP8 scale has no place in
      // it (amax / 127 there would quietly turn an FP8 plan into an INT8 one).
      throw Error(
          ErrorKind::Input, path, fmt::format("tensor '{}'", entry.tensor),
          fmt::format("a TensorRT calibration cache holds INT8 scales only, not {}", entry.type));
    }
    // The cache holds symmetric scales amax / 127 whatever the Q/DQ model's own scheme.
    float scale = entry.amax[0] > 0 ? static_cast<float>(entry.amax[0] / 127.0) : kZeroRangeScale;
    cache.entries.push_back({entry.tensor, scale});
  }
  quant::writeCalibrationCache(cache, path);
}

}  // namespace qopt::qdq
