// Shape and data-movement kernels: Concat, Split, Slice, Gather, GatherElements, Reshape,
// Flatten, Transpose, Squeeze, Unsqueeze, Expand, Tile, Pad, Shape, Size, Identity.
// Attribute-to-input moves across opsets are handled by registering each form separately.
#include <algorithm>
#include <limits>

#include "ArrayOps.h"
#include "Broadcast.h"
#include "KernelSupport.h"

namespace qopt::interp {

namespace {

/// The integer values of an optional 1-D input (axes, pads, repeats...).
std::vector<int64_t> intsOf(const Array& a) {
  return a.toInt64Vector();
}

Array int64Vector(const std::vector<int64_t>& values) {
  Array out(DataType::Int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), out.data<int64_t>());
  return out;
}

// ---------------------------------------------------------------------------------------------

void concat(KernelContext& ctx) {
  if (ctx.numInputs() == 0) ctx.fail("needs at least one input");
  const Array& first = ctx.in(0);
  int64_t rank = first.rank();
  if (!ctx.node.hasAttr("axis")) ctx.fail("the axis attribute is required");
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), rank);
  Shape shape = first.shape();
  shape[axis] = 0;
  for (size_t k = 0; k < ctx.numInputs(); ++k) {
    const Array& a = ctx.in(k);
    if (a.dataType() != first.dataType()) ctx.fail("inputs have different element types");
    if (a.rank() != rank) ctx.fail("inputs have different ranks");
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && a.shape()[d] != first.shape()[d]) {
        ctx.fail(fmt::format("input {} has shape {}, incompatible with {} on axis {}", k,
                             shapeString(a.shape()), shapeString(first.shape()), d));
      }
    }
    shape[axis] += a.shape()[axis];
  }
  Array out(first.dataType(), shape);
  int64_t outer = product(shape, 0, static_cast<size_t>(axis));
  int64_t inner = product(shape, static_cast<size_t>(axis) + 1);
  int64_t outRow = shape[axis] * inner;
  int64_t offset = 0;
  for (size_t k = 0; k < ctx.numInputs(); ++k) {
    const Array& a = ctx.in(k);
    int64_t block = a.shape()[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) copyElements(a, o * block, out, o * outRow + offset, block);
    offset += block;
  }
  ctx.outputs[0] = std::move(out);
}

void split(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), x.rank());
  int64_t dim = x.shape()[axis];
  size_t n = ctx.outputs.size();
  std::vector<int64_t> sizes;
  if (const Array* s = ctx.opset >= 13 ? ctx.optIn(1) : nullptr) {
    sizes = intsOf(*s);
  } else if (ctx.opset < 13 && ctx.node.hasAttr("split")) {
    sizes = ctx.node.attrInts("split");
  } else if (ctx.opset >= 18 && ctx.node.hasAttr("num_outputs")) {
    int64_t parts = ctx.node.attrInt("num_outputs", 0);
    if (parts <= 0 || static_cast<size_t>(parts) != n) {
      ctx.fail(fmt::format("num_outputs {} does not match the {} outputs", parts, n));
    }
    int64_t chunk = (dim + parts - 1) / parts;  // the last part takes what is left
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  } else {
    if (dim % static_cast<int64_t>(n) != 0) {
      ctx.fail(fmt::format("axis of size {} cannot be split evenly into {} outputs", dim, n));
    }
    sizes.assign(n, dim / static_cast<int64_t>(n));
  }
  if (sizes.size() != n) ctx.fail(fmt::format("{} split sizes for {} outputs", sizes.size(), n));
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("split sizes must not be negative");
    total += s;
  }
  if (total != dim) ctx.fail(fmt::format("split sizes sum to {}, the axis has {}", total, dim));
  int64_t outer = product(x.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(x.shape(), static_cast<size_t>(axis) + 1);
  int64_t offset = 0;
  for (size_t k = 0; k < n; ++k) {
    Shape shape = x.shape();
    shape[axis] = sizes[k];
    Array out(x.dataType(), shape);
    int64_t block = sizes[k] * inner;
    for (int64_t o = 0; o < outer; ++o)
      copyElements(x, o * dim * inner + offset, out, o * block, block);
    offset += block;
    ctx.outputs[k] = std::move(out);
  }
}

