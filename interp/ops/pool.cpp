// Pooling kernels: MaxPool (with Indices), AveragePool, GlobalAveragePool and GlobalMaxPool.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "KernelSupport.h"
#include "ThreadPool.h"
#include "VectorClones.h"
#include "WindowGeometry.h"

namespace qopt::interp {

namespace {

// Walks the taps of one output position: fn(inputOffset, inside) for every kernel offset, where
// `inside` says whether the tap lies in the input (not in the padding) and `inPaddedExtent`
// whether it lies within [-padsBegin, input + padsEnd) on every axis.
struct WindowWalker {
  const WindowGeometry& g;
  std::vector<int64_t> start;  // first tap's input coordinate per axis
  std::vector<int64_t> k;

  explicit WindowWalker(const WindowGeometry& geometry)
      : g(geometry),
        start(static_cast<size_t>(geometry.spatialRank)),
        k(static_cast<size_t>(geometry.spatialRank)) {}

  void setOutput(const std::vector<int64_t>& o) {
    for (size_t a = 0; a < start.size(); ++a) start[a] = o[a] * g.strides[a] - g.padsBegin[a];
  }

  template <class Fn>
  void forEachTap(Fn&& fn) {
    std::fill(k.begin(), k.end(), 0);
    const size_t rank = k.size();
    for (;;) {
      int64_t offset = 0;
      bool inside = true, inPadded = true;
      for (size_t a = 0; a < rank; ++a) {
        const int64_t i = start[a] + k[a] * g.dilations[a];
        inside = inside && i >= 0 && i < g.input[a];
        inPadded = inPadded && i >= -g.padsBegin[a] && i < g.input[a] + g.padsEnd[a];
        offset = offset * g.input[a] + i;
      }
      fn(offset, inside, inPadded);
      size_t a = rank;
      while (a-- > 0) {
        if (++k[a] < g.kernel[a]) break;
        k[a] = 0;
      }
      if (a == static_cast<size_t>(-1)) return;
    }
  }
};

// Calls body(plane, outputCoords, outputIndex) for every output position, planes split across
// the pool.
template <class Body>
void forEachOutput(const KernelContext& ctx, int64_t planes, const WindowGeometry& g, Body&& body) {
  const int64_t outSize = g.outputSize();
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, outSize * g.kernelSize()));
  parallelFor(ctx.pool, planes, grain, [&](int64_t p0, int64_t p1) {
    std::vector<int64_t> o(static_cast<size_t>(g.spatialRank));
    WindowWalker walker(g);
    for (int64_t plane = p0; plane < p1; ++plane) {
      std::fill(o.begin(), o.end(), 0);
      for (int64_t j = 0; j < outSize; ++j) {
        walker.setOutput(o);
        body(walker, plane, j);
        for (size_t a = o.size(); a-- > 0;) {
          if (++o[a] < g.output[a]) break;
          o[a] = 0;
        }
      }
    }
  });
}

// Row-major offset -> column-major offset within one plane (MaxPool storage_order = 1).
int64_t columnMajorOffset(int64_t offset, const std::vector<int64_t>& dims) {
  int64_t result = 0, scale = 1;
  std::vector<int64_t> idx(dims.size());
  for (size_t a = dims.size(); a-- > 0;) {
    idx[a] = offset % dims[a];
    offset /= dims[a];
  }
  for (size_t a = 0; a < dims.size(); ++a) {
    result += idx[a] * scale;
    scale *= dims[a];
  }
  return result;
}

// Taps k in [0, kernel) whose coordinate start + k * dilation lies in [lo, hi).
void tapRange(int64_t start, int64_t kernel, int64_t dilation, int64_t lo, int64_t hi,
              int64_t& first, int64_t& last) {
  first = start >= lo ? 0 : (lo - start + dilation - 1) / dilation;
  last = hi - 1 - start < 0 ? 0 : std::min(kernel, (hi - 1 - start) / dilation + 1);
  first = std::min(first, last);
}

// Per output coordinate of one axis: the taps inside the input and, for count_include_pad,
// how many lie inside the padded extent.
struct AxisTaps {
  std::vector<int64_t> first, last, padded;
};

