// Resize (opsets 10 to 19) and Upsample (7, 9): nearest, linear and cubic interpolation over any
// set of axes, with the coordinate transformations and nearest-rounding modes exporters emit.
// Coordinates and weights are computed in float with ONNX Runtime's formulas, so that results
// match it to float rounding.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "KernelSupport.h"
#include "ThreadPool.h"

namespace qopt::interp {

namespace {

enum class Mode { Nearest, Linear, Cubic };

enum class CoordinateMode {
  HalfPixel,
  HalfPixelSymmetric,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize,
};

enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct ResizeOptions {
  Mode mode = Mode::Nearest;
  CoordinateMode coordinates = CoordinateMode::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  float cubicA = -0.75f;
  bool excludeOutside = false;
  float extrapolation = 0.0f;
};

Mode modeOf(const KernelContext& ctx) {
  // Upsample-7 spells linear "bilinear".
  if (ctx.node.attrString("mode") == "bilinear") return Mode::Linear;
  return enumAttr<Mode>(ctx, "mode", "nearest", {"nearest", "linear", "cubic"});
}

// The input coordinate that output coordinate `x` maps to on one axis. `resizedLength` is the
// unrounded output length (input * scale) when scales are given, which only align_corners uses,
// as ONNX's reference does; it equals the output length otherwise.
float originalCoordinate(CoordinateMode mode, float x, float scale, int64_t inLength,
                         int64_t outLength, float resizedLength, float roiStart, float roiEnd) {
  const float in = static_cast<float>(inLength), out = static_cast<float>(outLength);
  switch (mode) {
    case CoordinateMode::HalfPixel:
      return (x + 0.5f) / scale - 0.5f;
    case CoordinateMode::HalfPixelSymmetric: {
      const float adjustment = out / (scale * in);
      const float center = in / 2;
      const float offset = center * (1 - adjustment);
      return offset + (x + 0.5f) / scale - 0.5f;
    }
    case CoordinateMode::PytorchHalfPixel:
      return outLength > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CoordinateMode::AlignCorners:
      return resizedLength == 1.0f ? 0.0f : x * (in - 1) / (resizedLength - 1);
    case CoordinateMode::Asymmetric:
      return x / scale;
    case CoordinateMode::TfHalfPixelForNn:
      return (x + 0.5f) / scale;
    case CoordinateMode::TfCropAndResize:
      return outLength > 1 ? roiStart * (in - 1) + (x * (roiEnd - roiStart) * (in - 1)) / (out - 1)
                           : 0.5f * (roiStart + roiEnd) * (in - 1);
  }
  return 0.0f;
}

int64_t nearestIndex(NearestMode mode, float x, bool downsampling) {
  switch (mode) {
    case NearestMode::RoundPreferFloor:
      if (x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f) {
        return static_cast<int64_t>(std::floor(x));
      }
      return static_cast<int64_t>(std::round(x));
    case NearestMode::RoundPreferCeil:
      if (x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f) {
        return static_cast<int64_t>(std::ceil(x));
      }
      return static_cast<int64_t>(std::round(x));
    case NearestMode::Floor:
      return static_cast<int64_t>(std::floor(x));
    case NearestMode::Ceil:
      return static_cast<int64_t>(std::ceil(x));
    case NearestMode::Simple:
      return downsampling ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  }
  return 0;
}

struct Tap {
  int64_t index;
  float weight;
};

// Per output coordinate of one axis: its taps, or none when it falls outside the input
// (tf_crop_and_resize), where the output takes the extrapolation value.
struct AxisTaps {
  int64_t tapsPerCoordinate = 1;
  std::vector<Tap> taps;      // outLength * tapsPerCoordinate
  std::vector<char> outside;  // per output coordinate
};

AxisTaps axisTaps(const ResizeOptions& o, int64_t inLength, int64_t outLength, float scale,
                  float resizedLength, float roiStart, float roiEnd) {
  AxisTaps t;
  t.outside.assign(static_cast<size_t>(outLength), 0);
  const bool identity =
      inLength == outLength && scale == 1.0f && o.coordinates != CoordinateMode::TfCropAndResize;
  if (identity) {
    for (int64_t x = 0; x < outLength; ++x) t.taps.push_back({x, 1.0f});
    return t;
  }
  const float last = static_cast<float>(inLength - 1);
  for (int64_t x = 0; x < outLength; ++x) {
    float in = originalCoordinate(o.coordinates, static_cast<float>(x), scale, inLength, outLength,
                                  resizedLength, roiStart, roiEnd);
    if (o.coordinates == CoordinateMode::TfCropAndResize && (in < 0 || in > last)) {
      t.outside[static_cast<size_t>(x)] = 1;
    }
    switch (o.mode) {
      case Mode::Nearest: {
        t.tapsPerCoordinate = 1;
        const int64_t i = nearestIndex(o.nearest, in, scale < 1.0f);
        t.taps.push_back({std::clamp<int64_t>(i, 0, inLength - 1), 1.0f});
        break;
      }
      case Mode::Linear: {
        t.tapsPerCoordinate = 2;
        in = std::clamp(in, 0.0f, last);
        const int64_t i0 = std::min(static_cast<int64_t>(in), inLength - 1);
        const int64_t i1 = std::min(i0 + 1, inLength - 1);
        float w0 = std::fabs(in - static_cast<float>(i1));
        float w1 = std::fabs(in - static_cast<float>(i0));
        if (i0 == i1) w0 = w1 = 0.5f;
        t.taps.push_back({i0, w0});
        t.taps.push_back({i1, w1});
        break;
      }
      case Mode::Cubic: {
        t.tapsPerCoordinate = 4;
        const float base = std::floor(in);
        const float s = std::fabs(in - base);
        const float a = o.cubicA;
        const float c[4] = {
            ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a,
            ((a + 2) * s - (a + 3)) * s * s + 1,
            ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1,
            ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a,
        };
        const int64_t first = static_cast<int64_t>(base) - 1;
        float sum = 0;
        Tap taps[4];
        for (int j = 0; j < 4; ++j) {
          const int64_t i = first + j;
          const bool inside = i >= 0 && i < inLength;
          taps[j] = {std::clamp<int64_t>(i, 0, inLength - 1),
                     o.excludeOutside && !inside ? 0.0f : c[j]};
          sum += taps[j].weight;
        }
        for (Tap& tap : taps) {
          if (o.excludeOutside && sum != 0.0f) tap.weight /= sum;
          t.taps.push_back(tap);
        }
        break;
      }
    }
  }
  return t;
}

// Evaluates every output element as the weighted sum over the product of its axes' taps.
template <class T>
void interpolate(const KernelContext& ctx, const Array& x, Array& y,
                 const std::vector<AxisTaps>& axes, float extrapolation) {
  const Shape& in = x.shape();
  const Shape& out = y.shape();
  const size_t rank = in.size();
  std::vector<int64_t> inStrides(rank, 1);
  for (size_t a = rank; a-- > 1;) inStrides[a - 1] = inStrides[a] * in[a];
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const int64_t rows = rank > 1 ? product(out, 0, rank - 1) : 1;
  const int64_t width = rank > 0 ? out[rank - 1] : 1;
  parallelFor(ctx.pool, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, width)),
              [&](int64_t r0, int64_t r1) {
                std::vector<int64_t> idx(rank, 0);
                for (int64_t r = r0; r < r1; ++r) {
                  int64_t rest = r;
                  for (size_t a = rank - 1; a-- > 0;) {
                    idx[a] = rest % out[a];
                    rest /= out[a];
                  }
                  bool rowOutside = false;
                  for (size_t a = 0; a + 1 < rank; ++a) {
                    rowOutside = rowOutside || axes[a].outside[static_cast<size_t>(idx[a])];
                  }
                  for (int64_t c = 0; c < width; ++c) {
                    idx[rank - 1] = c;
                    if (rowOutside || axes[rank - 1].outside[static_cast<size_t>(c)]) {
                      yp[r * width + c] = fromCompute<T>(static_cast<ComputeT<T>>(extrapolation));
                      continue;
                    }
                    // Depth-first over the axes' taps.
                    float sum = 0;
                    auto walk = [&](auto&& self, size_t a, int64_t offset, float weight) -> void {
                      if (a == rank) {
                        sum += weight * static_cast<float>(toCompute(xp[offset]));
                        return;
                      }
                      const AxisTaps& t = axes[a];
                      const Tap* taps = t.taps.data() + idx[a] * t.tapsPerCoordinate;
                      for (int64_t j = 0; j < t.tapsPerCoordinate; ++j) {
                        if (taps[j].weight == 0.0f) continue;
                        self(self, a + 1, offset + taps[j].index * inStrides[a],
                             weight * taps[j].weight);
                      }
                    };
                    walk(walk, 0, 0, 1.0f);
                    yp[r * width + c] = fromCompute<T>(static_cast<ComputeT<T>>(sum));
                  }
                }
              });
}

