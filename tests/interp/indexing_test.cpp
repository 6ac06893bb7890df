// GatherND, ScatterND, ScatterElements, Compress, ReverseSequence, DepthToSpace, SpaceToDepth.
#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

TEST(Indexing, GatherNDWithAndWithoutBatchDims) {
  Array x = iota({2, 2, 2});
  Array rows = runOne("GatherND", {x, int64s({2, 2}, {0, 1, 1, -2})});
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(doubles(rows), (std::vector<double>{2, 3, 4, 5}));
  Array batched = runOne("GatherND", {x, int64s({2, 1}, {1, 0})},
                         [](Node& n) { n.setAttr(Attribute::makeInt("batch_dims", 1)); });
  EXPECT_EQ(batched.shape(), (Shape{2, 2}));
  EXPECT_EQ(doubles(batched), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_THROW(runOne("GatherND", {x, int64s({1, 1}, {2})}), Error);
}

TEST(Indexing, ScatterNDReplacesOrAccumulates) {
  Array x = floats({4}, {1, 2, 3, 4});
  Array idx = int64s({2, 1}, {3, 3});
  Array upd = floats({2}, {10, 20});
  EXPECT_EQ(doubles(runOne("ScatterND", {x, int64s({1, 1}, {1}), floats({1}, {9})})),
            (std::vector<double>{1, 9, 3, 4}));
  Array added = runOne(
      "ScatterND", {x, idx, upd},
      [](Node& n) { n.setAttr(Attribute::makeString("reduction", "add")); }, 16);
  EXPECT_EQ(doubles(added), (std::vector<double>{1, 2, 3, 34}));
  EXPECT_EQ(doubles(x), (std::vector<double>{1, 2, 3, 4}));  // the input is untouched
}

TEST(Indexing, ScatterElementsAlongAnAxis) {
  Array x = floats({2, 3}, {0, 0, 0, 0, 0, 0});
  Array out = runOne("ScatterElements", {x, int64s({2, 1}, {2, -3}), floats({2, 1}, {5, 6})},
                     [](Node& n) { n.setAttr(Attribute::makeInt("axis", 1)); });
  EXPECT_EQ(doubles(out), (std::vector<double>{0, 0, 5, 6, 0, 0}));
  Array maxed = runOne(
      "ScatterElements", {floats({3}, {1, 5, 2}), int64s({2}, {1, 2}), floats({2}, {3, 4})},
      [](Node& n) { n.setAttr(Attribute::makeString("reduction", "max")); }, 18);
  EXPECT_EQ(doubles(maxed), (std::vector<double>{1, 5, 4}));
}

TEST(Indexing, CompressAndReverseSequence) {
  Array x = iota({3, 2});
  Array c = runOne("Compress", {x, bools({3}, {true, false, true})},
                   [](Node& n) { n.setAttr(Attribute::makeInt("axis", 0)); });
  EXPECT_EQ(doubles(c), (std::vector<double>{0, 1, 4, 5}));
  Array flat = runOne("Compress", {x, bools({2}, {false, true})});
  EXPECT_EQ(doubles(flat), (std::vector<double>{1}));
  // time-major [time=3, batch=2]: batch 0 reverses 3 steps, batch 1 only 2.
  Array r = runOne("ReverseSequence", {iota({3, 2}), int64s({2}, {3, 2})});
  EXPECT_EQ(doubles(r), (std::vector<double>{4, 3, 2, 1, 0, 5}));
}

TEST(Indexing, DepthToSpaceModesAndSpaceToDepthInverse) {
  Array x = iota({1, 4, 1, 1});
  Array dcr =
      runOne("DepthToSpace", {x}, [](Node& n) { n.setAttr(Attribute::makeInt("blocksize", 2)); });
  EXPECT_EQ(dcr.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(doubles(dcr), (std::vector<double>{0, 1, 2, 3}));
  Array y = iota({1, 8, 1, 1});
  Array crd = runOne("DepthToSpace", {y}, [](Node& n) {
    n.setAttr(Attribute::makeInt("blocksize", 2));
    n.setAttr(Attribute::makeString("mode", "CRD"));
  });
  EXPECT_EQ(doubles(crd), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  Array dcr8 =
      runOne("DepthToSpace", {y}, [](Node& n) { n.setAttr(Attribute::makeInt("blocksize", 2)); });
  EXPECT_EQ(doubles(dcr8), (std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7}));
  Array back = runOne("SpaceToDepth", {dcr8},
                      [](Node& n) { n.setAttr(Attribute::makeInt("blocksize", 2)); });
  EXPECT_EQ(doubles(back), doubles(y));
}

}  // namespace
}  // namespace qopt::interp
