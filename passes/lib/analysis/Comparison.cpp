#include "qopt/analysis/Comparison.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "qopt/analysis/ParallelSamples.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {

Inputs feedFor(const Graph& graph, const Inputs& inputs) {
  Inputs feed;
  for (const Value* input : graph.inputs()) {
    auto it = inputs.find(input->name());
    if (it == inputs.end()) {
      if (input->isInitializer()) continue;  // keeps its stored value
      throw Error(ErrorKind::Input, graph.model().sourcePath,
                  fmt::format("input '{}'", input->name()), "the data has no value for it");
    }
    DataType type = input->type().isTensor() ? input->type().elemType : DataType::Undefined;
    feed.emplace(input->name(),
                 type == DataType::Undefined ? it->second : convertFloatType(it->second, type));
  }
  return feed;
}

OutputSets runOutputs(const Graph& graph, std::span<const Sample> samples) {
  OutputSets sets(samples.size());
  forEachSample<interp::Interpreter>(
      samples.size(), [&] { return std::make_unique<interp::Interpreter>(graph); },
      [&](interp::Interpreter& interpreter, size_t i) {
        sets[i] = runningSample(samples[i],
                                [&] { return interpreter.run(feedFor(graph, samples[i].inputs)); });
      });
  return sets;
}

std::vector<ErrorMetrics> outputErrors(const Graph& graph, std::span<const Sample> samples,
                                       const OutputSets& reference) {
  OutputSets actual = runOutputs(graph, samples);
  const size_t outputs = graph.outputs().size();
  std::vector<ErrorAccumulator> accumulators(outputs, ErrorAccumulator(128, /*decisions=*/true));
  for (size_t s = 0; s < actual.size() && s < reference.size(); ++s) {
    if (reference[s].size() != outputs || actual[s].size() != outputs) {
      throw Error(ErrorKind::Internal, graph.model().sourcePath, {},
                  "compared models have different numbers of outputs");
    }
    for (size_t o = 0; o < outputs; ++o) {
      accumulators[o].add(reference[s][o], actual[s][o],
                          fmt::format("output '{}'", graph.outputs()[o]->name()));
    }
  }
  std::vector<ErrorMetrics> metrics;
  for (const ErrorAccumulator& a : accumulators) metrics.push_back(a.result());
  return metrics;
}

ErrorMetrics worstOf(std::span<const ErrorMetrics> metrics) {
  if (metrics.empty()) return {};
  ErrorMetrics worst = metrics.front();
  for (const ErrorMetrics& m : metrics.subspan(1)) {
    worst.count += m.count;
    worst.nonFinite += m.nonFinite;
    worst.maxAbs = std::max(worst.maxAbs, m.maxAbs);
    worst.meanAbs = std::max(worst.meanAbs, m.meanAbs);
    worst.mse = std::max(worst.mse, m.mse);
    worst.cosine = std::min(worst.cosine, m.cosine);
    worst.sqnrDb = std::min(worst.sqnrDb, m.sqnrDb);
    worst.klDivergence = std::max(worst.klDivergence, m.klDivergence);
    worst.histogramOverlap = std::min(worst.histogramOverlap, m.histogramOverlap);
    if (m.clearTop1Agreement &&
        (!worst.clearTop1Agreement || *m.clearTop1Agreement < *worst.clearTop1Agreement)) {
      worst.clearTop1Agreement = m.clearTop1Agreement;
      worst.clearTop1Rows = m.clearTop1Rows;
    }
    if (m.top1Agreement) {
      worst.top1Agreement =
          worst.top1Agreement ? std::min(*worst.top1Agreement, *m.top1Agreement) : m.top1Agreement;
    }
  }
  return worst;
}

std::vector<std::string> ErrorBudget::failures(const ErrorMetrics& m) const {
  std::vector<std::string> out;
  if (m.nonFinite > 0) out.push_back(fmt::format("{} values are NaN or infinite", m.nonFinite));
  if (!(m.cosine >= cosine)) {
    out.push_back(fmt::format("cosine {} < {}", formatMetric(m.cosine, 6), cosine));
  }
  if (sqnrDb >= 0 && !(m.sqnrDb >= sqnrDb)) {
    out.push_back(fmt::format("SQNR {} dB < {} dB", formatMetric(m.sqnrDb, 2), sqnrDb));
  }
  if (maxAbs >= 0 && !(m.maxAbs <= maxAbs)) {
    out.push_back(fmt::format("max abs error {:.6g} > {}", m.maxAbs, maxAbs));
  }
  if (top1 >= 0 && m.top1Agreement && !(*m.top1Agreement >= top1)) {
    out.push_back(fmt::format("top-1 agreement {:.4f} < {}", *m.top1Agreement, top1));
  }
  if (clearTop1 >= 0 && m.clearTop1Agreement && !(*m.clearTop1Agreement >= clearTop1)) {
    out.push_back(fmt::format(
        "clear top-1 agreement {:.4f} < {} ({} of {} clear rows flipped)", *m.clearTop1Agreement,
        clearTop1,
        static_cast<uint64_t>(
            std::llround((1.0 - *m.clearTop1Agreement) * static_cast<double>(m.clearTop1Rows))),
        m.clearTop1Rows));
  }
  return out;
}

Json ErrorBudget::toJson() const {
  Json out = Json::object();
  out.append("cosine", cosine);
  out.append("sqnr-db", sqnrDb >= 0 ? Json(sqnrDb) : Json());
  out.append("max-abs", maxAbs >= 0 ? Json(maxAbs) : Json());
  out.append("top1", top1 >= 0 ? Json(top1) : Json());
  out.append("clear-top1", clearTop1 >= 0 ? Json(clearTop1) : Json());
  return out;
}

}  // namespace qopt::analysis
