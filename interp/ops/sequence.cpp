// Sequence and optional ops: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt,
// SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
// OptionalHasElement and OptionalGetElement. Sequences are immutable values whose items share
// their tensors' storage, so taking, inserting and erasing items copies no tensor data.
#include <algorithm>

#include "ArrayOps.h"
#include "KernelSupport.h"
#include "qopt/interp/Interpreter.h"

namespace qopt::interp {

namespace {

const Array& sequenceIn(KernelContext& ctx, size_t i) {
  const Array& a = ctx.in(i);
  if (!a.isSequence()) {
    ctx.fail(
        fmt::format("input {} must be a sequence, got a {} value", i, valueKindName(a.kind())));
  }
  return a;
}

const Array& tensorIn(KernelContext& ctx, size_t i) {
  const Array& a = ctx.in(i);
  if (!a.isTensor()) {
    ctx.fail(fmt::format("input {} must be a tensor, got a {} value", i, valueKindName(a.kind())));
  }
  return a;
}

/// The optional input `i` of a position (SequenceAt, SequenceInsert, SequenceErase): a
/// one-element int32 or int64 tensor in [-size, last], negative counting from the back; returned
/// in [0, last]. `fallback` when the input is omitted.
int64_t positionIn(KernelContext& ctx, size_t i, int64_t size, int64_t last, int64_t fallback) {
  const Array* p = ctx.optIn(i);
  if (p == nullptr) return fallback;
  if (!p->isTensor() || (p->dataType() != DataType::Int32 && p->dataType() != DataType::Int64)) {
    ctx.fail("the position must be an int32 or int64 tensor");
  }
  // The specification says a scalar; ONNX's own test data passes shape [1].
  if (p->numel() != 1) {
    ctx.fail(
        fmt::format("the position must have one element, got shape {}", shapeString(p->shape())));
  }
  int64_t position = p->getInt64(0);
  if (position < -size || position > last) {
    ctx.fail(
        fmt::format("position {} is out of range for a sequence of {} tensors (accepted "
                    "[{}, {}])",
                    position, size, -size, last));
  }
  return position < 0 ? position + size : position;
}

Array withItems(const Array& sequence, std::vector<Array> items) {
  return Array::sequence(sequence.dataType(), std::move(items));
}

void sequenceEmpty(KernelContext& ctx) {
  int64_t dtype = ctx.node.attrInt("dtype", static_cast<int64_t>(DataType::Float));
  std::optional<DataType> type = dataTypeFromInt(dtype);
  if (!type || *type == DataType::Undefined) {
    ctx.fail(fmt::format("dtype {} is not a tensor element type", dtype));
  }
  ctx.outputs[0] = Array::sequence(*type, {});
}

void sequenceConstruct(KernelContext& ctx) {
  if (ctx.numInputs() == 0) ctx.fail("needs at least one input");
  std::vector<Array> items;
  items.reserve(ctx.numInputs());
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Array& a = tensorIn(ctx, i);
    if (a.dataType() != ctx.in(0).dataType()) {
      ctx.fail(fmt::format("all inputs must have one element type: input 0 is {}, input {} is {}",
                           dataTypeName(ctx.in(0).dataType()), i, dataTypeName(a.dataType())));
    }
    items.push_back(a);
  }
  ctx.outputs[0] = Array::sequence(ctx.in(0).dataType(), std::move(items));
}

void sequenceInsert(KernelContext& ctx) {
  const Array& sequence = sequenceIn(ctx, 0);
  const Array& tensor = tensorIn(ctx, 1);
  if (tensor.dataType() != sequence.dataType()) {
    ctx.fail(fmt::format("cannot insert a {} tensor into a sequence of {} tensors",
                         dataTypeName(tensor.dataType()), dataTypeName(sequence.dataType())));
  }
  const std::vector<Array>& items = sequence.items();
  int64_t size = static_cast<int64_t>(items.size());
  int64_t position = positionIn(ctx, 2, size, size, size);
  std::vector<Array> out;
  out.reserve(items.size() + 1);
  out.insert(out.end(), items.begin(), items.begin() + position);
  out.push_back(tensor);
  out.insert(out.end(), items.begin() + position, items.end());
  ctx.outputs[0] = withItems(sequence, std::move(out));
}

void sequenceAt(KernelContext& ctx) {
  const Array& sequence = sequenceIn(ctx, 0);
  const std::vector<Array>& items = sequence.items();
  int64_t size = static_cast<int64_t>(items.size());
  if (ctx.optIn(1) == nullptr) ctx.fail("the position input is required");
  ctx.outputs[0] = items[static_cast<size_t>(positionIn(ctx, 1, size, size - 1, 0))];
}

void sequenceErase(KernelContext& ctx) {
  const Array& sequence = sequenceIn(ctx, 0);
  const std::vector<Array>& items = sequence.items();
  int64_t size = static_cast<int64_t>(items.size());
  if (size == 0) ctx.fail("cannot erase from an empty sequence");
  int64_t position = positionIn(ctx, 1, size, size - 1, size - 1);
  std::vector<Array> out = items;
  out.erase(out.begin() + position);
  ctx.outputs[0] = withItems(sequence, std::move(out));
}

void sequenceLength(KernelContext& ctx) {
  const Array& sequence = sequenceIn(ctx, 0);
  ctx.outputs[0] = Array::scalar(DataType::Int64, static_cast<int64_t>(sequence.items().size()));
}

/// Part of `x` along `axis`: `length` entries from `begin`.
Array slab(const Array& x, int64_t axis, int64_t begin, int64_t length) {
  Shape shape = x.shape();
  int64_t dim = shape[static_cast<size_t>(axis)];
  shape[static_cast<size_t>(axis)] = length;
  Array out(x.dataType(), shape);
  int64_t outer = product(x.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(x.shape(), static_cast<size_t>(axis) + 1);
  int64_t block = length * inner;
  for (int64_t o = 0; o < outer; ++o)
    copyElements(x, (o * dim + begin) * inner, out, o * block, block);
  return out;
}

void splitToSequence(KernelContext& ctx) {
  const Array& x = tensorIn(ctx, 0);
  if (x.rank() == 0) ctx.fail("cannot split a scalar");
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), x.rank());
  int64_t dim = x.shape()[static_cast<size_t>(axis)];
  int64_t keepdims = ctx.node.attrInt("keepdims", 1);
  if (keepdims != 0 && keepdims != 1)
    ctx.fail(fmt::format("keepdims must be 0 or 1, got {}", keepdims));
  std::vector<int64_t> sizes;
  const Array* split = ctx.optIn(1);
  if (split == nullptr) {
    // Without split: parts of length one, whose axis keepdims may drop.
    sizes.assign(static_cast<size_t>(dim), 1);
  } else {
    if (!split->isTensor() ||
        (split->dataType() != DataType::Int32 && split->dataType() != DataType::Int64)) {
      ctx.fail("split must be an int32 or int64 tensor");
    }
    if (split->rank() > 1) {
      ctx.fail(
          fmt::format("split must be a scalar or 1-D, got shape {}", shapeString(split->shape())));
    }
    if (split->rank() == 0) {
      // Equal parts of that length, the last one shorter when the axis does not divide evenly.
      int64_t length = split->getInt64(0);
      if (length <= 0) ctx.fail(fmt::format("a scalar split must be positive, got {}", length));
      for (int64_t begin = 0; begin < dim; begin += length)
        sizes.push_back(std::min(length, dim - begin));
    } else {
      sizes = split->toInt64Vector();
      if (sizes.empty()) ctx.fail("split must not be empty");
      int64_t total = 0;
      for (int64_t s : sizes) {
        if (s < 0) ctx.fail(fmt::format("split sizes must not be negative, got {}", s));
        if (s > dim - total) ctx.fail(fmt::format("split sizes exceed the axis of size {}", dim));
        total += s;
      }
      if (total != dim) ctx.fail(fmt::format("split sizes sum to {}, the axis has {}", total, dim));
    }
  }
  bool dropAxis = split == nullptr && keepdims == 0;
  std::vector<Array> parts;
  parts.reserve(sizes.size());
  int64_t begin = 0;
  for (int64_t length : sizes) {
    Array part = slab(x, axis, begin, length);
    if (dropAxis) {
      Shape shape = part.shape();
      shape.erase(shape.begin() + axis);
      part = part.reshaped(std::move(shape));
    }
    parts.push_back(std::move(part));
    begin += length;
  }
  ctx.outputs[0] = Array::sequence(x.dataType(), std::move(parts));
}

