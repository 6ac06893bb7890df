#include "qopt/analysis/Svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace qopt::analysis {

namespace {

constexpr const char* kReferenceColor = "#1f77b4";
constexpr const char* kActualColor = "#ff7f0e";
constexpr const char* kFlagColor = "#d62728";

std::string number(double v) {
  return fmt::format("{:.2f}", v);
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `count` ticks over `span`.
double tickStep(double span, int count) {
  if (!(span > 0)) return 1;
  double raw = span / count;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// Long tensor names keep their end, which names the op ("..._output_0").
std::string shortened(const std::string& text, size_t maxChars) {
  if (text.size() <= maxChars) return text;
  return "..." + text.substr(text.size() - (maxChars - 3));
}

}  // namespace

std::string escapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string layerErrorChart(const std::vector<LayerErrorPoint>& points,
                            std::optional<double> thresholdDb) {
  const double width = 900, height = 280, left = 56, right = 16, top = 20, bottom = 40;
  const double plotW = width - left - right, plotH = height - top - bottom;
  double lo = 0, hi = 10;
  for (const LayerErrorPoint& p : points) {
    if (std::isfinite(p.sqnrDb)) {
      lo = std::min(lo, p.sqnrDb);
      hi = std::max(hi, p.sqnrDb);
    }
  }
  if (thresholdDb) hi = std::max(hi, *thresholdDb);
  const double step = tickStep(hi - lo, 6);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step + step;  // the top band holds the "no error" dots
  auto yOf = [&](double v) {
    double clamped = std::isfinite(v) ? v : (v > 0 ? hi : lo);
    return top + plotH * (1 - (clamped - lo) / (hi - lo));
  };
  const size_t n = points.size();
  auto xOf = [&](size_t i) {
    return n <= 1 ? left + plotW / 2
                  : left + plotW * static_cast<double>(i) / static_cast<double>(n - 1);
  };

  std::string svg = fmt::format(
      "<svg class=\"chart layer-error\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"SQNR per layer\">\n",
      width, height);
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" "
      "stroke=\"#ccc\"/>\n",
      left, top, plotW, plotH);
  for (double t = lo; t <= hi - step / 2; t += step) {
    double y = yOf(t);
    svg += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#e3e3e3\"/>"
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        left, left + plotW, number(y), number(y), left - 6, number(y + 4), fmt::format("{:g}", t));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">no error"
      "</text>\n",
      left - 6, number(yOf(hi) + 4));
  svg += fmt::format(
      "<text x=\"14\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 14 {})\" "
      "text-anchor=\"middle\">SQNR (dB)</text>\n",
      number(top + plotH / 2), number(top + plotH / 2));
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">layers in "
      "topological order ({})</text>\n",
      number(left + plotW / 2), height - 8, n);
  if (thresholdDb) {
    double y = yOf(*thresholdDb);
    svg += fmt::format(
        "<line class=\"threshold\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" "
        "stroke=\"{}\" stroke-dasharray=\"6 4\"/>\n",
        left, left + plotW, number(y), number(y), kFlagColor);
  }
  if (n > 1) {
    std::string path;
    for (size_t i = 0; i < n; ++i) {
      path += fmt::format("{}{} {}", i == 0 ? "M" : " L", number(xOf(i)),
                          number(yOf(points[i].sqnrDb)));
    }
    svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>\n", path,
                       kReferenceColor);
  }
  for (size_t i = 0; i < n; ++i) {
    const LayerErrorPoint& p = points[i];
    double x = xOf(i);
    if (p.firstDivergence) {
      svg += fmt::format(
          "<line class=\"divergence\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" "
          "stroke=\"{3}\" stroke-width=\"2\"/><text x=\"{0}\" y=\"{4}\" "
          "font-size=\"11\" fill=\"{3}\" text-anchor=\"{6}\">first divergence: "
          "{5}<title>{7}</title></text>\n",
          number(x), top, top + plotH, kFlagColor, top - 6, escapeXml(shortened(p.label, 60)),
          x < left + plotW / 3 ? "start" : (x > left + 2 * plotW / 3 ? "end" : "middle"),
          escapeXml(p.label));
    }
    std::string sqnr = std::isfinite(p.sqnrDb) ? fmt::format("{:.2f} dB", p.sqnrDb) : "no error";
    svg += fmt::format(
        "<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>{}: "
        "{}</title></circle>\n",
        p.flagged ? "flagged" : "layer", number(x), number(yOf(p.sqnrDb)), p.flagged ? 4.5 : 3,
        p.flagged ? kFlagColor : kReferenceColor, escapeXml(p.label), sqnr);
  }
  svg += "</svg>\n";
  return svg;
}