/// Slice with resolved starts/ends/axes/steps (shared by the attribute and input forms).
void sliceWith(KernelContext& ctx, const Array& x, std::vector<int64_t> starts,
               std::vector<int64_t> ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  int64_t rank = x.rank();
  if (starts.size() != ends.size()) ctx.fail("starts and ends have different lengths");
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.fail("starts, ends, axes and steps must have the same length");
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0);
  std::vector<int64_t> step(static_cast<size_t>(rank), 1);
  Shape shape = x.shape();
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normalizeAxis(axes[i], rank);
    if (seen[axis]) ctx.fail(fmt::format("axis {} appears twice", axes[i]));
    seen[axis] = 1;
    int64_t dim = x.shape()[axis];
    int64_t s = steps[i];
    if (s == 0) ctx.fail("steps must not be 0");
    int64_t start = starts[i];
    int64_t end = ends[i];
    if (start < 0) start = start < -dim ? -1 : start + dim;
    if (end < 0) end = end < -dim ? -1 : end + dim;
    int64_t count;
    if (dim == 0) {
      count = 0;
    } else if (s > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + s - 1) / s : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end + (-s) - 1) / (-s) : 0;
    }
    begin[axis] = count > 0 ? start : 0;
    step[axis] = s;
    shape[axis] = count;
  }
  std::vector<int64_t> inStrides = contiguousStrides(x.shape());
  int64_t base = 0;
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    base += begin[d] * inStrides[d];
    strides[d] = step[d] * inStrides[d];
  }
  Array out(x.dataType(), shape);
  stridedCopy(x, base, strides, out, ctx.pool);
  ctx.outputs[0] = std::move(out);
}

void slice(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> axes, steps;
  if (const Array* a = ctx.optIn(3)) axes = intsOf(*a);
  if (const Array* s = ctx.optIn(4)) steps = intsOf(*s);
  sliceWith(ctx, x, intsOf(ctx.in(1)), intsOf(ctx.in(2)), axes, steps);
}

void sliceAttributes(KernelContext& ctx) {
  sliceWith(ctx, ctx.in(0), ctx.node.attrInts("starts"), ctx.node.attrInts("ends"),
            ctx.node.attrInts("axes"), {});
}

/// Reads one index, wrapping negatives and rejecting out-of-range values.
int64_t checkedIndex(KernelContext& ctx, int64_t index, int64_t dim) {
  int64_t i = index < 0 ? index + dim : index;
  if (i < 0 || i >= dim)
    ctx.fail(fmt::format("index {} is out of range for a dimension of {}", index, dim));
  return i;
}

void gather(KernelContext& ctx) {
  const Array& data = ctx.in(0);
  const Array& indices = ctx.in(1);
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), data.rank());
  Shape shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  Array out(data.dataType(), shape);
  int64_t dim = data.shape()[axis];
  int64_t outer = product(data.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(data.shape(), static_cast<size_t>(axis) + 1);
  std::vector<int64_t> idx = intsOf(indices);
  for (int64_t& i : idx) i = checkedIndex(ctx, i, dim);
  int64_t n = static_cast<int64_t>(idx.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      copyElements(data, (o * dim + idx[static_cast<size_t>(j)]) * inner, out, (o * n + j) * inner,
                   inner);
    }
  }
  ctx.outputs[0] = std::move(out);
}

void gatherElements(KernelContext& ctx) {
  const Array& data = ctx.in(0);
  const Array& indices = ctx.in(1);
  int64_t rank = data.rank();
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), rank);
  if (indices.rank() != rank) ctx.fail("indices must have the rank of data");
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && indices.shape()[d] > data.shape()[d]) {
      ctx.fail(fmt::format("indices shape {} exceeds data shape {} on axis {}",
                           shapeString(indices.shape()), shapeString(data.shape()), d));
    }
  }
  Array out(data.dataType(), indices.shape());
  std::vector<int64_t> dataStrides = contiguousStrides(data.shape());
  std::vector<int64_t> idx = intsOf(indices);
  std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
  int64_t dim = data.shape()[axis];
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t p = d == axis ? checkedIndex(ctx, idx[static_cast<size_t>(i)], dim) : pos[d];
      offset += p * dataStrides[d];
    }
    copyElements(data, offset, out, i, 1);
    nextIndex(pos, indices.shape());
  }
  ctx.outputs[0] = std::move(out);
}