void concatFromSequence(KernelContext& ctx) {
  const Array& sequence = sequenceIn(ctx, 0);
  if (!ctx.node.hasAttr("axis")) ctx.fail("the axis attribute is required");
  int64_t newAxis = ctx.node.attrInt("new_axis", 0);
  if (newAxis != 0 && newAxis != 1)
    ctx.fail(fmt::format("new_axis must be 0 or 1, got {}", newAxis));
  const std::vector<Array>& items = sequence.items();
  if (items.empty()) ctx.fail("cannot concatenate an empty sequence");
  const Shape& firstShape = items[0].shape();
  // With new_axis the axis may also be one past the last (numpy.stack).
  int64_t rank = items[0].rank() + newAxis;
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), rank);
  // Each item as a part of the output's rank: new_axis inserts a 1 at the axis (no copy).
  std::vector<Array> parts;
  parts.reserve(items.size());
  Shape shape;
  for (size_t k = 0; k < items.size(); ++k) {
    const Array& item = items[k];
    if (item.shape().size() != firstShape.size()) {
      ctx.fail(fmt::format("item {} has shape {}, item 0 {}: the ranks differ", k,
                           shapeString(item.shape()), shapeString(firstShape)));
    }
    Shape partShape = item.shape();
    if (newAxis == 1) partShape.insert(partShape.begin() + axis, 1);
    for (int64_t d = 0; d < rank; ++d) {
      if (k > 0 && d != axis && partShape[d] != shape[d]) {
        ctx.fail(fmt::format("item {} has shape {}, incompatible with item 0's {}", k,
                             shapeString(item.shape()), shapeString(firstShape)));
      }
    }
    if (k == 0) {
      shape = partShape;
    } else {
      shape[axis] += partShape[axis];
    }
    parts.push_back(newAxis == 1 ? item.reshaped(std::move(partShape)) : item);
  }
  Array out(sequence.dataType(), shape);
  int64_t outer = product(shape, 0, static_cast<size_t>(axis));
  int64_t inner = product(shape, static_cast<size_t>(axis) + 1);
  int64_t outRow = shape[axis] * inner;
  int64_t offset = 0;
  for (const Array& part : parts) {
    int64_t block = part.shape()[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      copyElements(part, o * block, out, o * outRow + offset, block);
    offset += block;
  }
  ctx.outputs[0] = std::move(out);
}

