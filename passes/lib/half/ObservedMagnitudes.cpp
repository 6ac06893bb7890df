#include "qopt/half/ObservedMagnitudes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/FloatCapture.h"
#include "qopt/analysis/ObservedSamples.h"
#include "qopt/analysis/SampleStream.h"
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
    const bool given = !context.data.calibData.empty();
    const std::string origin =
        given ? fmt::format("--calib-data {}", context.data.calibData)
              : std::string("random inputs; --calib-data gives the real ranges");
    analysis::SampleSource source =
        analysis::sampleSource(graph, context, /*preferEval=*/false,
                               given ? kCalibrationSamples : kRandomSamples, kRandomSamples);
    const size_t samples = analysis::observeSamples(
        analysis::sampleWorkers(context), graph, source,
        [&] {
          return analysis::FloatFold<double>(
              wanted, [](double& m, const interp::Array& a) { m = std::max(m, maxAbs(a)); });
        },
        [&](std::unordered_map<const Value*, double>&& sample) {
          for (const auto& [value, m] : sample) {
            double& into = magnitudes[value];
            into = std::max(into, m);
          }
        },
        "to-fp16: observing ranges");
    // The graph inputs' own ranges.
    source.forEach([&](analysis::Sample& sample) {
      for (const auto& [name, array] : sample.inputs) {
        if (const Value* input = graph.findValue(name); input != nullptr) {
          double& m = magnitudes[input];
          m = std::max(m, maxAbs(array));
        }
      }
      return true;
    });
    result.note("model", fmt::format("ranges of {} tensor(s) observed on {} sample(s) ({})",
                                     magnitudes.size(), samples, origin));
  } catch (const Error& e) {
    magnitudes.clear();
    result.missed("model", "ranges not observed: the model cannot be run (" +
                               std::string(e.what()) + "); only constants are checked");
  }
  return magnitudes;
}

}  // namespace qopt::tofp16