AxisTaps axisTaps(const WindowGeometry& g, size_t a) {
  AxisTaps t;
  for (int64_t o = 0; o < g.output[a]; ++o) {
    const int64_t start = o * g.strides[a] - g.padsBegin[a];
    int64_t first, last, pFirst, pLast;
    tapRange(start, g.kernel[a], g.dilations[a], 0, g.input[a], first, last);
    tapRange(start, g.kernel[a], g.dilations[a], -g.padsBegin[a], g.input[a] + g.padsEnd[a], pFirst,
             pLast);
    t.first.push_back(first);
    t.last.push_back(last);
    t.padded.push_back(pLast - pFirst);
  }
  return t;
}

// 2-D float pooling of one plane (the common case, without the generic window walker).
QOPT_VECTOR_CLONES
void poolPlane2d(const float* __restrict x, float* __restrict y, const WindowGeometry& g,
                 const AxisTaps& rows, const AxisTaps& cols, bool max, bool countPad) {
  const int64_t iw = g.input[1], ow = g.output[1];
  const int64_t sh = g.strides[0], sw = g.strides[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1];
  const int64_t ph = g.padsBegin[0], pw = g.padsBegin[1];
  for (int64_t oy = 0; oy < g.output[0]; ++oy) {
    const size_t ry = static_cast<size_t>(oy);
    const int64_t iy0 = oy * sh - ph;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const size_t rx = static_cast<size_t>(ox);
      const int64_t ix0 = ox * sw - pw;
      float acc = max ? std::numeric_limits<float>::lowest() : 0.0f;
      bool any = false;
      for (int64_t ky = rows.first[ry]; ky < rows.last[ry]; ++ky) {
        const float* xrow = x + (iy0 + ky * dh) * iw + ix0;
        for (int64_t kx = cols.first[rx]; kx < cols.last[rx]; ++kx) {
          const float v = xrow[kx * dw];
          if (max) {
            if (!any || v > acc) acc = v;
            any = true;
          } else {
            acc += v;
          }
        }
      }
      if (max) {
        y[oy * ow + ox] = acc;
      } else {
        const int64_t count =
            countPad ? rows.padded[ry] * cols.padded[rx]
                     : (rows.last[ry] - rows.first[ry]) * (cols.last[rx] - cols.first[rx]);
        y[oy * ow + ox] = count > 0 ? acc / static_cast<float>(count) : 0.0f;
      }
    }
  }
}

void pool2dFloat(const KernelContext& ctx, const Array& x, Array& y, const WindowGeometry& g,
                 bool max, bool countPad) {
  const AxisTaps rows = axisTaps(g, 0), cols = axisTaps(g, 1);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, outSize * g.kernelSize()));
  parallelFor(ctx.pool, planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      poolPlane2d(xp + p * inSize, yp + p * outSize, g, rows, cols, max, countPad);
    }
  });
}

// The window of a MaxPool or AveragePool node: ceil_mode from opset 10 on, dilations from
// `dilationsSince` on.
WindowGeometry poolWindow(const KernelContext& ctx, const Shape& x, int64_t dilationsSince) {
  WindowOptions options;
  options.allowCeilMode = ctx.opset >= 10;
  options.allowDilations = ctx.opset >= dilationsSince;
  return windowGeometry(ctx, x, options);
}

void maxPoolKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const WindowGeometry g = poolWindow(ctx, x.shape(), 10);
  const int64_t storageOrder = ctx.node.attrInt("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1) ctx.fail("storage_order must be 0 or 1");
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const bool wantIndices = ctx.node.output(1) != nullptr && !ctx.node.output(1)->isAbsent();
  Array y(x.dataType(), windowOutputShape(x.shape(), x.dim(1), g));
  Array indices;
  if (wantIndices) indices = Array(DataType::Int64, y.shape());
  if (x.dataType() == DataType::Float && g.spatialRank == 2 && !wantIndices) {
    pool2dFloat(ctx, x, y, g, true, false);
    ctx.outputs[0] = std::move(y);
    return;
  }
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeT<T>;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    int64_t* ip = wantIndices ? indices.data<int64_t>() : nullptr;
    forEachOutput(ctx, planes, g, [&](WindowWalker& walker, int64_t plane, int64_t j) {
      const T* xs = xp + plane * inSize;
      C best = std::numeric_limits<C>::lowest();
      int64_t bestOffset = -1;
      walker.forEachTap([&](int64_t offset, bool inside, bool) {
        if (!inside) return;
        const C v = toCompute(xs[offset]);
        if (bestOffset < 0 || v > best) {
          best = v;
          bestOffset = offset;
        }
      });
      yp[plane * outSize + j] = fromCompute<T>(best);
      if (ip != nullptr) {
        // A window entirely in the padding has no element to point at.
        ip[plane * outSize + j] =
            bestOffset < 0
                ? -1
                : plane * inSize +
                      (storageOrder == 1 ? columnMajorOffset(bestOffset, g.input) : bestOffset);
      }
    });
  };
  dispatchTypes(FloatTypes{} + TypeList<int8_t, uint8_t>{}, x.dataType(), run, [&] {
    ctx.fail(fmt::format("element type {} is not supported", dataTypeName(x.dataType())));
  });
  ctx.outputs[0] = std::move(y);
  if (wantIndices) ctx.outputs[1] = std::move(indices);
}

void averagePoolKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const WindowGeometry g = poolWindow(ctx, x.shape(), 19);
  const bool countPad = ctx.node.attrInt("count_include_pad", 0) != 0;
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  Array y(x.dataType(), windowOutputShape(x.shape(), x.dim(1), g));
  if (x.dataType() == DataType::Float && g.spatialRank == 2) {
    pool2dFloat(ctx, x, y, g, false, countPad);
    ctx.outputs[0] = std::move(y);
    return;
  }
  dispatchFloat(x.dataType(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeT<T>;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    forEachOutput(ctx, planes, g, [&](WindowWalker& walker, int64_t plane, int64_t j) {
      const T* xs = xp + plane * inSize;
      C sum = 0;
      int64_t count = 0;
      walker.forEachTap([&](int64_t offset, bool inside, bool inPadded) {
        if (inside) sum += toCompute(xs[offset]);
        // count_include_pad counts the padding but not the overhang of a ceil_mode window.
        if (countPad ? inPadded : inside) ++count;
      });
      yp[plane * outSize + j] = fromCompute<T>(count > 0 ? sum / static_cast<C>(count) : C(0));
    });
  });
  ctx.outputs[0] = std::move(y);
}

template <bool kMax>
void globalPoolKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (x.rank() < 3)
    ctx.fail(fmt::format("input must have rank >= 3, got {}", shapeString(x.shape())));
  Shape outShape = x.shape();
  std::fill(outShape.begin() + 2, outShape.end(), 1);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = product(x.shape(), 2);
  if (size == 0) ctx.fail("the spatial dims are empty");
  Array y(x.dataType(), outShape);
  dispatchFloat(x.dataType(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeT<T>;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    parallelFor(ctx.pool, planes, std::max<int64_t>(1, 4096 / size), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* xs = xp + p * size;
        if constexpr (kMax) {
          C best = toCompute(xs[0]);
          for (int64_t i = 1; i < size; ++i)
            best = std::max(best, static_cast<C>(toCompute(xs[i])));
          yp[p] = fromCompute<T>(best);
        } else {
          C sum = 0;
          for (int64_t i = 0; i < size; ++i) sum += toCompute(xs[i]);
          yp[p] = fromCompute<T>(sum / static_cast<C>(size));
        }
      }
    });
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void registerPoolKernels(KernelRegistry& registry) {
  registry.add({
      {"MaxPool", 1, maxPoolKernel},
      {"AveragePool", 1, averagePoolKernel},
      {"GlobalAveragePool", 1, globalPoolKernel<false>},
      {"GlobalMaxPool", 1, globalPoolKernel<true>},
  });
}

}  // namespace qopt::interp