/// SequenceMap 17: runs the body once per item of the first input, handing it that item, the
/// same item of every other sequence input and every tensor input whole; output j collects the
/// body's output j of each run.
void sequenceMap(KernelContext& ctx) {
  const Attribute* attr = ctx.node.findAttr("body");
  if (attr == nullptr || attr->kind != AttrKind::Graph || !attr->g) {
    ctx.fail("the graph attribute 'body' is missing");
  }
  const Graph& body = *attr->g;
  size_t count = sequenceIn(ctx, 0).items().size();
  if (body.inputs().size() != ctx.numInputs()) {
    ctx.fail(fmt::format("the body takes {} inputs, the node has {}", body.inputs().size(),
                         ctx.numInputs()));
  }
  if (body.outputs().size() != ctx.outputs.size()) {
    ctx.fail(fmt::format("the body has {} outputs, the node {}", body.outputs().size(),
                         ctx.outputs.size()));
  }
  for (size_t k = 1; k < ctx.numInputs(); ++k) {
    const Array& a = ctx.in(k);
    if (a.isOptional()) ctx.fail(fmt::format("input {} must be a tensor or a sequence", k));
    if (a.isSequence() && a.items().size() != count) {
      ctx.fail(fmt::format("input {} has {} items, input 0 has {}", k, a.items().size(), count));
    }
  }
  std::vector<std::vector<Array>> collected(ctx.outputs.size());
  for (auto& items : collected) items.reserve(count);
  std::vector<Array> inputs(ctx.numInputs());
  for (size_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < ctx.numInputs(); ++k) {
      const Array& a = ctx.in(k);
      inputs[k] = a.isSequence() ? a.items()[i] : a;
    }
    std::vector<Array> results = ctx.interpreter.runSubgraph(body, inputs, ctx.outerLookup);
    for (size_t j = 0; j < results.size(); ++j) {
      const Array& r = results[j];
      if (!r.isTensor()) {
        ctx.fail(fmt::format("body output {} must be a tensor, got a {} value", j,
                             valueKindName(r.kind())));
      }
      if (!collected[j].empty() && r.dataType() != collected[j][0].dataType()) {
        ctx.fail(fmt::format("body output {} changes element type from {} to {}", j,
                             dataTypeName(collected[j][0].dataType()), dataTypeName(r.dataType())));
      }
      collected[j].push_back(r);
    }
  }
  for (size_t j = 0; j < collected.size(); ++j) {
    // An empty input sequence gives empty outputs of the body's declared element types.
    DataType type =
        collected[j].empty() ? body.outputs()[j]->type().elemType : collected[j][0].dataType();
    ctx.outputs[j] = Array::sequence(type, std::move(collected[j]));
  }
}

