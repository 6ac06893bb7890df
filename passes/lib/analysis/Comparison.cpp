#include "qopt/analysis/Comparison.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

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

size_t forEachOutputs(SampleWorkers& workers, const Graph& graph, SampleSource& source,
                      const std::function<void(std::vector<interp::Array>&&, size_t)>& fold,
                      std::string doing) {
  return streamSamples<interp::Interpreter>(
      workers, source, doing, [&] { return std::make_unique<interp::Interpreter>(graph); },
      [&](interp::Interpreter& interpreter, Sample& sample, size_t) {
        return runningSample(
            sample, [&] { return interpreter.run(feedFor(graph, sample.inputs)); }, doing);
      },
      fold);
}

SpillStore collectOutputs(SampleWorkers& workers, const Graph& graph, SampleSource& source,
                          uint64_t memoryBytes, std::string doing) {
  SpillStore store(memoryBytes);
  forEachOutputs(
      workers, graph, source,
      [&](std::vector<interp::Array>&& outputs, size_t) { store.push(std::move(outputs)); },
      std::move(doing));
  return store;
}

std::vector<ErrorMetrics> outputErrors(SampleWorkers& workers, const Graph& graph,
                                       SampleSource& source, const SpillStore& reference,
                                       std::string doing) {
  const size_t outputs = graph.outputs().size();
  std::vector<ErrorAccumulator> accumulators(outputs, ErrorAccumulator(128, /*decisions=*/true));
  forEachOutputs(
      workers, graph, source,
      [&](std::vector<interp::Array>&& actual, size_t s) {
        if (s >= reference.size()) return;
        const std::vector<interp::Array> expected = reference.get(s);
        if (expected.size() != outputs || actual.size() != outputs) {
          throw Error(ErrorKind::Internal, graph.model().sourcePath, {},
                      "compared models have different numbers of outputs");
        }
        for (size_t o = 0; o < outputs; ++o) {
          accumulators[o].add(expected[o], actual[o],
                              fmt::format("output '{}'", graph.outputs()[o]->name()));
        }
      },
      std::move(doing));
  std::vector<ErrorMetrics> metrics;
  for (const ErrorAccumulator& a : accumulators) metrics.push_back(a.result());
  return metrics;
}

uint64_t keptBytes(const PassContext& context) {
  return std::min<uint64_t>(uint64_t{64} << 20, context.resources.maxMemoryBytes / 8);
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