// Nearest without extrapolation: every output element copies one input element, found from one
// precomputed offset per output coordinate and axis (a gather, no weights). Values are copied
// exactly, -0.0 and integers beyond float's precision included.
template <class T>
void gatherNearest(const KernelContext& ctx, const Array& x, Array& y,
                   const std::vector<AxisTaps>& axes) {
  const Shape& in = x.shape();
  const Shape& out = y.shape();
  const size_t rank = in.size();
  std::vector<std::vector<int64_t>> offsets(rank);
  int64_t stride = 1;
  for (size_t a = rank; a-- > 0;) {
    offsets[a].resize(static_cast<size_t>(out[a]));
    for (int64_t o = 0; o < out[a]; ++o) {
      offsets[a][static_cast<size_t>(o)] = axes[a].taps[static_cast<size_t>(o)].index * stride;
    }
    stride *= in[a];
  }
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const int64_t rows = rank > 1 ? product(out, 0, rank - 1) : 1;
  const int64_t width = rank > 0 ? out[rank - 1] : 1;
  const int64_t* last = rank > 0 ? offsets[rank - 1].data() : nullptr;
  parallelFor(ctx.pool, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, width)),
              [&](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r) {
                  int64_t rest = r;
                  int64_t base = 0;
                  for (size_t a = rank - 1; a-- > 0;) {
                    base += offsets[a][static_cast<size_t>(rest % out[a])];
                    rest /= out[a];
                  }
                  T* row = yp + r * width;
                  if (last == nullptr) {
                    row[0] = xp[base];
                    continue;
                  }
                  for (int64_t c = 0; c < width; ++c) row[c] = xp[base + last[c]];
                }
              });
}

