#include "qopt/analysis/ObservedShapes.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "AnalysisTestUtil.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {
namespace {

namespace fs = std::filesystem;
using testing::parse;

// A detector-like input: batch, height and width left open by the export.
constexpr const char* kDynamic = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,3,H,W] x) => (float[N,4,H,W] y)
<float[4,3,1,1] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}>
{
  y = Conv <kernel_shape = [1, 1]> (x, w)
}
)";

std::vector<int64_t> shapeOf(const ObservedShapes& shapes, const Graph& graph,
                             std::string_view name) {
  return shapes.info.find(graph.findValue(name)).shape.value_or(std::vector<int64_t>{});
}

TEST(ObservedShapesTest, OpenDimsAreSetToOneAndNamed) {
  auto model = parse(kDynamic);
  ObservedShapes shapes = observeShapes(model->graph(), {});
  EXPECT_EQ(shapes.origin, "declared");
  EXPECT_EQ(shapes.failure, "");
  ASSERT_EQ(shapes.assumed.size(), 3u);
  EXPECT_EQ(shapes.assumed[0].name, "N");
  EXPECT_EQ(shapes.assumed[1].name, "H");
  EXPECT_EQ(shapes.assumed[1].axis, 2u);
  EXPECT_EQ(shapes.assumed[2].name, "W");
  EXPECT_EQ(shapeOf(shapes, model->graph(), "y"), (std::vector<int64_t>{1, 4, 1, 1}));
  EXPECT_EQ(shapeCaveats(shapes),
            (std::vector<std::string>{"MACs assume N=1, H=1, W=1 for input 'x' (dynamic); pass "
                                      "--input-shapes x:<N>x3x<H>x<W>"}));
}

TEST(ObservedShapesTest, InputShapesFixTheDims) {
  auto model = parse(kDynamic);
  ShapeRequest request;
  request.inputShapes = {{"x", {1, 3, 640, 480}}};
  ObservedShapes shapes = observeShapes(model->graph(), request);
  EXPECT_EQ(shapes.origin, "input-shapes");
  EXPECT_TRUE(shapes.assumed.empty());
  EXPECT_TRUE(shapeCaveats(shapes).empty());
  EXPECT_EQ(shapeOf(shapes, model->graph(), "y"), (std::vector<int64_t>{1, 4, 640, 480}));
}

TEST(ObservedShapesTest, DimsWithoutNamesAreCalledByAxis) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,?] x) => (float[2,?] y) { y = Relu(x) }
)");
  ObservedShapes shapes = observeShapes(model->graph(), {});
  EXPECT_EQ(shapeCaveats(shapes),
            (std::vector<std::string>{"MACs assume dim 1=1 for input 'x' (dynamic); pass "
                                      "--input-shapes x:2x<dim 1>"}));
}

TEST(ObservedShapesTest, CalibrationDataGivesTheShapes) {
  const fs::path dir = fs::temp_directory_path() / "qopt_observed_shapes_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  interp::Array sample(DataType::Float, {1, 3, 8, 6});
  std::fill(sample.data<float>(), sample.data<float>() + sample.numel(), 0.0f);
  interp::writeNpy(dir / "x.npy", sample);
  auto model = parse(kDynamic);
  ShapeRequest request;
  request.calibData = (dir / "x.npy").string();
  ObservedShapes shapes = observeShapes(model->graph(), request);
  fs::remove_all(dir);
  EXPECT_EQ(shapes.origin, "calib:" + request.calibData);
  EXPECT_TRUE(shapes.assumed.empty());
  EXPECT_EQ(shapeOf(shapes, model->graph(), "y"), (std::vector<int64_t>{1, 4, 8, 6}));
}

TEST(ObservedShapesTest, BadInputShapesAreErrorsNamingTheModelAndInput) {
  auto model = parse(kDynamic);
  ShapeRequest request;
  request.inputShapes = {{"x", {1, 3}}};
  try {
    observeShapes(model->graph(), request);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_EQ(e.where(), "test");
    EXPECT_EQ(e.subject(), "input 'x'");
    EXPECT_NE(e.cause().find("rank 2"), std::string::npos);
  }
}

TEST(ObservedShapesTest, AModelTheInterpreterCannotRunIsACaveat) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
g (float[2,3] a) => (float[2,3] y) { y = custom.Mystery(a) }
)");
  ObservedShapes shapes = observeShapes(model->graph(), {});
  EXPECT_NE(shapes.failure.find("Mystery"), std::string::npos);
  ASSERT_EQ(shapeCaveats(shapes).size(), 1u);
  EXPECT_NE(shapeCaveats(shapes)[0].find("only declared shapes are known"), std::string::npos);
}

}  // namespace
}  // namespace qopt::analysis
