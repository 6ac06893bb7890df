// Sampling kernels: GridSample (linear, nearest and cubic sampling at normalized positions),
// RoiAlign (bilinear pooling over regions of interest) and MaxUnpool (scattering MaxPool's
// maxima back to their indices).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "KernelSupport.h"
#include "ThreadPool.h"

namespace qopt::interp {

namespace {

// ---------------------------------------------------------------------------------------------
// GridSample

enum class GridMode { Linear, Nearest, Cubic };
enum class GridPadding { Zeros, Border, Reflection };

// Reflects x off lo and hi until it lies in [lo, hi]. An axis of one pixel with aligned corners
// has lo == hi: every position reflects onto that pixel.
template <class C>
C reflect(C x, C lo, C hi) {
  const C range = hi - lo;
  if (!(range > 0)) return lo;
  if (x >= lo && x <= hi) return x;
  const bool below = x < lo;
  const C dx = below ? lo - x : x - hi;
  const C flips = std::floor(dx / range);
  const C rest = dx - flips * range;
  const bool even = std::fmod(flips, C(2)) == 0;
  return std::clamp(below == even ? lo + rest : hi - rest, lo, hi);
}

// Keys' cubic convolution weights (a = -0.75, as PyTorch and ONNX Runtime) of the taps at
// floor(x) - 1 ... floor(x) + 2 for t = x - floor(x).
template <class C>
void cubicWeights(C t, C w[4]) {
  constexpr C a = C(-0.75);
  auto far = [&](C d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < d < 2
  auto near = [&](C d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // d <= 1
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// One spatial axis of GridSample's input.
template <class C>
struct GridAxis {
  int64_t size;
  bool alignCorners;
  C lo, hi;  // the extent the normalized range maps to: pixel centres or pixel edges

  GridAxis(int64_t n, bool align)
      : size(n),
        alignCorners(align),
        lo(align ? C(0) : C(-0.5)),
        hi(align ? static_cast<C>(n - 1) : static_cast<C>(n) - C(0.5)) {}

  C denormalize(C g) const {
    return alignCorners ? (g + 1) / 2 * static_cast<C>(size - 1)
                        : ((g + 1) * static_cast<C>(size) - 1) / 2;
  }

  // The pixel a tap at integer position i reads, or -1 for the zero padding.
  int64_t resolve(int64_t i, GridPadding padding) const {
    if (i >= 0 && i < size) return i;
    switch (padding) {
      case GridPadding::Zeros:
        return -1;
      case GridPadding::Border:
        return std::clamp<int64_t>(i, 0, size - 1);
      case GridPadding::Reflection:
        break;
    }
    const auto r = static_cast<int64_t>(reflect(static_cast<C>(i), lo, hi));
    return std::clamp<int64_t>(r, 0, size - 1);
  }
};

// The taps of one axis for the grid value g: pixel indices (-1 reads zero) and weights. Returns
// the tap count, 0 when the position is NaN.
//
// The padding mode resolves each tap, as PyTorch and ONNX Runtime do. (ONNX's reference clamps
// the position itself to the border first, which changes what a cubic window near the edge
// reads; the node tests do not tell the two apart.)
template <class C>
int axisTaps(const GridAxis<C>& axis, C g, GridMode mode, GridPadding padding, int64_t index[4],
             C weight[4]) {
  C x = axis.denormalize(g);
  if (mode == GridMode::Nearest) x = std::nearbyint(x);  // halfway rounds to the even index
  // Far-out positions are brought near the extent without changing what they sample, so that
  // the tap indices stay small: the border extension is constant beyond the edge, the
  // reflection extension mirror-symmetric about lo and hi, and zeros read nothing this far out.
  if (padding == GridPadding::Border) {
    x = std::clamp(x, C(-3), static_cast<C>(axis.size + 2));
  } else if (padding == GridPadding::Reflection && (x < axis.lo || x > axis.hi)) {
    x = reflect(x, axis.lo, axis.hi);
  }
  if (std::isnan(x)) return 0;
  const int taps = mode == GridMode::Nearest ? 1 : mode == GridMode::Linear ? 2 : 4;
  if (x < C(-4) || x > static_cast<C>(axis.size + 3)) {
    std::fill_n(index, taps, -1);
    std::fill_n(weight, taps, C(0));
    return taps;
  }
  if (mode == GridMode::Nearest) {
    index[0] = axis.resolve(static_cast<int64_t>(x), padding);
    weight[0] = 1;
    return 1;
  }
  const C base = std::floor(x);
  const C t = x - base;
  const auto i0 = static_cast<int64_t>(base);
  if (mode == GridMode::Linear) {
    index[0] = axis.resolve(i0, padding);
    index[1] = axis.resolve(i0 + 1, padding);
    weight[0] = 1 - t;
    weight[1] = t;
    return 2;
  }
  cubicWeights(t, weight);
  for (int k = 0; k < 4; ++k) index[k] = axis.resolve(i0 - 1 + k, padding);
  return 4;
}

template <class C>
struct GridTap {
  int64_t offset;  // within one input plane
  C weight;
};

// The taps of one sample: every combination of the axes' taps (counts[d] of them on axis d, at
// index/weight[4 * d ...]) that reads a pixel, with the product of the axes' weights.
template <class C>
void combineTaps(const std::vector<int64_t>& index, const std::vector<C>& weight,
                 const std::vector<int>& counts, const std::vector<int64_t>& strides,
                 std::vector<int>& k, std::vector<GridTap<C>>& taps) {
  taps.clear();
  std::fill(k.begin(), k.end(), 0);
  for (;;) {
    int64_t offset = 0;
    C w = 1;
    bool inside = true;
    for (size_t d = 0; d < k.size(); ++d) {
      const size_t j = 4 * d + static_cast<size_t>(k[d]);
      inside = inside && index[j] >= 0;
      offset += index[j] * strides[d];
      w *= weight[j];
    }
    if (inside) taps.push_back({offset, w});
    size_t d = k.size();
    while (d-- > 0) {
      if (++k[d] < counts[d]) break;
      k[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

void gridSample(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& grid = ctx.in(1);
  // Opset 16 knows only 2-D sampling and names the modes after it; opset 20 generalizes both.
  const bool nd = ctx.opset >= 20;
  const GridMode mode =
      nd ? enumAttr<GridMode>(ctx, "mode", "linear", {"linear", "nearest", "cubic"})
         : enumAttr<GridMode>(ctx, "mode", "bilinear", {"bilinear", "nearest", "bicubic"});
  const GridPadding padding =
      enumAttr<GridPadding>(ctx, "padding_mode", "zeros", {"zeros", "border", "reflection"});
  const int64_t align = ctx.node.attrInt("align_corners", 0);
  if (align != 0 && align != 1) {
    ctx.fail(fmt::format("align_corners must be 0 or 1, got {}", align));
  }
  if (nd ? x.rank() < 3 : x.rank() != 4) {
    ctx.fail(fmt::format("X must be {} (N, C, spatial...), got shape {}",
                         nd ? "of rank 3 or more" : "4-D", shapeString(x.shape())));
  }
  const int64_t r = x.rank() - 2;
  if (grid.rank() != x.rank() || grid.dim(0) != x.dim(0) || grid.dim(-1) != r) {
    ctx.fail(fmt::format("grid must have shape [{}, out spatial..., {}] for X of shape {}, got {}",
                         x.dim(0), r, shapeString(x.shape()), shapeString(grid.shape())));
  }
  Shape outShape = {x.dim(0), x.dim(1)};
  outShape.insert(outShape.end(), grid.shape().begin() + 1, grid.shape().end() - 1);
  const int64_t inPlane = product(x.shape(), 2);
  const int64_t outPlane = product(outShape, 2);
  if (inPlane == 0 && x.dim(1) * outPlane > 0) ctx.fail("X has an empty spatial dim");
  Array y(x.dataType(), outShape);
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    using C = ComputeT<T>;
    std::vector<C> g(static_cast<size_t>(grid.numel()));
    dispatchTypes(
        FloatTypes{}, grid.dataType(),
        [&]<class G>(TypeTag<G>) {
          const G* gp = grid.data<G>();
          for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<C>(toCompute(gp[i]));
        },
        [&] {
          ctx.fail(fmt::format("grid must be a floating point tensor, got {}",
                               dataTypeName(grid.dataType())));
        });
    std::vector<GridAxis<C>> axes;
    for (int64_t d = 0; d < r; ++d) axes.emplace_back(x.dim(2 + d), align == 1);
    std::vector<int64_t> strides(static_cast<size_t>(r), 1);
    for (int64_t d = r - 1; d > 0; --d) strides[d - 1] = strides[d] * x.dim(2 + d);
    const int64_t batch = x.dim(0), channels = x.dim(1);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, channels));
    parallelFor(ctx.pool, batch * outPlane, grain, [&](int64_t p0, int64_t p1) {
      std::vector<int64_t> index(static_cast<size_t>(4 * r));
      std::vector<C> weight(static_cast<size_t>(4 * r));
      std::vector<int> counts(static_cast<size_t>(r));
      std::vector<int> k(static_cast<size_t>(r));
      std::vector<GridTap<C>> taps;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / outPlane, o = p % outPlane;
        // grid[..., 0] is the innermost (x, width) axis: the components run opposite to X's dims.
        const C* pos = g.data() + p * r;
        bool nan = false;
        for (int64_t d = 0; d < r; ++d) {
          const size_t s = static_cast<size_t>(d);
          counts[s] =
              axisTaps(axes[s], pos[r - 1 - d], mode, padding, &index[4 * s], &weight[4 * s]);
          nan = nan || counts[s] == 0;
        }
        taps.clear();
        if (!nan) combineTaps(index, weight, counts, strides, k, taps);
        for (int64_t c = 0; c < channels; ++c) {
          const T* plane = xp + (n * channels + c) * inPlane;
          // A NaN position has no pixel to read: it samples NaN, whatever the padding.
          C acc = nan ? std::numeric_limits<C>::quiet_NaN() : C(0);
          for (const GridTap<C>& tap : taps) acc += tap.weight * toCompute(plane[tap.offset]);
          yp[(n * channels + c) * outPlane + o] = fromCompute<T>(acc);
        }
      }
    });
  });
  ctx.outputs[0] = std::move(y);
}

// ---------------------------------------------------------------------------------------------
// RoiAlign

enum class RoiMode { Avg, Max };
enum class RoiCoordinates { HalfPixel, OutputHalfPixel };

// One bilinear sample: the four pixels around it and their weights (all zero for a sample
// outside the feature map).
template <class C>
struct RoiSample {
  int64_t pos[4];
  C w[4];
};

template <class C>
RoiSample<C> roiSample(C y, C x, int64_t height, int64_t width) {
  RoiSample<C> s{};
  // A sample up to one pixel outside still reads the edge pixels (as Caffe2's RoIAlign, which
  // the ONNX operator follows); one further out reads nothing. NaN fails the test too.
  if (!(y >= C(-1) && y <= static_cast<C>(height) && x >= C(-1) && x <= static_cast<C>(width))) {
    return s;
  }
  y = std::max(y, C(0));
  x = std::max(x, C(0));
  auto yLow = static_cast<int64_t>(y), xLow = static_cast<int64_t>(x);
  int64_t yHigh = yLow + 1, xHigh = xLow + 1;
  if (yLow >= height - 1) {
    yLow = yHigh = height - 1;
    y = static_cast<C>(yLow);
  }
  if (xLow >= width - 1) {
    xLow = xHigh = width - 1;
    x = static_cast<C>(xLow);
  }
  const C ly = y - static_cast<C>(yLow), lx = x - static_cast<C>(xLow);
  const C hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = yLow * width + xLow;
  s.pos[1] = yLow * width + xHigh;
  s.pos[2] = yHigh * width + xLow;
  s.pos[3] = yHigh * width + xHigh;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

// Sampling points per bin along one axis: sampling_ratio, else ceil(roi extent / bins).
int64_t roiGridSize(const KernelContext& ctx, int64_t samplingRatio, double extent, int64_t bins,
                    int64_t roi) {
  if (samplingRatio > 0) return samplingRatio;
  const double n = std::ceil(extent / static_cast<double>(bins));
  if (n > double{1 << 12}) {
    ctx.fail(
        fmt::format("roi {} needs {} sampling points per bin side; set sampling_ratio", roi, n));
  }
  // An inverted region (possible with half_pixel) has no sampling points.
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

void roiAlign(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& rois = ctx.in(1);
  const Array& batchIndices = ctx.in(2);
  const RoiMode mode = enumAttr<RoiMode>(ctx, "mode", "avg", {"avg", "max"});
  // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel.
  const bool halfPixel =
      ctx.opset >= 16 &&
      enumAttr<RoiCoordinates>(ctx, "coordinate_transformation_mode", "half_pixel",
                               {"half_pixel", "output_half_pixel"}) == RoiCoordinates::HalfPixel;
  const int64_t outH = ctx.node.attrInt("output_height", 1);
  const int64_t outW = ctx.node.attrInt("output_width", 1);
  const int64_t samplingRatio = ctx.node.attrInt("sampling_ratio", 0);
  const float spatialScale = ctx.node.attrFloat("spatial_scale", 1.0f);
  if (outH <= 0 || outW <= 0) {
    ctx.fail(
        fmt::format("output_height and output_width must be positive, got {} and {}", outH, outW));
  }
  if (samplingRatio < 0) {
    ctx.fail(fmt::format("sampling_ratio must not be negative, got {}", samplingRatio));
  }
  if (x.rank() != 4) {
    ctx.fail(fmt::format("X must be 4-D (N, C, H, W), got shape {}", shapeString(x.shape())));
  }
  if (rois.rank() != 2 || rois.dim(1) != 4) {
    ctx.fail(fmt::format("rois must have shape [num_rois, 4], got {}", shapeString(rois.shape())));
  }
  const int64_t numRois = rois.dim(0);
  if (batchIndices.rank() != 1 || batchIndices.dim(0) != numRois) {
    ctx.fail(fmt::format("batch_indices must have shape [{}], got {}", numRois,
                         shapeString(batchIndices.shape())));
  }
  if (rois.dataType() != x.dataType()) {
    ctx.fail(fmt::format("rois must have X's type {}, got {}", dataTypeName(x.dataType()),
                         dataTypeName(rois.dataType())));
  }
  if (batchIndices.dataType() != DataType::Int64) {
    ctx.fail(
        fmt::format("batch_indices must be int64, got {}", dataTypeName(batchIndices.dataType())));
  }
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t* bi = batchIndices.data<int64_t>();
  for (int64_t i = 0; i < numRois; ++i) {
    if (bi[i] < 0 || bi[i] >= batch) {
      ctx.fail(fmt::format("batch_indices[{}] = {} is outside [0, {})", i, bi[i], batch));
    }
  }
  if (numRois > 0 && channels > 0 && height * width == 0) ctx.fail("X has an empty spatial dim");
  Array y(x.dataType(), {numRois, channels, outH, outW});
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    using C = ComputeT<T>;
    const T* xp = x.data<T>();
    const T* rp = rois.data<T>();
    T* yp = y.data<T>();
    const int64_t plane = height * width;
    // Regions are validated up front: a failure inside the parallel loop would name no roi.
    struct Region {
      C startH, startW, binH, binW;
      int64_t gridH, gridW;
    };
    std::vector<Region> regions;
    for (int64_t roi = 0; roi < numRois; ++roi) {
      const C offset = halfPixel ? C(0.5) : C(0);
      C box[4];
      for (int j = 0; j < 4; ++j) {
        box[j] = toCompute(rp[roi * 4 + j]) * static_cast<C>(spatialScale) - offset;
        if (!std::isfinite(box[j])) {
          ctx.fail(fmt::format("roi {} has a non-finite coordinate", roi));
        }
      }
      C roiW = box[2] - box[0], roiH = box[3] - box[1];
      if (!halfPixel) {  // the legacy mode keeps regions at least one pixel wide
        roiW = std::max(roiW, C(1));
        roiH = std::max(roiH, C(1));
      }
      regions.push_back({box[1], box[0], roiH / static_cast<C>(outH), roiW / static_cast<C>(outW),
                         roiGridSize(ctx, samplingRatio, static_cast<double>(roiH), outH, roi),
                         roiGridSize(ctx, samplingRatio, static_cast<double>(roiW), outW, roi)});
    }
    parallelFor(ctx.pool, numRois, 1, [&](int64_t r0, int64_t r1) {
      std::vector<RoiSample<C>> samples;
      for (int64_t roi = r0; roi < r1; ++roi) {
        const Region& rg = regions[static_cast<size_t>(roi)];
        const C count = static_cast<C>(std::max<int64_t>(rg.gridH * rg.gridW, 1));
        const T* image = xp + bi[roi] * channels * plane;
        for (int64_t ph = 0; ph < outH; ++ph) {
          for (int64_t pw = 0; pw < outW; ++pw) {
            samples.clear();
            for (int64_t iy = 0; iy < rg.gridH; ++iy) {
              const C sy = rg.startH + static_cast<C>(ph) * rg.binH +
                           (static_cast<C>(iy) + C(0.5)) * rg.binH / static_cast<C>(rg.gridH);
              for (int64_t ix = 0; ix < rg.gridW; ++ix) {
                const C sx = rg.startW + static_cast<C>(pw) * rg.binW +
                             (static_cast<C>(ix) + C(0.5)) * rg.binW / static_cast<C>(rg.gridW);
                samples.push_back(roiSample(sy, sx, height, width));
              }
            }
            for (int64_t c = 0; c < channels; ++c) {
              const T* xs = image + c * plane;
              C value = 0;
              bool first = true;
              for (const RoiSample<C>& s : samples) {
                if (mode == RoiMode::Avg) {
                  for (int j = 0; j < 4; ++j) value += s.w[j] * toCompute(xs[s.pos[j]]);
                } else {
                  // ONNX Runtime and ONNX's reference take the largest weighted corner of each
                  // sample, not the largest interpolated value; models exported for them expect
                  // this.
                  C best = s.w[0] * toCompute(xs[s.pos[0]]);
                  for (int j = 1; j < 4; ++j)
                    best = std::max(best, s.w[j] * toCompute(xs[s.pos[j]]));
                  value = first ? best : std::max(value, best);
                  first = false;
                }
              }
              if (mode == RoiMode::Avg) value /= count;
              yp[((roi * channels + c) * outH + ph) * outW + pw] = fromCompute<T>(value);
            }
          }
        }
      }
    });
  });
  ctx.outputs[0] = std::move(y);
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool

// The output shape without output_shape: the input size MaxPool would have pooled to X's size.
Shape unpooledShape(const KernelContext& ctx, const Shape& x) {
  const size_t spatial = x.size() - 2;
  const std::vector<int64_t> kernel = ctx.node.attrInts("kernel_shape");
  const std::vector<int64_t> strides =
      ctx.node.attrInts("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads = ctx.node.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  if (kernel.size() != spatial) {
    ctx.fail(fmt::format("kernel_shape must have {} values (one per spatial axis), got {}", spatial,
                         kernel.size()));
  }
  if (strides.size() != spatial) {
    ctx.fail(fmt::format("strides must have {} values, got {}", spatial, strides.size()));
  }
  if (pads.size() != 2 * spatial) {
    ctx.fail(fmt::format("pads must have {} values, got {}", 2 * spatial, pads.size()));
  }
  Shape out = {x[0], x[1]};
  for (size_t a = 0; a < spatial; ++a) {
    if (kernel[a] <= 0 || strides[a] <= 0) {
      ctx.fail(fmt::format("kernel_shape and strides must be positive (axis {})", a));
    }
    if (pads[a] < 0 || pads[a + spatial] < 0) {
      ctx.fail(fmt::format("pads must not be negative (axis {})", a));
    }
    const int64_t dim = (x[a + 2] - 1) * strides[a] - pads[a] - pads[a + spatial] + kernel[a];
    if (x[a + 2] > 0 && dim <= 0) {
      ctx.fail(fmt::format("the unpooled size of spatial axis {} is {}: the pads are too large", a,
                           dim));
    }
    out.push_back(x[a + 2] == 0 ? 0 : dim);
  }
  return out;
}

void maxUnpool(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& indices = ctx.in(1);
  const Array* outputShape = ctx.optIn(2);
  if (x.rank() < 3) {
    ctx.fail(fmt::format("X must have rank 3 or more (N, C, spatial...), got shape {}",
                         shapeString(x.shape())));
  }
  if (indices.dataType() != DataType::Int64) {
    ctx.fail(fmt::format("I must be int64, got {}", dataTypeName(indices.dataType())));
  }
  if (indices.shape() != x.shape()) {
    ctx.fail(fmt::format("I must have X's shape {}, got {}", shapeString(x.shape()),
                         shapeString(indices.shape())));
  }
  if (!ctx.node.hasAttr("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  // The attributes are checked even when output_shape makes them redundant.
  Shape shape = unpooledShape(ctx, x.shape());
  if (outputShape != nullptr) {
    if (outputShape->dataType() != DataType::Int64 || outputShape->rank() != 1 ||
        outputShape->numel() != x.rank()) {
      ctx.fail(fmt::format("output_shape must be a 1-D int64 tensor of {} values, got {} {}",
                           x.rank(), dataTypeName(outputShape->dataType()),
                           shapeString(outputShape->shape())));
    }
    shape = outputShape->toInt64Vector();
    if (shape[0] != x.dim(0) || shape[1] != x.dim(1)) {
      ctx.fail(fmt::format("output_shape {} must keep X's batch and channels ({}, {})",
                           shapeString(shape), x.dim(0), x.dim(1)));
    }
    for (int64_t d : shape) {
      if (d < 0) ctx.fail(fmt::format("output_shape {} has a negative dim", shapeString(shape)));
    }
  }
  Array y = Array::zeros(x.dataType(), shape);
  const int64_t size = y.numel();
  const int64_t* ip = indices.data<int64_t>();
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (ip[i] < 0 || ip[i] >= size) {
        ctx.fail(fmt::format("index {} (element {} of I) is outside the output of shape {}", ip[i],
                             i, shapeString(shape)));
      }
      yp[ip[i]] = xp[i];
    }
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void registerSamplingKernels(KernelRegistry& registry) {
  registry.add({
      {"GridSample", 16, gridSample},
      {"RoiAlign", 10, roiAlign},
      {"MaxUnpool", 9, maxUnpool},
  });
}

}  // namespace qopt::interp
