// Index-driven data movement that exporters emit around detection and sequence models:
// GatherND, ScatterND, ScatterElements (and its opset 9 form Scatter), Compress,
// ReverseSequence, DepthToSpace and SpaceToDepth. Registered with the shape group.
#include <algorithm>

#include "ArrayOps.h"
#include "KernelSupport.h"

namespace qopt::interp {

namespace {

int64_t wrapIndex(KernelContext& ctx, int64_t index, int64_t dim) {
  int64_t i = index < 0 ? index + dim : index;
  if (i < 0 || i >= dim) {
    ctx.fail(fmt::format("index {} is out of range for a dimension of {}", index, dim));
  }
  return i;
}

void gatherND(KernelContext& ctx) {
  const Array& data = ctx.in(0);
  const Array& indices = ctx.in(1);
  int64_t batchDims = ctx.node.attrInt("batch_dims", 0);
  if (indices.rank() < 1) ctx.fail("indices must have rank 1 or more");
  int64_t k = indices.shape().back();
  if (batchDims < 0 || batchDims + k > data.rank() || batchDims >= indices.rank()) {
    ctx.fail("batch_dims and the index depth do not fit the data rank");
  }
  for (int64_t d = 0; d < batchDims; ++d) {
    if (data.shape()[d] != indices.shape()[d])
      ctx.fail("batch dimensions of data and indices differ");
  }
  Shape shape(indices.shape().begin(), indices.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + batchDims + k, data.shape().end());
  Array out(data.dataType(), shape);
  int64_t batches = product(data.shape(), 0, static_cast<size_t>(batchDims));
  int64_t perBatch =
      product(indices.shape(), static_cast<size_t>(batchDims), indices.shape().size() - 1);
  int64_t slice = product(data.shape(), static_cast<size_t>(batchDims + k));
  int64_t batchStride = product(data.shape(), static_cast<size_t>(batchDims));
  std::vector<int64_t> strides = contiguousStrides(data.shape());
  std::vector<int64_t> idx = indices.toInt64Vector();
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t j = 0; j < perBatch; ++j) {
      const int64_t* tuple = idx.data() + (b * perBatch + j) * k;
      int64_t offset = b * batchStride;
      for (int64_t t = 0; t < k; ++t) {
        offset += wrapIndex(ctx, tuple[t], data.shape()[batchDims + t]) * strides[batchDims + t];
      }
      copyElements(data, offset, out, (b * perBatch + j) * slice, slice);
    }
  }
  ctx.outputs[0] = std::move(out);
}

enum class ScatterReduction { None, Add, Mul, Max, Min };

ScatterReduction reductionOf(KernelContext& ctx) {
  return enumAttr<ScatterReduction>(ctx, "reduction", "none", {"none", "add", "mul", "max", "min"});
}

/// out[dst] (op)= updates[src] for one element.
void scatterOne(const Array& updates, int64_t src, Array& out, int64_t dst, ScatterReduction r) {
  if (r == ScatterReduction::None) {
    copyElements(updates, src, out, dst, 1);
    return;
  }
  dispatchNumeric(out.dataType(), [&]<class T>(TypeTag<T>) {
    auto a = toCompute(out.data<T>()[dst]);
    auto b = toCompute(updates.data<T>()[src]);
    decltype(a) v;
    switch (r) {
      case ScatterReduction::Add:
        v = static_cast<decltype(a)>(a + b);
        break;
      case ScatterReduction::Mul:
        v = static_cast<decltype(a)>(a * b);
        break;
      case ScatterReduction::Max:
        v = std::max(a, b);
        break;
      default:
        v = std::min(a, b);
        break;
    }
    out.data<T>()[dst] = fromCompute<T>(v);
  });
}

Array copyOf(const Array& a) {
  Array out(a.dataType(), a.shape());
  copyElements(a, 0, out, 0, a.numel());
  return out;
}

void scatterND(KernelContext& ctx) {
  const Array& data = ctx.in(0);
  const Array& indices = ctx.in(1);
  const Array& updates = ctx.in(2);
  ScatterReduction r = reductionOf(ctx);
  if (indices.rank() < 1) ctx.fail("indices must have rank 1 or more");
  int64_t k = indices.shape().back();
  if (k > data.rank()) ctx.fail("the index depth exceeds the data rank");
  if (updates.dataType() != data.dataType()) ctx.fail("updates must have the data's type");
  Array out = copyOf(data);
  int64_t count = product(indices.shape(), 0, indices.shape().size() - 1);
  int64_t slice = product(data.shape(), static_cast<size_t>(k));
  if (updates.numel() != count * slice) ctx.fail("updates do not match indices and data");
  std::vector<int64_t> strides = contiguousStrides(data.shape());
  std::vector<int64_t> idx = indices.toInt64Vector();
  for (int64_t j = 0; j < count; ++j) {
    int64_t offset = 0;
    for (int64_t t = 0; t < k; ++t) {
      offset += wrapIndex(ctx, idx[static_cast<size_t>(j * k + t)], data.shape()[t]) * strides[t];
    }
    if (r == ScatterReduction::None) {
      copyElements(updates, j * slice, out, offset, slice);
    } else {
      for (int64_t e = 0; e < slice; ++e) scatterOne(updates, j * slice + e, out, offset + e, r);
    }
  }
  ctx.outputs[0] = std::move(out);
}

