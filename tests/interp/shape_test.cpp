// Shape and data-movement kernels, including the attribute-to-input moves across opsets.
#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

std::function<void(Node&)> intAttr(const char* name, int64_t v) {
  return [=](Node& n) { n.setAttr(Attribute::makeInt(name, v)); };
}
std::function<void(Node&)> intsAttr(const char* name, std::vector<int64_t> v) {
  return [=](Node& n) { n.setAttr(Attribute::makeInts(name, v)); };
}

TEST(Shape, ConcatAlongAMiddleAxis) {
  Array out =
      runOne("Concat", {iota({2, 1, 2}), floats({2, 2, 2}, {10, 11, 12, 13, 14, 15, 16, 17})},
             intAttr("axis", -2));
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(doubles(out), (std::vector<double>{0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17}));
}

TEST(Shape, SplitBySizesInputAndByNumOutputs) {
  auto parts = runOp("Split", {iota({5}), int64s({2}, {2, 3})}, {}, 13, 2);
  EXPECT_EQ(doubles(parts[0]), (std::vector<double>{0, 1}));
  EXPECT_EQ(doubles(parts[1]), (std::vector<double>{2, 3, 4}));
  // Opset 18: num_outputs with an uneven last chunk.
  auto three = runOp("Split", {iota({7})}, intAttr("num_outputs", 3), 18, 3);
  EXPECT_EQ(three[0].shape(), (Shape{3}));
  EXPECT_EQ(three[2].shape(), (Shape{1}));
  // Opset 11: the split attribute.
  auto old = runOp(
      "Split", {iota({2, 3})},
      [](Node& n) {
        n.setAttr(Attribute::makeInt("axis", 1));
        n.setAttr(Attribute::makeInts("split", {1, 2}));
      },
      11, 2);
  EXPECT_EQ(doubles(old[1]), (std::vector<double>{1, 2, 4, 5}));
  EXPECT_THROW(runOp("Split", {iota({5})}, {}, 13, 2), Error);  // 5 does not split in two
}

TEST(Shape, SliceWithNegativeStepsAndClamping) {
  Array x = iota({2, 5});
  Array out = runOne("Slice", {x, int64s({1}, {-1}), int64s({1}, {INT64_MIN}), int64s({1}, {1}),
                               int64s({1}, {-2})});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(doubles(out), (std::vector<double>{4, 2, 0, 9, 7, 5}));
  Array clamp = runOne("Slice", {x, int64s({2}, {0, 3}), int64s({2}, {1, 1000})});
  EXPECT_EQ(doubles(clamp), (std::vector<double>{3, 4}));
  Array attrForm = runOne(
      "Slice", {x},
      [](Node& n) {
        n.setAttr(Attribute::makeInts("starts", {1}));
        n.setAttr(Attribute::makeInts("ends", {3}));
        n.setAttr(Attribute::makeInts("axes", {1}));
      },
      9);
  EXPECT_EQ(doubles(attrForm), (std::vector<double>{1, 2, 6, 7}));
}

