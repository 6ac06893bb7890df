#include "qopt/analysis/PrecisionReport.h"

#include <fmt/format.h>

#include <set>

namespace qopt::analysis {

namespace {

PrecisionTotals& totalsFor(PrecisionReport& report, Precision precision) {
  return precision == Precision::Int8   ? report.int8
         : precision == Precision::Fp8  ? report.fp8
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
    case Precision::Fp8:
      return fp8;
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

namespace {

void countOtherOps(const Graph& graph, PrecisionReport& report) {
  std::set<const Node*> layers;
  for (const LayerInfo& layer : report.layers) layers.insert(layer.node);
  for (const Node* node : graph.allNodes()) {
    if (layers.count(node) > 0 || node->numOutputs() == 0 || node->is("Cast") ||
        node->is("Constant") || node->is("QuantizeLinear") || node->is("DequantizeLinear")) {
      continue;
    }
    const DataType type = report.shapes.info.find(node->output(0)).type;
    if (type == DataType::Float16 || type == DataType::BFloat16) {
      ++report.otherHalf;
    } else if (type == DataType::Float || type == DataType::Double) {
      report.otherFloat32.push_back(node);
    }
  }
}

}  // namespace

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
  countOtherOps(graph, report);
  return report;
}

std::string otherOpsLine(const PrecisionReport& report) {
  std::string line = fmt::format("other ops with float outputs: {} in FP16, {} in FP32",
                                 report.otherHalf, report.otherFloat32.size());
  constexpr size_t kNamed = 8;
  std::string names;
  for (size_t i = 0; i < report.otherFloat32.size() && i < kNamed; ++i) {
    const Node& node = *report.otherFloat32[i];
    names += fmt::format(
        "{}{} '{}'", i == 0 ? "" : ", ", node.opType(),
        node.name().empty() && node.numOutputs() > 0 ? node.output(0)->name() : node.name());
  }
  if (report.otherFloat32.size() > kNamed) {
    names += fmt::format(" and {} more", report.otherFloat32.size() - kNamed);
  }
  // In a float32 model every op is listed: names help only where most run in half.
  return names.empty() || report.otherHalf == 0 ? line : fmt::format("{} ({})", line, names);
}

std::string precisionSummaryLine(const PrecisionReport& report) {
  auto percent = [&](const PrecisionTotals& t) {
    return 100.0 * shareOf(t.macs, report.totalMacs);
  };
  // FP8 is named only in models that have it: the INT8 line every other model prints stays.
  const std::string fp8 =
      report.fp8.layers > 0
          ? fmt::format(", FP8 {} ({:.1f}%)", report.fp8.layers, percent(report.fp8))
          : std::string();
  return fmt::format(
      "{} compute layers, {} MACs: INT8 {} layers ({:.1f}% of MACs){}, FP16 {} ({:.1f}%), "
      "FP32 {} ({:.1f}%)",
      report.layers.size(), compactCount(report.totalMacs), report.int8.layers,
      percent(report.int8), fp8, report.fp16.layers, percent(report.fp16), report.fp32.layers,
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
  summary.append("FP8", totalsJson(report.fp8, report.totalMacs));
  summary.append("layers-without-macs", report.layersWithoutMacs);
  summary.append("other-ops-fp16", report.otherHalf);
  summary.append("other-ops-fp32", static_cast<int64_t>(report.otherFloat32.size()));
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