void reshape(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> requested = intsOf(ctx.in(1));
  bool allowZero = ctx.opset >= 14 && ctx.node.attrInt("allowzero", 0) != 0;
  Shape shape(requested.size());
  int64_t inferAt = -1;
  int64_t known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t d = requested[i];
    if (d == -1) {
      if (inferAt >= 0) ctx.fail("more than one -1 in the shape");
      inferAt = static_cast<int64_t>(i);
      continue;
    }
    if (d == 0 && !allowZero) {
      if (i >= x.shape().size())
        ctx.fail(fmt::format("shape entry {} copies a dimension the input lacks", i));
      d = x.shape()[i];
    }
    if (d < 0) ctx.fail(fmt::format("invalid shape entry {}", requested[i]));
    if (d != 0 && known > std::numeric_limits<int64_t>::max() / d) {
      ctx.fail(fmt::format("cannot reshape {} to [{}]: too many elements", shapeString(x.shape()),
                           fmt::join(requested, ",")));
    }
    shape[i] = d;
    known *= d;
  }
  if (inferAt >= 0) {
    if (known == 0 || x.numel() % known != 0) {
      ctx.fail(fmt::format("cannot reshape {} to [{}]", shapeString(x.shape()),
                           fmt::join(requested, ",")));
    }
    shape[static_cast<size_t>(inferAt)] = x.numel() / known;
  }
  if (product(shape) != x.numel()) {
    ctx.fail(fmt::format("cannot reshape {} to [{}]", shapeString(x.shape()),
                         fmt::join(requested, ",")));
  }
  ctx.outputs[0] = x.reshaped(shape);
}

void flatten(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 1), x.rank(), true);
  ctx.outputs[0] = x.reshaped({product(x.shape(), 0, static_cast<size_t>(axis)),
                               product(x.shape(), static_cast<size_t>(axis))});
}

void transpose(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> perm = ctx.node.attrInts("perm");
  if (!ctx.node.hasAttr("perm")) {
    for (int64_t d = x.rank(); d-- > 0;) perm.push_back(d);
  }
  ctx.outputs[0] = transposeArray(x, perm, ctx.pool);
}

void squeeze(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> axes;
  bool given = false;
  if (ctx.opset >= 13) {
    if (const Array* a = ctx.optIn(1)) {
      axes = intsOf(*a);
      given = true;
    }
  } else if (ctx.node.hasAttr("axes")) {
    axes = ctx.node.attrInts("axes");
    given = true;
  }
  std::vector<char> drop(static_cast<size_t>(x.rank()), 0);
  if (!given) {
    for (int64_t d = 0; d < x.rank(); ++d) drop[d] = x.shape()[d] == 1;
  }
  for (int64_t a : axes) {
    int64_t d = normalizeAxis(a, x.rank());
    if (x.shape()[d] != 1)
      ctx.fail(fmt::format("cannot squeeze axis {} of size {}", a, x.shape()[d]));
    drop[d] = 1;
  }
  Shape shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!drop[d]) shape.push_back(x.shape()[d]);
  }
  ctx.outputs[0] = x.reshaped(shape);
}

void unsqueeze(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> axes = ctx.opset >= 13 ? intsOf(ctx.in(1)) : ctx.node.attrInts("axes");
  int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<char> inserted(static_cast<size_t>(rank), 0);
  for (int64_t a : axes) {
    int64_t d = normalizeAxis(a, rank);
    if (inserted[d]) ctx.fail(fmt::format("axis {} appears twice", a));
    inserted[d] = 1;
  }
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : x.shape()[next++]);
  ctx.outputs[0] = x.reshaped(shape);
}