std::string histogramOverlayChart(const std::string& title, double low, double binWidth,
                                  const std::vector<double>& reference,
                                  const std::vector<double>& actual) {
  const double width = 420, height = 200, left = 10, right = 10, top = 24, bottom = 30;
  const double plotW = width - left - right, plotH = height - top - bottom;
  const size_t bins = std::max<size_t>(1, std::min(reference.size(), actual.size()));
  double peak = 1;
  for (size_t i = 0; i < bins && i < reference.size(); ++i) {
    peak = std::max({peak, reference[i], actual[i]});
  }
  auto stepPath = [&](const std::vector<double>& counts) {
    std::string path = fmt::format("M {} {}", number(left), number(top + plotH));
    for (size_t i = 0; i < bins; ++i) {
      double x0 = left + plotW * static_cast<double>(i) / static_cast<double>(bins);
      double x1 = left + plotW * static_cast<double>(i + 1) / static_cast<double>(bins);
      double y = top + plotH * (1 - counts[i] / peak);
      path += fmt::format(" L {} {} L {} {}", number(x0), number(y), number(x1), number(y));
    }
    path += fmt::format(" L {} {} Z", number(left + plotW), number(top + plotH));
    return path;
  };
  std::string svg = fmt::format(
      "<svg class=\"chart histogram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"value histograms\">\n",
      width, height);
  svg += fmt::format("<text x=\"{}\" y=\"15\" font-size=\"12\">{}<title>{}</title></text>\n", left,
                     escapeXml(shortened(title, 34)), escapeXml(title));
  if (!reference.empty() && !actual.empty()) {
    svg += fmt::format(
        "<path class=\"reference\" d=\"{}\" fill=\"{}\" fill-opacity=\"0.35\" "
        "stroke=\"{}\"/>\n",
        stepPath(reference), kReferenceColor, kReferenceColor);
    svg += fmt::format(
        "<path class=\"actual\" d=\"{}\" fill=\"{}\" fill-opacity=\"0.35\" "
        "stroke=\"{}\"/>\n",
        stepPath(actual), kActualColor, kActualColor);
  }
  const double high = low + binWidth * static_cast<double>(bins);
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\">{:.4g}</text>"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.4g}</text>\n",
      left, height - 10, low, left + plotW, height - 10, high);
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\">reference</text>"
      "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\">transformed</text>\n",
      width - 190, 6, kReferenceColor, width - 176, 15, width - 100, 6, kActualColor, width - 86,
      15);
  svg += "</svg>\n";
  return svg;
}

std::string stackedBar(const std::vector<BarSegment>& segments) {
  const double width = 600, height = 28;
  std::string svg = fmt::format(
      "<svg class=\"chart share\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"share\">\n",
      width, height);
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>\n", width,
                     height);
  double x = 0;
  for (const BarSegment& s : segments) {
    double w = width * std::clamp(s.share, 0.0, 1.0);
    if (w <= 0) continue;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: "
        "{:.1f}%</title></rect>\n",
        number(x), number(w), height, s.color, escapeXml(s.label), 100 * s.share);
    if (w > 60) {
      svg += fmt::format(
          "<text x=\"{}\" y=\"18\" font-size=\"12\" fill=\"#fff\">{} {:.1f}%"
          "</text>\n",
          number(x + 6), escapeXml(s.label), 100 * s.share);
    }
    x += w;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace qopt::analysis