/// Optional 15: the input wrapped, or none when the input is omitted (the type attribute then
/// says of what).
void optionalOp(KernelContext& ctx) {
  const Array* value = ctx.optIn(0);
  if (value == nullptr) {
    if (!ctx.node.hasAttr("type")) {
      ctx.fail("an Optional without input needs the type attribute");
    }
    ctx.outputs[0] = Array::none();
    return;
  }
  if (value->isOptional()) ctx.fail("input 0 must be a tensor or a sequence, got an optional");
  ctx.outputs[0] = Array::optional(*value);
}

// ONNX lets a tensor or sequence stand where an optional of its type is declared (a Loop body
// whose carried optional comes back as a plain sequence, as in ONNX's test_loop16_seq_none):
// such a value is an optional holding it, in every opset. Opset 18 only writes that down for
// these two ops and makes OptionalHasElement's input optional.

/// OptionalHasElement 15 and 18: whether the input holds a value; false for an omitted input
/// (18).
void optionalHasElement(KernelContext& ctx) {
  const Array* input = ctx.opset >= 18 ? ctx.optIn(0) : &ctx.in(0);
  bool has = input != nullptr && (!input->isOptional() || input->hasValue());
  ctx.outputs[0] = Array::scalar(DataType::Bool, has);
}

/// OptionalGetElement 15 and 18: the value the input holds.
void optionalGetElement(KernelContext& ctx) {
  const Array& input = ctx.in(0);
  if (!input.isOptional()) {
    ctx.outputs[0] = input;
    return;
  }
  if (!input.hasValue()) ctx.fail("the optional input holds no value");
  ctx.outputs[0] = input.value();
}

}  // namespace

void registerSequenceKernels(KernelRegistry& r) {
  r.add({
      {"SequenceEmpty", 11, sequenceEmpty},
      {"SequenceConstruct", 11, sequenceConstruct},
      {"SequenceInsert", 11, sequenceInsert},
      {"SequenceAt", 11, sequenceAt},
      {"SequenceErase", 11, sequenceErase},
      {"SequenceLength", 11, sequenceLength},
      {"SplitToSequence", 11, splitToSequence},
      {"ConcatFromSequence", 11, concatFromSequence},
      {"SequenceMap", 17, sequenceMap},
      {"Optional", 15, optionalOp},
      // One kernel each for opsets 15 and 18.
      {"OptionalHasElement", 15, optionalHasElement},
      {"OptionalGetElement", 15, optionalGetElement},
  });
}

}  // namespace qopt::interp