void expand(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> target = intsOf(ctx.in(1));
  Shape shape = broadcastShapes(x.shape(), Shape(target.begin(), target.end()));
  Array out(x.dataType(), shape);
  std::vector<int64_t> inStrides = contiguousStrides(x.shape());
  std::vector<int64_t> strides(shape.size(), 0);
  size_t offset = shape.size() - x.shape().size();
  for (size_t d = 0; d < x.shape().size(); ++d) {
    strides[offset + d] = x.shape()[d] == 1 ? 0 : inStrides[d];
  }
  stridedCopy(x, 0, strides, out, ctx.pool);
  ctx.outputs[0] = std::move(out);
}

void tile(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> repeats = intsOf(ctx.in(1));
  if (static_cast<int64_t>(repeats.size()) != x.rank()) {
    ctx.fail(fmt::format("{} repeats for rank {}", repeats.size(), x.rank()));
  }
  // As a broadcast copy: view the output as [r0, d0, r1, d1, ...] with the repeat axes at stride 0.
  Shape split;
  std::vector<int64_t> strides;
  std::vector<int64_t> inStrides = contiguousStrides(x.shape());
  Shape shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats must not be negative");
    split.push_back(repeats[d]);
    split.push_back(x.shape()[d]);
    strides.push_back(0);
    strides.push_back(inStrides[d]);
  }
  // Allocated first: the allocation checks the element count (and the limit), so the products
  // below cannot overflow.
  Array out(x.dataType(), split);
  for (int64_t d = 0; d < x.rank(); ++d) shape.push_back(x.shape()[d] * repeats[d]);
  stridedCopy(x, 0, strides, out, ctx.pool);
  ctx.outputs[0] = out.reshaped(shape);
}

