#include "qopt/analysis/Svg.h"

#include <gtest/gtest.h>

#include <limits>

#include "AnalysisTestUtil.h"

namespace qopt::analysis {
namespace {

using testing::countOf;

TEST(SvgTest, EscapesMarkup) {
  EXPECT_EQ(escapeXml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(SvgTest, LayerChartHasOneDotPerLayerAndMarksFlaggedOnes) {
  std::vector<LayerErrorPoint> points = {
      {"conv1 (c1)", std::numeric_limits<double>::infinity(), false, false},
      {"conv2 (c2)", -6.0, true, true},
      {"relu <r>", 35.0, false, false},
  };
  std::string svg = layerErrorChart(points, 20.0);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(countOf(svg, "<circle"), 3u);
  EXPECT_EQ(countOf(svg, "class=\"flagged\""), 1u);
  EXPECT_EQ(countOf(svg, "class=\"divergence\""), 1u);
  EXPECT_EQ(countOf(svg, "class=\"threshold\""), 1u);
  EXPECT_NE(svg.find("relu &lt;r&gt;: 35.00 dB"), std::string::npos);
  EXPECT_NE(svg.find("conv1 (c1): no error"), std::string::npos);
  EXPECT_NE(svg.find("<path d=\"M"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SvgTest, HistogramOverlayDrawsBothDistributions) {
  std::string svg = histogramOverlayChart("c2 <x>", -1.0, 0.5, {1, 4, 2, 0}, {0, 1, 4, 2});
  EXPECT_EQ(countOf(svg, "class=\"reference\""), 1u);
  EXPECT_EQ(countOf(svg, "class=\"actual\""), 1u);
  EXPECT_NE(svg.find("c2 &lt;x&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">-1<"), std::string::npos);  // low edge
  EXPECT_NE(svg.find(">1<"), std::string::npos);   // high edge: -1 + 4 * 0.5
}

TEST(SvgTest, LongTitlesKeepTheirEndWithTheFullNameOnHover) {
  std::string name = "/features/features.8/conv/conv.1/conv.1.0/Conv_output_0_DequantizeLinear";
  std::string svg = histogramOverlayChart(name, 0, 1, {1}, {1});
  EXPECT_NE(svg.find(">.../Conv_output_0_DequantizeLinear<title>" + name + "</title>"),
            std::string::npos);
}

TEST(SvgTest, StackedBarSkipsEmptySegments) {
  std::string svg =
      stackedBar({{"INT8", 0.75, "#0a0"}, {"FP16", 0.0, "#00a"}, {"FP32", 0.25, "#777"}});
  EXPECT_EQ(countOf(svg, "<title>"), 2u);
  EXPECT_NE(svg.find("INT8: 75.0%"), std::string::npos);
}

}  // namespace
}  // namespace qopt::analysis
