// Sequence and optional values: the Array kinds, the sequence and optional ops on the cases the
// ONNX node tests leave out (negative and out-of-range positions, empty sequences, none), and
// the clear error a tensor kernel gives when handed a sequence.
#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

Array sequenceOf(std::vector<Array> items, DataType type = DataType::Float) {
  return Array::sequence(type, std::move(items));
}

// [0], [1], [2] as float tensors of shape [1]: an item's value tells which one it is.
Array threeItems() {
  return sequenceOf({floats({1}, {0}), floats({1}, {1}), floats({1}, {2})});
}

std::vector<double> itemValues(const Array& sequence) {
  std::vector<double> values;
  for (const Array& item : sequence.items()) values.push_back(item.getDouble(0));
  return values;
}

std::function<void(Node&)> intAttr(const char* name, int64_t v) {
  return [=](Node& n) { n.setAttr(Attribute::makeInt(name, v)); };
}

void expectError(const std::function<void()>& fn, const std::string& part) {
  std::string message = errorMessage(fn);
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(SequenceValues, KindsAndAccessors) {
  Array x = floats({2}, {1, 2});
  EXPECT_TRUE(x.isTensor());
  Array s = sequenceOf({x, x});
  EXPECT_TRUE(s.isSequence());
  EXPECT_TRUE(s.valid());
  EXPECT_EQ(s.dataType(), DataType::Float);
  ASSERT_EQ(s.items().size(), 2u);
  EXPECT_EQ(s.items()[1].bytes(), x.bytes());  // items share the tensors' storage
  EXPECT_TRUE(sequenceOf({}).items().empty());

  Array some = Array::optional(s);
  EXPECT_TRUE(some.isOptional());
  EXPECT_TRUE(some.hasValue());
  EXPECT_TRUE(some.value().isSequence());
  Array none = Array::none();
  EXPECT_TRUE(none.valid());
  EXPECT_FALSE(none.hasValue());

  expectError([&] { (void)x.items(); }, "expected a sequence, got a tensor");
  expectError([&] { (void)none.value(); }, "holds no value");
  expectError([&] { (void)s.hasValue(); }, "expected an optional, got a sequence");
  expectError([&] { (void)s.toTensor(); }, "cannot be converted to a tensor");
  expectError([&] { (void)Array::optional(none); }, "cannot hold another optional");
  expectError([&] { (void)sequenceOf({x, int64s({1}, {1})}); }, "cannot hold a INT64 tensor");
  expectError([&] { (void)sequenceOf({s}); }, "holds tensors only");
}

TEST(SequenceOps, SequenceAtCountsNegativePositionsFromTheBack) {
  Array s = threeItems();
  for (int64_t position : {-3, -1, 0, 2}) {
    Array item = runOne("SequenceAt", {s, int64s({}, {position})}, {}, 11);
    EXPECT_EQ(item.getDouble(0), static_cast<double>((position + 3) % 3)) << position;
  }
  EXPECT_EQ(runOne("SequenceAt", {s, int32s({}, {-2})}, {}, 11).getDouble(0), 1);
}

TEST(SequenceOps, SequenceAtOutOfRangeOrOnAnEmptySequenceIsAnError) {
  Array s = threeItems();
  expectError(
      [&] {
        runOne("SequenceAt", {s, int64s({}, {3})}, {}, 11);
      },
      "position 3 is out of range for a sequence of 3 tensors");
  expectError(
      [&] {
        runOne("SequenceAt", {s, int64s({}, {-4})}, {}, 11);
      },
      "position -4 is out of range");
  expectError(
      [&] {
        runOne("SequenceAt", {sequenceOf({}), int64s({}, {0})}, {}, 11);
      },
      "position 0 is out of range for a sequence of 0 tensors");
  expectError(
      [&] {
        runOne("SequenceAt", {s, floats({}, {0})}, {}, 11);
      },
      "must be an int32 or int64 tensor");
  expectError(
      [&] {
        runOne("SequenceAt", {s, int64s({2}, {0, 1})}, {}, 11);
      },
      "must have one element");
  expectError(
      [&] {
        runOne("SequenceAt", {floats({1}, {0}), int64s({}, {0})}, {}, 11);
      },
      "input 0 must be a sequence, got a tensor value");
}

TEST(SequenceOps, SequenceInsertAcceptsMinusSizeToSize) {
  Array s = threeItems();
  Array x = floats({1}, {9});
  auto insertAt = [&](int64_t position) {
    return itemValues(runOne("SequenceInsert", {s, x, int64s({}, {position})}, {}, 11));
  };
  EXPECT_EQ(insertAt(0), (std::vector<double>{9, 0, 1, 2}));
  EXPECT_EQ(insertAt(3), (std::vector<double>{0, 1, 2, 9}));  // size: append
  EXPECT_EQ(insertAt(-1), (std::vector<double>{0, 1, 9, 2}));
  EXPECT_EQ(insertAt(-3), (std::vector<double>{9, 0, 1, 2}));
  EXPECT_EQ(itemValues(runOne("SequenceInsert", {s, x}, {}, 11)),
            (std::vector<double>{0, 1, 2, 9}));
  EXPECT_EQ(itemValues(s), (std::vector<double>{0, 1, 2}));  // the input is unchanged
  expectError([&] { insertAt(4); }, "position 4 is out of range");
  expectError([&] { insertAt(-4); }, "position -4 is out of range");
  expectError(
      [&] {
        runOne("SequenceInsert", {s, int64s({1}, {1})}, {}, 11);
      },
      "cannot insert a INT64 tensor into a sequence of FLOAT tensors");
  // Into an empty sequence, at 0 or -0.
  EXPECT_EQ(itemValues(runOne("SequenceInsert", {sequenceOf({}), x, int64s({}, {0})}, {}, 11)),
            (std::vector<double>{9}));
}

TEST(SequenceOps, SequenceEraseLastByDefaultNegativePositionsAndErrors) {
  Array s = threeItems();
  EXPECT_EQ(itemValues(runOne("SequenceErase", {s}, {}, 11)), (std::vector<double>{0, 1}));
  EXPECT_EQ(itemValues(runOne("SequenceErase", {s, int64s({}, {-3})}, {}, 11)),
            (std::vector<double>{1, 2}));
  EXPECT_EQ(itemValues(runOne("SequenceErase", {s, int32s({}, {1})}, {}, 11)),
            (std::vector<double>{0, 2}));
  expectError(
      [&] {
        runOne("SequenceErase", {s, int64s({}, {3})}, {}, 11);
      },
      "position 3 is out of range");
  expectError([&] { runOne("SequenceErase", {sequenceOf({})}, {}, 11); },
              "cannot erase from an empty sequence");
}

TEST(SequenceOps, EmptyConstructAndLength) {
  Array empty = runOne("SequenceEmpty", {}, intAttr("dtype", 7), 11);
  EXPECT_TRUE(empty.isSequence());
  EXPECT_EQ(empty.dataType(), DataType::Int64);
  EXPECT_TRUE(empty.items().empty());
  EXPECT_EQ(runOne("SequenceEmpty", {}, {}, 11).dataType(), DataType::Float);
  expectError([] { runOne("SequenceEmpty", {}, intAttr("dtype", 99), 11); },
              "dtype 99 is not a tensor element type");

  Array built = runOne("SequenceConstruct", {floats({2}, {1, 2}), floats({}, {3})}, {}, 11);
  ASSERT_EQ(built.items().size(), 2u);
  EXPECT_EQ(built.items()[1].shape(), Shape{});
  expectError(
      [] {
        runOne("SequenceConstruct", {floats({1}, {1}), int64s({1}, {1})}, {}, 11);
      },
      "all inputs must have one element type");
  EXPECT_EQ(runOne("SequenceLength", {threeItems()}, {}, 11).getInt64(0), 3);
  EXPECT_EQ(runOne("SequenceLength", {sequenceOf({})}, {}, 11).getInt64(0), 0);
}

TEST(SequenceOps, SplitToSequenceWithoutSplitByScalarAndBySizes) {
  Array x = iota({2, 5});
  auto split = [&](std::vector<Array> inputs, int64_t axis, int64_t keepdims = 1) {
    return runOne(
        "SplitToSequence", inputs,
        [=](Node& n) {
          n.setAttr(Attribute::makeInt("axis", axis));
          n.setAttr(Attribute::makeInt("keepdims", keepdims));
        },
        11);
  };
  Array ones = split({x}, -1);
  ASSERT_EQ(ones.items().size(), 5u);
  EXPECT_EQ(ones.items()[4].shape(), (Shape{2, 1}));
  EXPECT_EQ(doubles(ones.items()[4]), (std::vector<double>{4, 9}));
  Array dropped = split({x}, 1, 0);
  EXPECT_EQ(dropped.items()[1].shape(), (Shape{2}));
  EXPECT_EQ(doubles(dropped.items()[1]), (std::vector<double>{1, 6}));
  // A scalar split: equal parts, the last one shorter; keepdims does not apply.
  Array chunks = split({x, int64s({}, {2})}, 1, 0);
  ASSERT_EQ(chunks.items().size(), 3u);
  EXPECT_EQ(chunks.items()[2].shape(), (Shape{2, 1}));
  EXPECT_EQ(doubles(chunks.items()[0]), (std::vector<double>{0, 1, 5, 6}));
  Array sized = split({x, int32s({3}, {1, 0, 4})}, 1);
  ASSERT_EQ(sized.items().size(), 3u);
  EXPECT_EQ(sized.items()[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(doubles(sized.items()[2]), (std::vector<double>{1, 2, 3, 4, 6, 7, 8, 9}));
  Array rows = split({x, int64s({1}, {2})}, 0);
  ASSERT_EQ(rows.items().size(), 1u);
  EXPECT_EQ(rows.items()[0].shape(), (Shape{2, 5}));

  expectError([&] { split({x, int64s({2}, {1, 1})}, 1); }, "split sizes sum to 2, the axis has 5");
  expectError([&] { split({x, int64s({2}, {-1, 6})}, 1); }, "must not be negative");
  expectError([&] { split({x, int64s({}, {0})}, 1); }, "a scalar split must be positive");
  expectError([&] { split({x}, 2); }, "axis 2 is out of range");
}

TEST(SequenceOps, ConcatFromSequenceConcatenatesOrStacks) {
  Array s = sequenceOf({iota({2, 2}), floats({2, 1}, {7, 8})});
  auto concat = [](const Array& sequence, int64_t axis, int64_t newAxis) {
    return runOne(
        "ConcatFromSequence", {sequence},
        [=](Node& n) {
          n.setAttr(Attribute::makeInt("axis", axis));
          n.setAttr(Attribute::makeInt("new_axis", newAxis));
        },
        11);
  };
  Array wide = concat(s, -1, 0);
  EXPECT_EQ(wide.shape(), (Shape{2, 3}));
  EXPECT_EQ(doubles(wide), (std::vector<double>{0, 1, 7, 2, 3, 8}));
  expectError([&] { concat(s, 0, 0); }, "incompatible with item 0's");

  Array pair = sequenceOf({floats({2}, {1, 2}), floats({2}, {3, 4})});
  Array stacked = concat(pair, 0, 1);
  EXPECT_EQ(stacked.shape(), (Shape{2, 2}));
  EXPECT_EQ(doubles(stacked), (std::vector<double>{1, 2, 3, 4}));
  Array last = concat(pair, -1, 1);  // with new_axis, -1 is one past the items' last axis
  EXPECT_EQ(last.shape(), (Shape{2, 2}));
  EXPECT_EQ(doubles(last), (std::vector<double>{1, 3, 2, 4}));
  expectError([&] { concat(pair, 2, 1); }, "axis 2 is out of range");
  expectError([&] { concat(sequenceOf({}), 0, 0); }, "cannot concatenate an empty sequence");
  expectError([&] { concat(pair, 0, 2); }, "new_axis must be 0 or 1");
}

TEST(OptionalOps, NoneHasNoElementAndGettingItIsAnError) {
  Array none = Array::none();
  EXPECT_FALSE(runOne("OptionalHasElement", {none}, {}, 15).getDouble(0));
  expectError([&] { runOne("OptionalGetElement", {none}, {}, 15); },
              "the optional input holds no value");
  expectError([&] { runOne("OptionalGetElement", {none}, {}, 18); },
              "the optional input holds no value");

  Array some = Array::optional(floats({2}, {1, 2}));
  EXPECT_TRUE(runOne("OptionalHasElement", {some}, {}, 15).getDouble(0));
  EXPECT_EQ(doubles(runOne("OptionalGetElement", {some}, {}, 15)), (std::vector<double>{1, 2}));
}

TEST(OptionalOps, ATensorOrSequenceIsAnOptionalHoldingIt) {
  // ONNX lets a plain value stand where an optional is declared, in opset 15 as in 18.
  Array x = floats({1}, {5});
  for (int64_t opset : {15, 18}) {
    EXPECT_EQ(doubles(runOne("OptionalGetElement", {x}, {}, opset)), (std::vector<double>{5}));
    EXPECT_TRUE(runOne("OptionalGetElement", {threeItems()}, {}, opset).isSequence());
    EXPECT_TRUE(runOne("OptionalHasElement", {x}, {}, opset).getDouble(0));
    EXPECT_TRUE(runOne("OptionalHasElement", {threeItems()}, {}, opset).getDouble(0));
  }
  // Opset 18 made the input optional: omitted, there is no element.
  EXPECT_FALSE(runOne("OptionalHasElement", {Array()}, {}, 18).getDouble(0));
  expectError([&] { runOne("OptionalHasElement", {Array()}, {}, 15); },
              "required input 0 is missing");
}

TEST(OptionalOps, OptionalWrapsItsInputOrMakesNoneOfTheGivenType) {
  Array some = runOne("Optional", {threeItems()}, {}, 15);
  ASSERT_TRUE(some.hasValue());
  EXPECT_EQ(itemValues(some.value()), (std::vector<double>{0, 1, 2}));
  auto typeAttr = [](Node& n) {
    Attribute a;
    a.name = "type";
    a.kind = AttrKind::TypeProto;
    a.opaqueSingle = std::string("\x0a\x02\x08\x01", 4);  // tensor_type { elem_type: FLOAT }
    n.setAttr(std::move(a));
  };
  EXPECT_FALSE(runOne("Optional", {}, typeAttr, 15).hasValue());
  expectError([] { runOne("Optional", {}, {}, 15); }, "needs the type attribute");
  expectError([] { runOne("Optional", {Array::none()}, {}, 15); }, "got an optional");
}

TEST(SequenceValues, TensorKernelsRefuseSequencesAndOptionals) {
  Array x = floats({1}, {1});
  expectError(
      [&] {
        runOne("Add", {x, threeItems()});
      },
      "input 1 ('in1') is a sequence value; this op takes tensors only");
  expectError([&] { runOne("Relu", {Array::optional(x)}); },
              "input 0 ('in0') is a optional value; this op takes tensors only");
  // A graph input declared a tensor refuses a sequence.
  GraphBuilder b(17);
  Value* in = b.input("x", DataType::Float);
  b.output(b.node("Identity", {in})->output(0));
  Interpreter interp(b.graph());
  expectError([&] { interp.run({{"x", threeItems()}}); }, "expected a tensor, got a sequence");
}

TEST(SequenceValues, ConstantSequencesAreComputedOnceAndStillChecked) {
  // SequenceConstruct of initializers runs when the interpreter is built; the sequence it makes
  // then feeds SequenceAt, and a tensor kernel handed it fails at run time with the clear error.
  GraphBuilder b(17);
  Value* a = b.constant("a", floats({1}, {1}));
  Value* c = b.constant("c", floats({1}, {2}));
  Value* position = b.input("p");
  Value* sequence = b.node("SequenceConstruct", {a, c})->output(0);
  b.output(b.node("SequenceAt", {sequence, position})->output(0));
  Interpreter interp(b.graph());
  EXPECT_EQ(interp.run({{"p", int64s({}, {-1})}})[0].getDouble(0), 2);

  GraphBuilder bad(17);
  Value* x = bad.constant("x", floats({1}, {1}));
  Value* constantSequence = bad.node("SequenceConstruct", {x})->output(0);
  bad.output(bad.node("Neg", {constantSequence})->output(0));
  Interpreter badInterp(bad.graph());
  expectError([&] { badInterp.run({}); }, "is a sequence value; this op takes tensors only");
}

Graph* attachBody(Node* node) {
  Attribute a;
  a.name = "body";
  a.kind = AttrKind::Graph;
  a.g = std::make_unique<Graph>(&node->graph()->model(), node);
  a.g->name = "body";
  Graph* g = a.g.get();
  node->setAttr(std::move(a));
  return g;
}

TEST(SequenceOps, SequenceMapPairsItemsAndPassesTensorsWhole) {
  // y[i] = s[i] + t[i] * w for sequences s, t and a tensor w.
  GraphBuilder b(17);
  Value* s = b.input("s");
  Value* t = b.input("t");
  Value* w = b.input("w");
  Node* map = b.node("SequenceMap", {s, t, w});
  Graph* body = attachBody(map);
  Value* si = body->addInput("si", ValueType::tensor(DataType::Float));
  Value* ti = body->addInput("ti", ValueType::tensor(DataType::Float));
  Value* wi = body->addInput("wi", ValueType::tensor(DataType::Float));
  Value* product = b.node("Mul", {ti, wi}, 1, body)->output(0);
  body->addOutput(b.node("Add", {si, product}, 1, body)->output(0));
  b.output(map->output(0));
  Interpreter interp(b.graph());
  auto out = interp.run({{"s", threeItems()},
                         {"t", sequenceOf({floats({1}, {1}), floats({1}, {2}), floats({1}, {3})})},
                         {"w", floats({}, {10})}});
  EXPECT_EQ(itemValues(out[0]), (std::vector<double>{10, 21, 32}));
  auto empty = interp.run({{"s", sequenceOf({})}, {"t", sequenceOf({})}, {"w", floats({}, {1})}});
  EXPECT_TRUE(empty[0].items().empty());
  EXPECT_EQ(empty[0].dataType(), DataType::Undefined);  // the body's output declares no type
  expectError(
      [&] {
        interp.run(
            {{"s", threeItems()}, {"t", sequenceOf({floats({1}, {1})})}, {"w", floats({}, {1})}});
      },
      "input 1 has 1 items, input 0 has 3");
}

TEST(SequenceValues, PeakBytesCountTheTensorsASequenceHolds) {
  GraphBuilder b(17);
  Value* x = b.input("x");
  Value* doubled = b.node("Add", {x, x})->output(0);
  Value* sequence = b.node("SequenceConstruct", {doubled, doubled})->output(0);
  b.output(b.node("SequenceLength", {sequence})->output(0));
  Interpreter interp(b.graph());
  auto out = interp.run({{"x", iota({256})}});
  EXPECT_EQ(out[0].getInt64(0), 2);
  // The sum and the sequence holding it twice are one tensor of 1 KiB, counted once; the
  // length (8 bytes) is computed while the sequence lives.
  EXPECT_EQ(interp.lastPeakBytes(), 1024u + 8u);
}

}  // namespace
}  // namespace qopt::interp
