#include "qopt/analysis/PrecisionReport.h"

#include <fmt/format.h>

namespace qopt::analysis {

namespace {

PrecisionTotals& totalsFor(PrecisionReport& report, Precision precision) {
  return precision == Precision::Int8   ? report.int8
         : precision == Precision::Fp16 ? report.fp16
                                        : report.fp32;
}

double shareOf(uint64_t macs, uint64_t total) {
  return total > 0 ? static_cast<double>(macs) / static_cast<double>(total) : 0.0;
}

Json totalsJson(const PrecisionTotals& t, uint64_t totalMacs) {
  Json out = Json::object();
  out.append("layers", t.layers);
  out.append("macs", t.macs);
  out.append("mac-share", shareOf(t.macs, totalMacs));
  return out;
}

Json shapesJson(const ObservedShapes& shapes) {
  Json out = Json::object();
  out.append("source", shapes.origin);
  Json inputs = Json::object();
  for (const auto& [name, dims] : shapes.inputs) {
    Json list = Json::array();
    for (int64_t d : dims) list.push(d);
    inputs.append(name, std::move(list));
  }
  out.append("inputs", std::move(inputs));
  Json assumed = Json::array();
  for (const AssumedDim& dim : shapes.assumed) {
    Json entry = Json::object();
    entry.append("input", dim.input);
    entry.append("axis", static_cast<int64_t>(dim.axis));
    entry.append("dim", dim.name.empty() ? Json() : Json(dim.name));
    entry.append("value", dim.value);
    assumed.push(std::move(entry));
  }
  out.append("assumed", std::move(assumed));
  out.append("failure", shapes.failure.empty() ? Json() : Json(shapes.failure));
  return out;
}

}  // namespace

const PrecisionTotals& PrecisionReport::totals(Precision precision) const {
  switch (precision) {
    case Precision::Int8:
      return int8;
    case Precision::Fp16:
      return fp16;
    case Precision::Fp32:
      return fp32;
  }
  return fp32;
}

double PrecisionReport::int8MacShare() const {
  return shareOf(int8.macs, totalMacs);
}

PrecisionReport reportPrecisions(const Graph& graph, const ShapeRequest& request) {
  PrecisionReport report;
  report.shapes = observeShapes(graph, request);
  report.layers = classifyLayers(graph, report.shapes.info);
  for (const LayerInfo& layer : report.layers) {
    PrecisionTotals& totals = totalsFor(report, layer.precision);
    ++totals.layers;
    if (layer.macs) {
      totals.macs += *layer.macs;
      report.totalMacs += *layer.macs;
    } else {
      ++report.layersWithoutMacs;
    }
  }
  return report;
}

std::string precisionSummaryLine(const PrecisionReport& report) {
  auto percent = [&](const PrecisionTotals& t) {
    return 100.0 * shareOf(t.macs, report.totalMacs);
  };
  return fmt::format(
      "{} compute layers, {} MACs: INT8 {} layers ({:.1f}% of MACs), FP16 {} ({:.1f}%), "
      "FP32 {} ({:.1f}%)",
      report.layers.size(), compactCount(report.totalMacs), report.int8.layers,
      percent(report.int8), report.fp16.layers, percent(report.fp16), report.fp32.layers,
      percent(report.fp32));
}

std::vector<std::string> precisionCaveats(const PrecisionReport& report) {
  std::vector<std::string> caveats = shapeCaveats(report.shapes);
  if (report.layersWithoutMacs > 0) {
    caveats.push_back(
        fmt::format("{} layers have unknown shapes and count no MACs", report.layersWithoutMacs));
  }
  return caveats;
}

Json precisionSummaryJson(const PrecisionReport& report) {
  Json summary = Json::object();
  summary.append("layers", static_cast<int64_t>(report.layers.size()));
  summary.append("total-macs", report.totalMacs);
  summary.append("int8-mac-share", report.int8MacShare());
  summary.append("INT8", totalsJson(report.int8, report.totalMacs));
  summary.append("FP16", totalsJson(report.fp16, report.totalMacs));
  summary.append("FP32", totalsJson(report.fp32, report.totalMacs));
  summary.append("layers-without-macs", report.layersWithoutMacs);
  summary.append("shapes", shapesJson(report.shapes));
  Json caveats = Json::array();
  for (const std::string& c : precisionCaveats(report)) caveats.push(c);
  summary.append("caveats", std::move(caveats));
  return summary;
}

std::string compactCount(uint64_t n) {
  if (n >= 1000000000ULL) return fmt::format("{:.2f}G", static_cast<double>(n) / 1e9);
  if (n >= 1000000ULL) return fmt::format("{:.2f}M", static_cast<double>(n) / 1e6);
  if (n >= 1000ULL) return fmt::format("{:.1f}K", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

}  // namespace qopt::analysis