bool isGather(const std::vector<AxisTaps>& axes) {
  for (const AxisTaps& t : axes) {
    if (t.tapsPerCoordinate != 1) return false;
    for (size_t i = 0; i < t.taps.size(); ++i) {
      if (t.outside[i] != 0 || t.taps[i].weight != 1.0f) return false;
    }
  }
  return true;
}

// `scalesGiven`: the output size came from scales (not sizes).
void runResize(const KernelContext& ctx, const Array& x, const Shape& outShape,
               const std::vector<float>& scales, bool scalesGiven, const std::vector<float>& roi,
               const ResizeOptions& o) {
  const size_t rank = x.shape().size();
  std::vector<AxisTaps> axes;
  for (size_t a = 0; a < rank; ++a) {
    const float start = roi.empty() ? 0.0f : roi[a];
    const float end = roi.empty() ? 1.0f : roi[a + rank];
    const float resizedLength = scalesGiven ? static_cast<float>(x.shape()[a]) * scales[a]
                                            : static_cast<float>(outShape[a]);
    axes.push_back(axisTaps(o, x.shape()[a], outShape[a], scales[a], resizedLength, start, end));
  }
  Array y(x.dataType(), outShape);
  if (y.numel() > 0) {
    if (x.numel() == 0) ctx.fail("cannot resize an empty tensor to a non-empty one");
    dispatchNumeric(x.dataType(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) {
        if (o.mode != Mode::Nearest) {
          ctx.fail(fmt::format("{} interpolation of {} tensors is not supported",
                               o.mode == Mode::Linear ? "linear" : "cubic",
                               dataTypeName(x.dataType())));
        }
      }
      if (o.mode == Mode::Nearest && isGather(axes)) {
        gatherNearest<T>(ctx, x, y, axes);
      } else {
        interpolate<T>(ctx, x, y, axes, o.extrapolation);
      }
    });
  }
  ctx.outputs[0] = std::move(y);
}

std::vector<float> floatsOf(const Array* a) {
  if (a == nullptr || a->numel() == 0) return {};
  return a->toFloatVector();
}

void resizeKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const size_t rank = x.shape().size();
  ResizeOptions o;
  o.mode = modeOf(ctx);
  std::vector<float> roi, scales;
  std::vector<int64_t> sizes;
  if (ctx.opset < 11) {
    // Resize-10: (X, scales), asymmetric coordinates, ONNX Runtime's opset-10 nearest rounding.
    o.coordinates = CoordinateMode::Asymmetric;
    o.nearest = NearestMode::Simple;
    scales = floatsOf(&ctx.in(1));
  } else {
    o.coordinates = enumAttr<CoordinateMode>(
        ctx, "coordinate_transformation_mode", "half_pixel",
        {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_half_pixel_for_nn", "tf_crop_and_resize"});
    o.nearest = enumAttr<NearestMode>(ctx, "nearest_mode", "round_prefer_floor",
                                      {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
    o.cubicA = ctx.node.attrFloat("cubic_coeff_a", -0.75f);
    o.excludeOutside = ctx.node.attrInt("exclude_outside", 0) != 0;
    o.extrapolation = ctx.node.attrFloat("extrapolation_value", 0.0f);
    roi = floatsOf(ctx.optIn(1));
    scales = floatsOf(ctx.optIn(2));
    if (const Array* s = ctx.optIn(3); s != nullptr && s->numel() > 0) sizes = s->toInt64Vector();
  }
  if (o.coordinates == CoordinateMode::HalfPixelSymmetric && ctx.opset < 19) {
    ctx.fail("half_pixel_symmetric needs opset 19");
  }
  if (ctx.opset >= 18 && ctx.node.attrInt("antialias", 0) != 0) {
    ctx.fail("antialias=1 is not supported by the interpreter");
  }
  if (scales.empty() == sizes.empty()) ctx.fail("exactly one of scales and sizes must be given");

  // Axes the scales/sizes/roi refer to (all of them before opset 18).
  std::vector<int64_t> axes;
  if (ctx.opset >= 18) axes = ctx.node.attrInts("axes");
  if (axes.empty()) {
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  for (int64_t& a : axes) {
    try {
      a = normalizeAxis(a, static_cast<int64_t>(rank));
    } catch (const Error& e) {
      ctx.fail(e.cause());
    }
  }
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size()) {
    ctx.fail(fmt::format("{} has {} values for {} axes", scales.empty() ? "sizes" : "scales", given,
                         axes.size()));
  }
  if (!roi.empty() && roi.size() != 2 * axes.size()) {
    ctx.fail(fmt::format("roi has {} values, expected {}", roi.size(), 2 * axes.size()));
  }
  std::vector<float> fullScales(rank, 1.0f), fullRoi;
  if (!roi.empty()) {
    fullRoi.assign(2 * rank, 0.0f);
    for (size_t a = 0; a < rank; ++a) fullRoi[a + rank] = 1.0f;
  }
  Shape outShape = x.shape();
  const std::string policy = ctx.node.attrString("keep_aspect_ratio_policy", "stretch");
  if (!sizes.empty() && policy != "stretch" && ctx.opset >= 18) {
    if (policy != "not_larger" && policy != "not_smaller") {
      ctx.fail(fmt::format("unknown keep_aspect_ratio_policy '{}'", policy));
    }
    float common = policy == "not_larger" ? std::numeric_limits<float>::max() : 0.0f;
    for (size_t i = 0; i < axes.size(); ++i) {
      const float s = static_cast<float>(sizes[i]) /
                      static_cast<float>(x.shape()[static_cast<size_t>(axes[i])]);
      common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      fullScales[a] = common;
      outShape[a] = static_cast<int64_t>(std::round(common * static_cast<float>(x.shape()[a])));
    }
  } else {
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      const float in = static_cast<float>(x.shape()[a]);
      if (!scales.empty()) {
        if (!(scales[i] > 0)) ctx.fail(fmt::format("scales must be positive, got {}", scales[i]));
        fullScales[a] = scales[i];
        float extent = in;
        if (o.coordinates == CoordinateMode::TfCropAndResize && !roi.empty()) {
          extent = in * (roi[i + axes.size()] - roi[i]);
        }
        outShape[a] = static_cast<int64_t>(extent * scales[i]);
      } else {
        if (sizes[i] < 0) ctx.fail(fmt::format("sizes must not be negative, got {}", sizes[i]));
        outShape[a] = sizes[i];
        fullScales[a] = in > 0 ? static_cast<float>(sizes[i]) / in : 1.0f;
      }
    }
  }
  if (!roi.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      fullRoi[a] = roi[i];
      fullRoi[a + rank] = roi[i + axes.size()];
    }
  }
  runResize(ctx, x, outShape, fullScales, !scales.empty(), fullRoi, o);
}

void upsampleKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  ResizeOptions o;
  o.mode = modeOf(ctx);
  o.coordinates = CoordinateMode::Asymmetric;
  o.nearest = NearestMode::Simple;
  const std::vector<float> scales =
      ctx.opset >= 9 ? ctx.in(1).toFloatVector() : ctx.node.attrFloats("scales");
  if (scales.size() != x.shape().size()) {
    ctx.fail(fmt::format("scales has {} values for rank {}", scales.size(), x.rank()));
  }
  Shape outShape = x.shape();
  for (size_t a = 0; a < scales.size(); ++a) {
    if (!(scales[a] >= 1.0f))
      ctx.fail(fmt::format("Upsample scales must be >= 1, got {}", scales[a]));
    outShape[a] = static_cast<int64_t>(static_cast<float>(x.shape()[a]) * scales[a]);
  }
  runResize(ctx, x, outShape, scales, true, {}, o);
}

}  // namespace

void registerResizeKernels(KernelRegistry& registry) {
  registry.add({
      {"Resize", 10, resizeKernel},
      {"Upsample", 7, upsampleKernel},
  });
}

}  // namespace qopt::interp
