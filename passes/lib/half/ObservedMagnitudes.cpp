#include "qopt/half/ObservedMagnitudes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/FloatCapture.h"
#include "qopt/analysis/SampleCache.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::tofp16 {
namespace {

constexpr size_t kCalibrationSamples = 8;
constexpr size_t kRandomSamples = 4;

double maxAbs(const interp::Array& array) {
  double m = 0.0;
  for (float v : array.toFloatVector()) {
    if (std::isfinite(v)) m = std::max(m, static_cast<double>(std::abs(v)));
  }
  return m;
}

}  // namespace

Magnitudes observeMagnitudes(const Model& model, PassContext& context, PassResult& result) {
  Magnitudes magnitudes;
  const Graph& graph = model.graph();
  std::unordered_set<const Value*> wanted;
  for (const Node* node : graph.allNodes()) {  // bodies included: their runs are observed too
    for (const Value* out : node->outputs()) {
      if (out != nullptr && !out->isAbsent()) wanted.insert(out);
    }
  }
  try {
    std::vector<analysis::InputSpec> specs = analysis::inputSpecs(graph, context.data);
    std::vector<analysis::Sample> samples;
    std::string origin;
    if (!context.data.calibData.empty()) {
      samples =
          analysis::sampleCache(context, context.data.calibData, specs).read(kCalibrationSamples);
      origin = fmt::format("--calib-data {}", context.data.calibData);
    } else {
      samples = analysis::randomSamples(specs, kRandomSamples, context.seed);
      origin = "random inputs; --calib-data gives the real ranges";
    }
    interp::Interpreter interpreter(graph);
    analysis::FloatCapture observer(std::move(wanted),
                                    [&](const Value& value, const interp::Array& array) {
                                      double& m = magnitudes[&value];
                                      m = std::max(m, maxAbs(array));
                                    });
    for (analysis::Sample& sample : samples) {
      for (const auto& [name, array] : sample.inputs) {
        if (const Value* input = graph.findValue(name); input != nullptr) {
          double& m = magnitudes[input];
          m = std::max(m, maxAbs(array));
        }
      }
      analysis::runningSample(sample, [&] { return interpreter.run(sample.inputs, &observer); });
    }
    result.note("model", fmt::format("ranges of {} tensor(s) observed on {} sample(s) ({})",
                                     magnitudes.size(), samples.size(), origin));
  } catch (const Error& e) {
    magnitudes.clear();
    result.missed("model", "ranges not observed: the model cannot be run (" +
                               std::string(e.what()) + "); only constants are checked");
  }
  return magnitudes;
}

}  // namespace qopt::tofp16
