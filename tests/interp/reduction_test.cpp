// Reductions (axes as attribute or input, keepdims, noop_with_empty_axes), the softmax family
// (opset < 13 2-D coercion), ArgMax, TopK and CumSum.
#include <cmath>

#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

TEST(Reduction, AxesAttributeBeforeOpset18) {
  Array x = iota({2, 3});
  Array m = runOne(
      "ReduceMean", {x}, [](Node& n) { n.setAttr(Attribute::makeInts("axes", {1})); }, 13);
  EXPECT_EQ(m.shape(), (Shape{2, 1}));
  EXPECT_EQ(doubles(m), (std::vector<double>{1, 4}));
  Array all = runOne(
      "ReduceMax", {x}, [](Node& n) { n.setAttr(Attribute::makeInt("keepdims", 0)); }, 13);
  EXPECT_EQ(all.rank(), 0);
  EXPECT_EQ(all.getDouble(0), 5);
}

TEST(Reduction, AxesInputFromOpset13ForSumAnd18ForTheRest) {
  Array x = iota({2, 3});
  Array s = runOne("ReduceSum", {x, int64s({1}, {0})}, {}, 13);
  EXPECT_EQ(doubles(s), (std::vector<double>{3, 5, 7}));
  Array mn = runOne(
      "ReduceMin", {x, int64s({1}, {-1})},
      [](Node& n) { n.setAttr(Attribute::makeInt("keepdims", 0)); }, 18);
  EXPECT_EQ(mn.shape(), (Shape{2}));
  EXPECT_EQ(doubles(mn), (std::vector<double>{0, 3}));
}

TEST(Reduction, NoopWithEmptyAxesReturnsTheInput) {
  Array x = iota({2, 3});
  auto noop = [](Node& n) { n.setAttr(Attribute::makeInt("noop_with_empty_axes", 1)); };
  Array same = runOne("ReduceSum", {x, int64s({0}, {})}, noop, 13);
  EXPECT_EQ(same.shape(), (Shape{2, 3}));
  Array reducedAll = runOne("ReduceSum", {x, int64s({0}, {})}, {}, 13);
  EXPECT_EQ(reducedAll.shape(), (Shape{1, 1}));
  EXPECT_EQ(reducedAll.getDouble(0), 15);
}

TEST(Reduction, NonContiguousAxes) {
  Array x = iota({2, 3, 2});
  Array s = runOne("ReduceSum", {x, int64s({2}, {0, 2})},
                   [](Node& n) { n.setAttr(Attribute::makeInt("keepdims", 0)); });
  // sum over i, k of 6i + 2j + k = (0+1) + (6+7) + 4j
  EXPECT_EQ(doubles(s), (std::vector<double>{14, 22, 30}));
}

TEST(Reduction, ProdL2AndIntegers) {
  Array x = floats({2, 2}, {3, 4, 1, 2});
  EXPECT_EQ(doubles(runOne(
                "ReduceL2", {x}, [](Node& n) { n.setAttr(Attribute::makeInts("axes", {1})); }, 13)),
            (std::vector<double>{5, std::sqrt(5.0f)}));
  EXPECT_EQ(runOne("ReduceProd", {x}, {}, 13).getDouble(0), 24);
  Array i = int64s({3}, {4000000000000LL, 5, -6});
  EXPECT_EQ(runOne("ReduceSum", {i}, {}, 13).getInt64(0), 3999999999999LL);
  EXPECT_EQ(runOne("ReduceMax", {i}, {}, 13).getInt64(0), 4000000000000LL);
}

TEST(Reduction, SoftmaxOpset11CoercesTo2D) {
  Array x = floats({1, 2, 2}, {0, 0, 0, 0});
  // Opset 11, axis 1: one row of 4 elements.
  Array old = runOne("Softmax", {x}, {}, 11);
  EXPECT_EQ(doubles(old), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  // Opset 13 normalises along the last axis only.
  Array now = runOne("Softmax", {x}, {}, 13);
  EXPECT_EQ(doubles(now), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
  Array logsm = runOne("LogSoftmax", {floats({2}, {1000, 1000})}, {}, 13);
  EXPECT_NEAR(logsm.getDouble(0), -std::log(2.0), 1e-6);
  Array axis0 = runOne(
      "Softmax", {floats({2, 1}, {0, std::log(3.0f)})},
      [](Node& n) { n.setAttr(Attribute::makeInt("axis", 0)); }, 13);
  EXPECT_NEAR(axis0.getDouble(1), 0.75, 1e-6);
}

TEST(Reduction, ArgMaxSelectLastIndexAndArgMin) {
  Array x = floats({2, 3}, {1, 3, 3, 2, 2, 0});
  auto axis1 = [](Node& n) { n.setAttr(Attribute::makeInt("axis", 1)); };
  Array first = runOne("ArgMax", {x}, axis1);
  EXPECT_EQ(first.shape(), (Shape{2, 1}));
  EXPECT_EQ(ints(first), (std::vector<int64_t>{1, 0}));
  Array last = runOne("ArgMax", {x}, [](Node& n) {
    n.setAttr(Attribute::makeInt("axis", 1));
    n.setAttr(Attribute::makeInt("select_last_index", 1));
    n.setAttr(Attribute::makeInt("keepdims", 0));
  });
  EXPECT_EQ(last.shape(), (Shape{2}));
  EXPECT_EQ(ints(last), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(runOne("ArgMin", {x}, axis1)), (std::vector<int64_t>{0, 2}));
}

TEST(Reduction, TopKBreaksTiesByLowerIndex) {
  Array x = floats({1, 5}, {1, 3, 2, 3, 0});
  auto out = runOp("TopK", {x, int64s({1}, {3})}, {}, 13, 2);
  EXPECT_EQ(doubles(out[0]), (std::vector<double>{3, 3, 2}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 3, 2}));
  auto smallest = runOp(
      "TopK", {x, int64s({1}, {2})}, [](Node& n) { n.setAttr(Attribute::makeInt("largest", 0)); },
      13, 2);
  EXPECT_EQ(doubles(smallest[0]), (std::vector<double>{0, 1}));
  EXPECT_EQ(ints(smallest[1]), (std::vector<int64_t>{4, 0}));
  EXPECT_THROW(runOp("TopK", {x, int64s({1}, {6})}, {}, 13, 2), Error);
}

TEST(Reduction, CumSumExclusiveReverse) {
  Array x = floats({4}, {1, 2, 3, 4});
  Array axis = int32s({}, {0});
  EXPECT_EQ(doubles(runOne("CumSum", {x, axis})), (std::vector<double>{1, 3, 6, 10}));
  auto both = [](Node& n) {
    n.setAttr(Attribute::makeInt("exclusive", 1));
    n.setAttr(Attribute::makeInt("reverse", 1));
  };
  EXPECT_EQ(doubles(runOne("CumSum", {x, axis}, both)), (std::vector<double>{9, 7, 4, 0}));
  Array m = runOne("CumSum", {floats({2, 2}, {1, 2, 3, 4}), int64s({}, {1})});
  EXPECT_EQ(doubles(m), (std::vector<double>{1, 3, 3, 7}));
}

}  // namespace
}  // namespace qopt::interp