TEST(Shape, GatherWithNegativeIndicesAndGatherElements) {
  Array x = iota({3, 2});
  Array g = runOne("Gather", {x, int64s({2, 1}, {-1, 0})});
  EXPECT_EQ(g.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(doubles(g), (std::vector<double>{4, 5, 0, 1}));
  Array g1 = runOne("Gather", {x, int32s({}, {1})}, intAttr("axis", 1));
  EXPECT_EQ(g1.shape(), (Shape{3}));
  EXPECT_EQ(doubles(g1), (std::vector<double>{1, 3, 5}));
  EXPECT_THROW(runOne("Gather", {x, int64s({1}, {3})}), Error);
  Array ge = runOne("GatherElements", {x, int64s({2, 2}, {1, 0, 2, -3})});
  EXPECT_EQ(doubles(ge), (std::vector<double>{2, 1, 4, 1}));
}

TEST(Shape, ReshapeCopiesZerosInfersMinusOneAndHonoursAllowZero) {
  Array x = iota({2, 3, 4});
  EXPECT_EQ(runOne("Reshape", {x, int64s({3}, {0, -1, 2})}).shape(), (Shape{2, 6, 2}));
  Array empty(DataType::Float, {0, 3});
  Array allow = runOne("Reshape", {empty, int64s({2}, {3, 0})}, intAttr("allowzero", 1), 14);
  EXPECT_EQ(allow.shape(), (Shape{3, 0}));
  EXPECT_THROW(runOne("Reshape", {x, int64s({2}, {5, -1})}), Error);
}

TEST(Shape, FlattenTransposeSqueezeUnsqueeze) {
  Array x = iota({2, 3, 4});
  EXPECT_EQ(runOne("Flatten", {x}, intAttr("axis", -1)).shape(), (Shape{6, 4}));
  EXPECT_EQ(runOne("Flatten", {x}, intAttr("axis", 0)).shape(), (Shape{1, 24}));
  Array t = runOne("Transpose", {iota({2, 3})});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(doubles(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Array t3 = runOne("Transpose", {x}, intsAttr("perm", {1, 2, 0}));
  EXPECT_EQ(t3.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(t3.getDouble(1), 12.0);
  Array y = iota({1, 3, 1});
  EXPECT_EQ(runOne("Squeeze", {y}).shape(), (Shape{3}));
  EXPECT_EQ(runOne("Squeeze", {y, int64s({1}, {-1})}, {}, 13).shape(), (Shape{1, 3}));
  EXPECT_EQ(runOne("Squeeze", {y}, intsAttr("axes", {0}), 11).shape(), (Shape{3, 1}));
  EXPECT_THROW(runOne("Squeeze", {y, int64s({1}, {1})}, {}, 13), Error);
  EXPECT_EQ(runOne("Unsqueeze", {iota({3}), int64s({2}, {0, -1})}, {}, 13).shape(),
            (Shape{1, 3, 1}));
  EXPECT_EQ(runOne("Unsqueeze", {iota({3})}, intsAttr("axes", {1}), 11).shape(), (Shape{3, 1}));
}

TEST(Shape, ExpandAndTile) {
  Array e = runOne("Expand", {floats({3, 1}, {1, 2, 3}), int64s({3}, {2, 1, 2})});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(doubles(e), (std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  Array t = runOne("Tile", {floats({2}, {1, 2}), int64s({1}, {3})});
  EXPECT_EQ(doubles(t), (std::vector<double>{1, 2, 1, 2, 1, 2}));
  Array t2 = runOne("Tile", {iota({2, 2}), int64s({2}, {2, 1})});
  EXPECT_EQ(doubles(t2), (std::vector<double>{0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(Shape, PadModes) {
  Array x = floats({3}, {1, 2, 3});
  auto mode = [](const char* m) {
    return [=](Node& n) { n.setAttr(Attribute::makeString("mode", m)); };
  };
  Array pads = int64s({2}, {2, 2});
  EXPECT_EQ(doubles(runOne("Pad", {x, pads, floats({}, {9})})),
            (std::vector<double>{9, 9, 1, 2, 3, 9, 9}));
  EXPECT_EQ(doubles(runOne("Pad", {x, pads}, mode("reflect"))),
            (std::vector<double>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(doubles(runOne("Pad", {x, pads}, mode("edge"))),
            (std::vector<double>{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(doubles(runOne("Pad", {x, int64s({2}, {-1, 1})})), (std::vector<double>{2, 3, 0}));
  // Opset 18: pads for the listed axes only.
  Array m = iota({2, 2});
  Array axes = runOne("Pad", {m, int64s({2}, {1, 0}), Array(), int64s({1}, {1})}, {}, 18);
  EXPECT_EQ(axes.shape(), (Shape{2, 3}));
  EXPECT_EQ(doubles(axes), (std::vector<double>{0, 0, 1, 0, 2, 3}));
  // Opset 2: pads and value are attributes.
  Array old = runOne(
      "Pad", {x},
      [](Node& n) {
        n.setAttr(Attribute::makeInts("pads", {1, 0}));
        n.setAttr(Attribute::makeFloat("value", 7));
      },
      10);
  EXPECT_EQ(doubles(old), (std::vector<double>{7, 1, 2, 3}));
}

TEST(Shape, ShapeWithStartEndAndSize) {
  Array x = iota({2, 3, 4});
  EXPECT_EQ(ints(runOne("Shape", {x})), (std::vector<int64_t>{2, 3, 4}));
  auto range = [](Node& n) {
    n.setAttr(Attribute::makeInt("start", 1));
    n.setAttr(Attribute::makeInt("end", -1));
  };
  EXPECT_EQ(ints(runOne("Shape", {x}, range, 15)), (std::vector<int64_t>{3}));
  Array size = runOne("Size", {x});
  EXPECT_EQ(size.rank(), 0);
  EXPECT_EQ(size.getInt64(0), 24);
}

TEST(Shape, IdentityAndReshapeShareStorage) {
  Array x = iota({4});
  Array id = runOne("Identity", {x});
  EXPECT_EQ(id.bytes(), x.bytes());
  Array r = runOne("Reshape", {x, int64s({2}, {2, 2})});
  EXPECT_EQ(r.bytes(), x.bytes());
}

}  // namespace
}  // namespace qopt::interp
