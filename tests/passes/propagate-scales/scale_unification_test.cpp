// The widest of several quantizations, which propagate-scales gives tensors that must share one.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "ScalarInitializer.h"
#include "ScaleUnification.h"
#include "qopt/ir/Graph.h"

namespace qopt {
namespace {

using test::scalar;

TEST(QuantParams, WidestRange) {
  qdq::QuantParams a = qdq::paramsForRange(-1, 1, DataType::Int8, true);
  qdq::QuantParams b = qdq::paramsForRange(-2, 2, DataType::Int8, true);
  std::string why;
  std::optional<qdq::QuantParams> wide = qdq::widestParams({a, b}, &why);
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->scale(), b.scale());
  EXPECT_EQ(wide->zeroPoint(), 0);
  // One asymmetric range: the union [-1.008, 4] is mapped affinely.
  qdq::QuantParams c = qdq::paramsForRange(0, 4, DataType::Int8, false);
  c.zeroPoints = {-128};
  wide = qdq::widestParams({a, c}, &why);
  ASSERT_TRUE(wide);
  // The zero point is an integer, so the ends may move inwards by less than one step.
  EXPECT_LE(wide->lowest(), a.lowest() + wide->scale());
  EXPECT_GE(wide->highest(), c.highest() - wide->scale());
  EXPECT_GT(wide->scale(), c.scale());
  // Different integer types cannot share one quantization.
  EXPECT_FALSE(qdq::widestParams({a, qdq::paramsForRange(0, 1, DataType::UInt8, true)}, &why));
  EXPECT_NE(why.find("types differ"), std::string::npos);
}

}  // namespace
}  // namespace qopt