/// Pad with per-axis begin/end amounts (negative crops). Modes: constant, reflect, edge, wrap.
void padWith(KernelContext& ctx, const Array& x, const std::vector<int64_t>& pads,
             const std::string& mode, const Array* constant, double attrValue) {
  int64_t rank = x.rank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    ctx.fail(fmt::format("{} pads for rank {}", pads.size(), rank));
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    ctx.fail(fmt::format("unknown mode '{}'", mode));
  }
  if (rank == 0) {
    ctx.outputs[0] = x;
    return;
  }
  Shape shape(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = x.shape()[d];
    shape[d] = dim + pads[d] + pads[d + rank];
    if (shape[d] < 0) ctx.fail(fmt::format("pads crop axis {} below zero", d));
    if (dim == 0 && shape[d] > 0 && mode != "constant") {
      ctx.fail(fmt::format("cannot {}-pad an empty axis", mode));
    }
  }
  Array out(x.dataType(), shape);  // checks the size before the index maps are built
  // Per axis, the input index for each output index (-1: the constant).
  std::vector<std::vector<int64_t>> source(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = x.shape()[d];
    int64_t before = pads[d];
    auto& map = source[d];
    map.resize(static_cast<size_t>(shape[d]));
    for (int64_t o = 0; o < shape[d]; ++o) {
      int64_t i = o - before;
      if (i < 0 || i >= dim) {
        if (mode == "constant") {
          i = -1;
        } else if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, dim - 1);
        } else if (mode == "wrap") {
          i = ((i % dim) + dim) % dim;
        } else if (dim == 1) {
          i = 0;
        } else {
          int64_t period = 2 * (dim - 1);
          i = ((i % period) + period) % period;
          if (i >= dim) i = period - i;
        }
      }
      map[static_cast<size_t>(o)] = i;
    }
  }
  if (out.numel() == 0) {
    ctx.outputs[0] = std::move(out);
    return;
  }
  // Fill value in the element type.
  Array fill(x.dataType(), {});
  if (x.dataType() == DataType::String) {
    fill.strings()[0] = constant && constant->numel() > 0 ? constant->strings()[0] : std::string();
  } else if (constant != nullptr && constant->numel() > 0) {
    if (constant->dataType() != x.dataType()) ctx.fail("constant_value must have the input's type");
    copyElements(*constant, 0, fill, 0, 1);
  } else {
    dispatchNumericOrBool(x.dataType(), [&]<class T>(TypeTag<T>) {
      if constexpr (std::is_same_v<T, bool>) {
        *fill.data<bool>() = attrValue != 0;
      } else {
        *fill.data<T>() = fromCompute<T>(static_cast<ComputeT<T>>(attrValue));
      }
    });
  }
  std::vector<int64_t> inStrides = contiguousStrides(x.shape());
  int64_t inner = shape[rank - 1];
  // Runs of the innermost axis that copy consecutive input elements (or the constant).
  struct Run {
    int64_t out, in, length;  // in < 0: the constant
  };
  std::vector<Run> runs;
  for (int64_t i = 0; i < inner; ++i) {
    int64_t s = source[rank - 1][static_cast<size_t>(i)];
    if (!runs.empty()) {
      Run& last = runs.back();
      bool extends = s < 0 ? last.in < 0 : (last.in >= 0 && last.in + last.length == s);
      if (extends) {
        ++last.length;
        continue;
      }
    }
    runs.push_back({i, s, 1});
  }
  Array fillRow(x.dataType(), {inner});
  for (int64_t i = 0; i < inner; ++i) copyElements(fill, 0, fillRow, i, 1);
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t row = 0; row < out.numel() / inner; ++row) {
    int64_t base = 0;
    bool outside = false;
    for (int64_t d = 0; d < rank - 1; ++d) {
      int64_t s = source[d][static_cast<size_t>(index[d])];
      if (s < 0) outside = true;
      base += s * inStrides[d];
    }
    if (outside) {
      copyElements(fillRow, 0, out, row * inner, inner);
    } else {
      for (const Run& run : runs) {
        if (run.in < 0) {
          copyElements(fillRow, 0, out, row * inner + run.out, run.length);
        } else {
          copyElements(x, base + run.in, out, row * inner + run.out, run.length);
        }
      }
    }
    for (int64_t d = rank - 1; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  ctx.outputs[0] = std::move(out);
}

void pad(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::string mode = ctx.node.attrString("mode", "constant");
  std::vector<int64_t> given = intsOf(ctx.in(1));
  const Array* constant = ctx.optIn(2);
  std::vector<int64_t> pads = given;
  if (const Array* axesInput = ctx.opset >= 18 ? ctx.optIn(3) : nullptr) {
    std::vector<int64_t> axes = intsOf(*axesInput);
    if (given.size() != 2 * axes.size()) ctx.fail("pads must have two entries per axis in axes");
    pads.assign(static_cast<size_t>(2 * x.rank()), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t d = normalizeAxis(axes[i], x.rank());
      pads[d] = given[i];
      pads[d + x.rank()] = given[i + axes.size()];
    }
  }
  padWith(ctx, x, pads, mode, constant, 0.0);
}

void padAttributes(KernelContext& ctx) {
  padWith(ctx, ctx.in(0), ctx.node.attrInts("pads"), ctx.node.attrString("mode", "constant"),
          nullptr, ctx.node.attrFloat("value", 0.0f));
}

void shapeOp(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t rank = x.rank();
  int64_t start = ctx.opset >= 15 ? ctx.node.attrInt("start", 0) : 0;
  int64_t end = ctx.opset >= 15 ? ctx.node.attrInt("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x.shape()[d]);
  ctx.outputs[0] = int64Vector(dims);
}

}  // namespace

// Index-driven ops have their own file (ops/indexing.cpp) and join this group.
void registerIndexingKernels(KernelRegistry& r);

void registerShapeKernels(KernelRegistry& r) {
  r.add({
      {"Concat", 4, concat},
      {"Split", 2, split},
      {"Slice", 1, sliceAttributes},
      {"Slice", 10, slice},
      {"Gather", 1, gather},
      {"GatherElements", 11, gatherElements},
      {"Reshape", 5, reshape},
      {"Flatten", 1, flatten},
      {"Transpose", 1, transpose},
      {"Squeeze", 1, squeeze},
      {"Unsqueeze", 1, unsqueeze},
      {"Expand", 8, expand},
      {"Tile", 6, tile},
      {"Pad", 2, padAttributes},
      {"Pad", 11, pad},
      {"Shape", 1, shapeOp},
  });
  registerIndexingKernels(r);
  r.add("", "Size", 1, [](KernelContext& ctx) {
    ctx.outputs[0] = Array::scalar(DataType::Int64, ctx.in(0).numel());
  });
  r.add("", "Identity", 1, [](KernelContext& ctx) { ctx.outputs[0] = ctx.in(0); });
}

}  // namespace qopt::interp
