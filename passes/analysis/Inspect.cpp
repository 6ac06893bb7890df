#include "qopt/analysis/Inspect.h"

#include <ostream>

#include <fmt/format.h>

#include "qopt/analysis/TextTable.h"

namespace qopt::analysis {

namespace {

std::string compactCount(uint64_t n) {
  if (n >= 1000000000ULL) return fmt::format("{:.2f}G", static_cast<double>(n) / 1e9);
  if (n >= 1000000ULL) return fmt::format("{:.2f}M", static_cast<double>(n) / 1e6);
  if (n >= 1000ULL) return fmt::format("{:.1f}K", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

std::string granularity(const DequantizedInput& in) {
  return in.perChannel() ? fmt::format("per-channel(axis {})", in.axis) : "per-tensor";
}

std::string scaleRange(const DequantizedInput& in) {
  if (!in.minScale) return "?";
  if (*in.minScale == *in.maxScale) return fmt::format("{:.4g}", *in.minScale);
  return fmt::format("{:.4g}..{:.4g}", *in.minScale, *in.maxScale);
}

PrecisionTotals& totalsFor(InspectResult& r, Precision p) {
  return p == Precision::Int8 ? r.int8 : p == Precision::Fp16 ? r.fp16 : r.fp32;
}

Json totalsJson(const PrecisionTotals& t, uint64_t totalMacs) {
  Json out = Json::object();
  out.append("layers", t.layers);
  out.append("macs", t.macs);
  out.append("mac-share",
             totalMacs > 0 ? static_cast<double>(t.macs) / static_cast<double>(totalMacs) : 0.0);
  return out;
}

}  // namespace

InspectResult inspectGraph(const Graph& graph, std::span<const InputShape> shapes, uint64_t seed) {
  InspectResult result;
  std::string failure;
  TensorInfoMap info;
  try {
    std::vector<Sample> samples = randomSamples(inputSpecs(graph, shapes), 1, seed);
    info = observeTensorInfo(graph, samples.front().inputs, &failure);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  result.shapeSource = failure.empty() ? "interpreter" : "declared shapes only: " + failure;
  result.layers = classifyLayers(graph, info);
  for (const LayerInfo& layer : result.layers) {
    PrecisionTotals& totals = totalsFor(result, layer.precision);
    ++totals.layers;
    if (layer.macs) {
      totals.macs += *layer.macs;
      result.totalMacs += *layer.macs;
    } else {
      ++result.layersWithoutMacs;
    }
  }
  return result;
}

Json inspectJson(const InspectResult& result) {
  Json summary = Json::object();
  summary.append("layers", static_cast<int64_t>(result.layers.size()));
  summary.append("total-macs", result.totalMacs);
  summary.append("int8-mac-share", result.int8MacShare());
  summary.append("INT8", totalsJson(result.int8, result.totalMacs));
  summary.append("FP16", totalsJson(result.fp16, result.totalMacs));
  summary.append("FP32", totalsJson(result.fp32, result.totalMacs));
  summary.append("layers-without-macs", result.layersWithoutMacs);
  summary.append("shapes", result.shapeSource);

  Json layers = Json::array();
  for (const LayerInfo& layer : result.layers) {
    Json entry = Json::object();
    entry.append("node", layerName(*layer.node));
    entry.append("op", layer.node->opType());
    entry.append("output", layer.node->output(0) ? layer.node->output(0)->name() : "");
    entry.append("precision", std::string(precisionName(layer.precision)));
    entry.append("reason", layer.reason);
    entry.append("weight", layer.weightValue ? Json(layer.weightValue->name()) : Json());
    entry.append("weight-dtype", layer.weightType != DataType::Undefined
                                     ? Json(std::string(dataTypeName(layer.weightType)))
                                     : Json());
    const DequantizedInput* w = layer.weight && layer.weightValue ? &*layer.weight : nullptr;
    entry.append("granularity", w ? Json(w->perChannel() ? "per-channel" : "per-tensor") : Json());
    entry.append("axis", w && w->perChannel() ? Json(w->axis) : Json());
    entry.append("weight-scale-min", w && w->minScale ? Json(*w->minScale) : Json());
    entry.append("weight-scale-max", w && w->maxScale ? Json(*w->maxScale) : Json());
    const DequantizedInput* a = layer.activation ? &*layer.activation : nullptr;
    entry.append("input-scale", a && a->minScale ? Json(*a->minScale) : Json());
    entry.append("macs", layer.macs ? Json(*layer.macs) : Json());
    Json notes = Json::array();
    for (const std::string& n : layer.notes) notes.push(n);
    entry.append("notes", std::move(notes));
    layers.push(std::move(entry));
  }
  Json out = Json::object();
  out.append("summary", std::move(summary));
  out.append("layers", std::move(layers));
  return out;
}

void printInspectTable(const InspectResult& result, std::ostream& out) {
  TextTable table({"layer", "op", "precision", "weight", "granularity", "weight scale",
                   "input scale", ">MACs", "why float / notes"});
  for (const LayerInfo& layer : result.layers) {
    const DequantizedInput* w = layer.weight && layer.weightValue ? &*layer.weight : nullptr;
    const DequantizedInput* a = layer.activation ? &*layer.activation : nullptr;
    std::string why = layer.precision == Precision::Int8 ? std::string() : layer.reason;
    for (const std::string& n : layer.notes) why += (why.empty() ? "" : "; ") + n;
    table.addRow(
        {layerName(*layer.node), layer.node->opType(), std::string(precisionName(layer.precision)),
         layer.weightType != DataType::Undefined ? std::string(dataTypeName(layer.weightType))
                                                 : "-",
         w ? granularity(*w) : "-", w ? scaleRange(*w) : "-", a ? scaleRange(*a) : "-",
         layer.macs ? compactCount(*layer.macs) : "?", why});
  }
  table.print(out, "");
  auto share = [&](const PrecisionTotals& t) {
    return result.totalMacs > 0
               ? 100.0 * static_cast<double>(t.macs) / static_cast<double>(result.totalMacs)
               : 0.0;
  };
  out << fmt::format(
      "\n{} compute layers, {} MACs: INT8 {} layers ({:.1f}% of MACs), FP16 {} ({:.1f}%), "
      "FP32 {} ({:.1f}%)\n",
      result.layers.size(), compactCount(result.totalMacs), result.int8.layers, share(result.int8),
      result.fp16.layers, share(result.fp16), result.fp32.layers, share(result.fp32));
  if (result.layersWithoutMacs > 0) {
    out << fmt::format("{} layers have unknown shapes and count no MACs ({})\n",
                       result.layersWithoutMacs, result.shapeSource);
  }
}

}  // namespace qopt::analysis
