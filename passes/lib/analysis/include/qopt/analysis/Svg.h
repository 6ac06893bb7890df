// Inline SVG charts for the HTML report: self-contained markup, no scripts, no fonts to fetch.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qopt::analysis {

/// Escapes & < > " ' for HTML and SVG text and attributes.
std::string escapeXml(std::string_view text);

struct LayerErrorPoint {
  std::string label;  // shown on hover
  double sqnrDb = 0;  // +inf drawn at the top of the chart
  bool flagged = false;
  bool firstDivergence = false;
};

/// SQNR per layer in topological order: a line with one dot per layer, flagged layers in red,
/// the first divergence marked, and the threshold (when given) as a dashed line.
std::string layerErrorChart(const std::vector<LayerErrorPoint>& points,
                            std::optional<double> thresholdDb);

/// Reference and actual value histograms on shared bins, drawn over each other.
std::string histogramOverlayChart(const std::string& title, double low, double binWidth,
                                  const std::vector<double>& reference,
                                  const std::vector<double>& actual);

/// A horizontal bar split by share (e.g. MACs by precision); shares are drawn in order.
struct BarSegment {
  std::string label;
  double share = 0;  // 0..1
  std::string color;
};
std::string stackedBar(const std::vector<BarSegment>& segments);

}  // namespace qopt::analysis
