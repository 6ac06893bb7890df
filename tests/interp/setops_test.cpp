// Unique: a 3-D tensor flattened and along each axis, sorted and in first-occurrence order,
// NaN and signed zeros, strings, and bad attributes. Sorted results agree with numpy.unique.
#include <cmath>
#include <optional>

#include "InterpTestUtil.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

struct UniqueResult {
  Array y;
  std::vector<int64_t> indices, inverse, counts;
};

UniqueResult unique(const Array& x, std::optional<int64_t> axis, int64_t sorted = 1) {
  std::vector<Array> out = runOp(
      "Unique", {x},
      [&](Node& n) {
        if (axis) n.setAttr(Attribute::makeInt("axis", *axis));
        n.setAttr(Attribute::makeInt("sorted", sorted));
      },
      11, 4);
  return {out[0], ints(out[1]), ints(out[2]), ints(out[3])};
}

// Along axis 0 and axis 1 the first and last slices are equal and the middle one sorts first;
// along axis 2 the second slice sorts first.
Array cube() {
  return floats({3, 3, 2}, {2, 1, 0, 5, 2, 1,  //
                            1, 1, 1, 1, 1, 1,  //
                            2, 1, 0, 5, 2, 1});
}

using V = std::vector<int64_t>;
using D = std::vector<double>;

TEST(Unique, FlattenedSortedAndInFirstOccurrenceOrder) {
  UniqueResult s = unique(cube(), std::nullopt);
  EXPECT_EQ(s.y.shape(), (Shape{4}));
  EXPECT_EQ(doubles(s.y), (D{0, 1, 2, 5}));
  EXPECT_EQ(s.indices, (V{2, 1, 0, 3}));
  EXPECT_EQ(s.inverse, (V{2, 1, 0, 3, 2, 1, 1, 1, 1, 1, 1, 1, 2, 1, 0, 3, 2, 1}));
  EXPECT_EQ(s.counts, (V{2, 10, 4, 2}));

  UniqueResult u = unique(cube(), std::nullopt, 0);
  EXPECT_EQ(doubles(u.y), (D{2, 1, 0, 5}));
  EXPECT_EQ(u.indices, (V{0, 1, 2, 3}));
  EXPECT_EQ(u.inverse, (V{0, 1, 2, 3, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(u.counts, (V{4, 10, 2, 2}));
}

TEST(Unique, AlongEachAxisOf3D) {
  UniqueResult a0 = unique(cube(), 0);
  EXPECT_EQ(a0.y.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(doubles(a0.y), (D{1, 1, 1, 1, 1, 1, 2, 1, 0, 5, 2, 1}));
  EXPECT_EQ(a0.indices, (V{1, 0}));
  EXPECT_EQ(a0.inverse, (V{1, 0, 1}));
  EXPECT_EQ(a0.counts, (V{1, 2}));

  UniqueResult a1 = unique(cube(), 1);
  EXPECT_EQ(a1.y.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(doubles(a1.y), (D{0, 5, 2, 1, 1, 1, 1, 1, 0, 5, 2, 1}));
  EXPECT_EQ(a1.indices, (V{1, 0}));
  EXPECT_EQ(a1.inverse, (V{1, 0, 1}));
  EXPECT_EQ(a1.counts, (V{1, 2}));

  for (int64_t axis : {2, -1}) {
    UniqueResult a2 = unique(cube(), axis);
    EXPECT_EQ(a2.y.shape(), (Shape{3, 3, 2}));
    EXPECT_EQ(doubles(a2.y), (D{1, 2, 5, 0, 1, 2, 1, 1, 1, 1, 1, 1, 1, 2, 5, 0, 1, 2}));
    EXPECT_EQ(a2.indices, (V{1, 0}));
    EXPECT_EQ(a2.inverse, (V{1, 0}));
    EXPECT_EQ(a2.counts, (V{1, 1}));
  }
}

TEST(Unique, AlongAxesInFirstOccurrenceOrder) {
  UniqueResult a0 = unique(cube(), 0, 0);
  EXPECT_EQ(doubles(a0.y), (D{2, 1, 0, 5, 2, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(a0.indices, (V{0, 1}));
  EXPECT_EQ(a0.inverse, (V{0, 1, 0}));
  EXPECT_EQ(a0.counts, (V{2, 1}));

  UniqueResult a1 = unique(cube(), 1, 0);
  EXPECT_EQ(doubles(a1.y), (D{2, 1, 0, 5, 1, 1, 1, 1, 2, 1, 0, 5}));
  EXPECT_EQ(a1.inverse, (V{0, 1, 0}));
  EXPECT_EQ(a1.counts, (V{2, 1}));

  UniqueResult a2 = unique(cube(), 2, 0);
  EXPECT_TRUE(bitwiseEqual(a2.y, cube()));
  EXPECT_EQ(a2.indices, (V{0, 1}));
}

TEST(Unique, NaNsGroupLastAndSignedZerosAreEqual) {
  UniqueResult r = unique(floats({5}, {NAN, 1, NAN, -0.0f, 0.0f}), std::nullopt);
  ASSERT_EQ(r.y.numel(), 3);
  EXPECT_EQ(r.y.getDouble(0), 0.0);
  EXPECT_TRUE(std::signbit(r.y.getDouble(0)));  // the first occurrence is kept
  EXPECT_EQ(r.y.getDouble(1), 1.0);
  EXPECT_TRUE(std::isnan(r.y.getDouble(2)));
  EXPECT_EQ(r.indices, (V{3, 1, 0}));
  EXPECT_EQ(r.inverse, (V{2, 1, 2, 0, 0}));
  EXPECT_EQ(r.counts, (V{2, 1, 2}));
}

TEST(Unique, StringsAndIntegers) {
  Array s(DataType::String, {5});
  s.strings() = {"b", "a", "b", "", "A"};
  UniqueResult r = unique(s, std::nullopt);
  EXPECT_EQ(r.y.strings(), (std::vector<std::string>{"", "A", "a", "b"}));
  EXPECT_EQ(r.indices, (V{3, 4, 1, 0}));
  EXPECT_EQ(r.inverse, (V{3, 2, 3, 0, 1}));
  UniqueResult u = unique(s, std::nullopt, 0);
  EXPECT_EQ(u.y.strings(), (std::vector<std::string>{"b", "a", "", "A"}));

  UniqueResult i = unique(int32s({2, 2}, {-3, 7, -3, 7}), 0);
  EXPECT_EQ(i.y.shape(), (Shape{1, 2}));
  EXPECT_EQ(ints(i.y), (V{-3, 7}));
  EXPECT_EQ(i.counts, (V{2}));
}

TEST(Unique, EmptyInput) {
  UniqueResult r = unique(floats({0}, {}), std::nullopt);
  EXPECT_EQ(r.y.shape(), (Shape{0}));
  EXPECT_TRUE(r.indices.empty() && r.inverse.empty() && r.counts.empty());
}

TEST(Unique, BadAttributesAreErrors) {
  auto error = [](const Array& x, std::optional<int64_t> axis, int64_t sorted = 1) {
    return errorMessage([&] { unique(x, axis, sorted); });
  };
  EXPECT_NE(error(cube(), 3).find("axis 3 is out of range for rank 3"), std::string::npos);
  EXPECT_NE(error(cube(), -4).find("out of range"), std::string::npos);
  EXPECT_NE(error(cube(), std::nullopt, 2).find("sorted must be 0 or 1"), std::string::npos);
  EXPECT_NE(error(Array::scalar(DataType::Float, 1.0f), 0).find("scalar"), std::string::npos);
}

}  // namespace
}  // namespace qopt::interp