void scatterElements(KernelContext& ctx) {
  const Array& data = ctx.in(0);
  const Array& indices = ctx.in(1);
  const Array& updates = ctx.in(2);
  ScatterReduction r = ctx.node.opType() == "Scatter" ? ScatterReduction::None : reductionOf(ctx);
  int64_t rank = data.rank();
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), rank);
  if (indices.shape() != updates.shape() || indices.rank() != rank) {
    ctx.fail("indices and updates must have one shape of the data's rank");
  }
  if (updates.dataType() != data.dataType()) ctx.fail("updates must have the data's type");
  Array out = copyOf(data);
  std::vector<int64_t> strides = contiguousStrides(data.shape());
  std::vector<int64_t> idx = indices.toInt64Vector();
  std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t p = d == axis ? wrapIndex(ctx, idx[static_cast<size_t>(i)], data.shape()[d]) : pos[d];
      if (p >= data.shape()[d]) ctx.fail("indices exceed the data shape");
      offset += p * strides[d];
    }
    scatterOne(updates, i, out, offset, r);
    nextIndex(pos, indices.shape());
  }
  ctx.outputs[0] = std::move(out);
}

void compress(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& condition = ctx.in(1);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < condition.numel(); ++i) {
    if (condition.getDouble(i) != 0) keep.push_back(i);
  }
  Array input = x;
  int64_t axis = 0;
  if (ctx.node.hasAttr("axis")) {
    axis = normalizeAxis(ctx.node.attrInt("axis", 0), x.rank());
  } else {
    input = x.reshaped({x.numel()});
  }
  int64_t dim = input.shape()[axis];
  while (!keep.empty() && keep.back() >= dim) keep.pop_back();  // longer conditions are allowed
  Shape shape = input.shape();
  shape[axis] = static_cast<int64_t>(keep.size());
  Array out(x.dataType(), shape);
  int64_t outer = product(input.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(input.shape(), static_cast<size_t>(axis) + 1);
  int64_t n = static_cast<int64_t>(keep.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      copyElements(input, (o * dim + keep[j]) * inner, out, (o * n + j) * inner, inner);
    }
  }
  ctx.outputs[0] = std::move(out);
}

void reverseSequence(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> lens = ctx.in(1).toInt64Vector();
  int64_t batchAxis = ctx.node.attrInt("batch_axis", 1);
  int64_t timeAxis = ctx.node.attrInt("time_axis", 0);
  if (x.rank() < 2 || (batchAxis != 0 && batchAxis != 1) || timeAxis != 1 - batchAxis) {
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order");
  }
  int64_t batch = x.shape()[batchAxis];
  int64_t time = x.shape()[timeAxis];
  if (static_cast<int64_t>(lens.size()) != batch)
    ctx.fail("sequence_lens must have one entry per batch");
  int64_t inner = product(x.shape(), 2);
  Array out = copyOf(x);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = std::clamp<int64_t>(lens[static_cast<size_t>(b)], 0, time);
    for (int64_t t = 0; t < len; ++t) {
      auto at = [&](int64_t tt) {
        return (batchAxis == 0 ? b * time + tt : tt * batch + b) * inner;
      };
      copyElements(x, at(len - 1 - t), out, at(t), inner);
    }
  }
  ctx.outputs[0] = std::move(out);
}

/// DepthToSpace and SpaceToDepth are a reshape, a transpose and a reshape.
void depthToSpace(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t b = ctx.node.attrInt("blocksize", 0);
  if (x.rank() != 4 || b <= 0 || x.shape()[1] % (b * b) != 0) {
    ctx.fail("expects NCHW input with C divisible by blocksize^2");
  }
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  bool crd = ctx.node.attrString("mode", "DCR") == "CRD";
  Array view =
      crd ? x.reshaped({n, c / (b * b), b, b, h, w}) : x.reshaped({n, b, b, c / (b * b), h, w});
  std::vector<int64_t> perm =
      crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  ctx.outputs[0] = transposeArray(view, perm, ctx.pool).reshaped({n, c / (b * b), h * b, w * b});
}

void spaceToDepth(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t b = ctx.node.attrInt("blocksize", 0);
  if (x.rank() != 4 || b <= 0 || x.shape()[2] % b != 0 || x.shape()[3] % b != 0) {
    ctx.fail("expects NCHW input with H and W divisible by blocksize");
  }
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  Array view = x.reshaped({n, c, h / b, b, w / b, b});
  ctx.outputs[0] =
      transposeArray(view, {0, 3, 5, 1, 2, 4}, ctx.pool).reshaped({n, c * b * b, h / b, w / b});
}

}  // namespace

// Called from registerShapeKernels.
void registerIndexingKernels(KernelRegistry& r) {
  r.add({
      {"GatherND", 11, gatherND},
      {"ScatterND", 11, scatterND},
      {"ScatterElements", 11, scatterElements},
      {"Scatter", 9, scatterElements},
      {"Compress", 9, compress},
      {"ReverseSequence", 10, reverseSequence},
      {"DepthToSpace", 1, depthToSpace},
      {"SpaceToDepth", 1, spaceToDepth},
  });
}

}  // namespace qopt::interp
