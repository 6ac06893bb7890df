// Broadcast shapes and the collapsed row iteration kernels use.
#include "Broadcast.h"

#include <gtest/gtest.h>

#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

TEST(Broadcast, ShapesFollowNumpyRules) {
  EXPECT_EQ(broadcastShapes({2, 1, 3}, {4, 1}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcastShapes({}, {5}), (Shape{5}));
  EXPECT_EQ(broadcastShapes({0, 1}, {1, 3}), (Shape{0, 3}));
  EXPECT_THROW(broadcastShapes({2}, {3}), Error);
}

TEST(Broadcast, LoopCollapsesAndReportsStrides) {
  Shape a{2, 3, 4};
  Shape b{4};
  const Shape* shapes[] = {&a, &b};
  BroadcastLoop loop(shapes, a);
  // [2,3,4] with b varying only on the last axis: rows of 4, 6 of them.
  EXPECT_EQ(loop.innerSize(), 4);
  EXPECT_EQ(loop.rows(), 6);
  EXPECT_EQ(loop.innerStride(0), 1);
  EXPECT_EQ(loop.innerStride(1), 1);
  std::vector<std::pair<int64_t, int64_t>> offsets;
  loop.forRows(0, loop.rows(), [&](int64_t, const int64_t* offs) {
    offsets.push_back({offs[0], offs[1]});
  });
  ASSERT_EQ(offsets.size(), 6u);
  EXPECT_EQ(offsets[5], (std::pair<int64_t, int64_t>{20, 0}));
}

TEST(Broadcast, ScalarOperandHasInnerStrideZero) {
  Shape a{3, 5};
  Shape s{};
  const Shape* shapes[] = {&a, &s};
  BroadcastLoop loop(shapes, a);
  EXPECT_EQ(loop.rows(), 1);
  EXPECT_EQ(loop.innerSize(), 15);
  EXPECT_EQ(loop.innerStride(1), 0);
  std::vector<float> x(15, 2.0f), out(15);
  float y = 3.0f;
  binaryBroadcast(
      loop, x.data(), &y, out.data(), [](float p, float q) { return p * q; }, nullptr);
  EXPECT_EQ(out[14], 6.0f);
}

TEST(Broadcast, MiddleAxisBroadcastVisitsEveryRow) {
  Shape a{2, 3, 2};
  Shape b{2, 1, 2};
  const Shape* shapes[] = {&a, &b};
  BroadcastLoop loop(shapes, a);
  std::vector<int> x(12), y{100, 200, 300, 400}, out(12);
  for (int i = 0; i < 12; ++i) x[static_cast<size_t>(i)] = i;
  binaryBroadcast(
      loop, x.data(), y.data(), out.data(), [](int p, int q) { return p + q; }, nullptr);
  EXPECT_EQ(out, (std::vector<int>{100, 201, 102, 203, 104, 205, 306, 407, 308, 409, 310, 411}));
}

}  // namespace
}  // namespace qopt::interp
