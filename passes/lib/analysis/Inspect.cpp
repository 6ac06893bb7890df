#include "qopt/analysis/Inspect.h"

#include <ostream>

#include <fmt/format.h>

#include "qopt/analysis/TextTable.h"

namespace qopt::analysis {

namespace {

std::string granularity(const DequantizedInput& in) {
  return in.perChannel() ? fmt::format("per-channel(axis {})", in.axis) : "per-tensor";
}

std::string scaleRange(const DequantizedInput& in) {
  if (!in.minScale) return "?";
  if (*in.minScale == *in.maxScale) return fmt::format("{:.4g}", *in.minScale);
  return fmt::format("{:.4g}..{:.4g}", *in.minScale, *in.maxScale);
}

}  // namespace

Json inspectJson(const InspectResult& result) {
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
  out.append("summary", precisionSummaryJson(result));
  out.append("layers", std::move(layers));
  return out;
}

void printInspectTable(const InspectResult& result, std::ostream& out) {
  TextTable table({"layer", "op", "precision", "weight", "granularity", "weight scale",
                   "input scale", ">MACs", "why float / notes"});
  for (const LayerInfo& layer : result.layers) {
    const DequantizedInput* w = layer.weight && layer.weightValue ? &*layer.weight : nullptr;
    const DequantizedInput* a = layer.activation ? &*layer.activation : nullptr;
    const bool quantized = layer.precision == Precision::Int8 || layer.precision == Precision::Fp8;
    std::string why = quantized ? std::string() : layer.reason;
    for (const std::string& n : layer.notes) why += (why.empty() ? "" : "; ") + n;
    table.addRow(
        {layerName(*layer.node), layer.node->opType(), std::string(precisionName(layer.precision)),
         layer.weightType != DataType::Undefined ? std::string(dataTypeName(layer.weightType))
                                                 : "-",
         w ? granularity(*w) : "-", w ? scaleRange(*w) : "-", a ? scaleRange(*a) : "-",
         layer.macs ? compactCount(*layer.macs) : "?", why});
  }
  table.print(out, "");
  out << '\n' << precisionSummaryLine(result) << '\n' << otherOpsLine(result) << '\n';
  for (const std::string& caveat : precisionCaveats(result)) out << caveat << '\n';
}

}  // namespace qopt::analysis
