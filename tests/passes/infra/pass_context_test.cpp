// PassContext pieces: targets and TensorRT versions, the target= option, --input-shapes.
#include <gtest/gtest.h>

#include "TestPasses.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/PassContext.h"

namespace qopt {
namespace {

TEST(Target, ParsesKindsAndVersions) {
  EXPECT_EQ(parseTarget("tensorrt").str(), "tensorrt-10.3");
  EXPECT_EQ(parseTarget("tensorrt-8.6.1").str(), "tensorrt-8.6.1");
  EXPECT_EQ(parseTarget("ort").kind, TargetKind::Ort);
  EXPECT_EQ(parseTarget("generic").str(), "generic");
  EXPECT_THROW(parseTarget("tensorrt-"), Error);
  EXPECT_THROW(parseTarget("tensorrt-ten"), Error);
  try {
    parseTarget("onnxruntime");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
  try {
    parseTarget("tensorrtt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'tensorrt'?"), std::string::npos);
  }
}

TEST(Target, VersionsCompareAndEncodeLikeTensorRT) {
  EXPECT_EQ(parseTrtVersion("10").str(), "10.0");
  EXPECT_EQ(parseTrtVersion("8.6.1").cacheVersionCode(), 8601);
  EXPECT_EQ(parseTrtVersion("10.3").cacheVersionCode(), 100300);
  EXPECT_LT(parseTrtVersion("8.6.1"), parseTrtVersion("10.1"));
  Target t = parseTarget("tensorrt-10.1");
  EXPECT_TRUE(t.trtAtLeast(10));
  EXPECT_TRUE(t.trtAtLeast(10, 1));
  EXPECT_FALSE(t.trtAtLeast(10, 10));
  EXPECT_FALSE(parseTarget("ort").trtAtLeast(8));
  EXPECT_THROW(parseTrtVersion("10.3.1.2"), Error);
  EXPECT_THROW(parseTrtVersion("0.1"), Error);
  EXPECT_THROW(parseTrtVersion("10..1"), Error);
}

TEST(TargetOption, DefaultsToTheContextAndOverrides) {
  testing::TypedPass pass;
  PassContext context;
  context.target = parseTarget("tensorrt-8.6");
  EXPECT_EQ(pass.target.resolve(context).str(), "tensorrt-8.6");
  pass.setOption("target", "generic");
  EXPECT_EQ(pass.target.resolve(context).str(), "generic");
  // Plain "tensorrt" keeps the context's version.
  pass.setOption("target", "tensorrt");
  EXPECT_EQ(pass.target.resolve(context).str(), "tensorrt-8.6");
  EXPECT_EQ(formatOptionValue(pass.target.value()), "tensorrt");
  pass.setOption("target", "tensorrt-10.1");
  EXPECT_EQ(pass.target.resolve(context).str(), "tensorrt-10.1");
  pass.setOption("target", "context");
  EXPECT_EQ(pass.target.resolve(context).str(), "tensorrt-8.6");
}

TEST(InputShapes, ParsesNamesWithColonsAndRejectsBadEntries) {
  auto shapes = parseInputShapes("input:1x3x224x224,ns:mask:1x10");
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0], (InputShape{"input", {1, 3, 224, 224}}));
  EXPECT_EQ(shapes[1], (InputShape{"ns:mask", {1, 10}}));
  DataSettings data;
  data.inputShapes = shapes;
  ASSERT_NE(data.shapeFor("ns:mask"), nullptr);
  EXPECT_EQ(data.shapeFor("other"), nullptr);
  EXPECT_THROW(parseInputShapes("input"), Error);
  EXPECT_THROW(parseInputShapes("input:1xx3"), Error);
  EXPECT_THROW(parseInputShapes("input:-1"), Error);
  EXPECT_THROW(parseInputShapes("a:1,a:2"), Error);
  EXPECT_THROW(parseInputShapes(":1"), Error);
}

}  // namespace
}  // namespace qopt
