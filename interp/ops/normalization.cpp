// Normalization kernels for inference: BatchNormalization, InstanceNormalization,
// LayerNormalization (with its optional Mean and InvStdDev outputs) and GroupNormalization.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "Epilogue.h"
#include "KernelSupport.h"
#include "ThreadPool.h"
#include "VectorClones.h"

namespace qopt::interp {

namespace {

// Per-channel parameters as float (any float type in the model), checked to have `channels`
// elements.
std::vector<float> channelParam(const KernelContext& ctx, const Array& a, const char* what,
                                int64_t channels) {
  if (!isFloatingPoint(a.dataType())) {
    ctx.fail(fmt::format("{} must be a floating point tensor", what));
  }
  if (a.numel() != channels || a.rank() != 1) {
    ctx.fail(
        fmt::format("{} must have shape [{}], got {}", what, channels, shapeString(a.shape())));
  }
  return a.toFloatVector();
}

// Mean and (population) variance of n values, in double: the mean first, then the centred
// sum of squares, which keeps large offsets from cancelling the variance.
struct Moments {
  double mean = 0;
  double variance = 0;
};

template <class T>
Moments momentsOf(const T* xs, int64_t n) {
  if (n <= 0) return {};
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(toCompute(xs[i]));
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(toCompute(xs[i])) - mean;
    sq += d * d;
  }
  return {mean, sq / static_cast<double>(n)};
}

// Calls body(s, xs, ys, moments of xs) for each of the `slices` runs of `inner` contiguous
// elements of x (xs) and of y (ys, x's float type), in parallel `grain` runs at a time.
template <class Body>
void forEachSlice(const KernelContext& ctx, const Array& x, Array& y, int64_t slices, int64_t inner,
                  int64_t grain, Body&& body) {
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    parallelFor(ctx.pool, slices, grain, [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        const T* xs = xp + s * inner;
        body(s, xs, yp + s * inner, momentsOf(xs, inner));
      }
    });
  });
}

// y = x * a[c] + b[c] over planes of `inner` elements, c = plane % channels.
template <class T>
void affinePerChannel(const KernelContext& ctx, const T* x, T* y, int64_t planes, int64_t channels,
                      int64_t inner, const std::vector<float>& a, const std::vector<float>& b) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner));
  parallelFor(ctx.pool, planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const size_t c = static_cast<size_t>(p % channels);
      const T* xs = x + p * inner;
      T* ys = y + p * inner;
      if constexpr (std::is_same_v<T, float>) {
        scaleShift(xs, ys, inner, a[c], b[c]);
      } else {
        const ComputeT<T> scale = a[c], shift = b[c];
        for (int64_t i = 0; i < inner; ++i)
          ys[i] = fromCompute<T>(toCompute(xs[i]) * scale + shift);
      }
    }
  });
}

// x.dim(1), the channels of an input that must have rank >= minRank.
int64_t channelsOf(const KernelContext& ctx, const Array& x, int64_t minRank) {
  if (x.rank() < minRank) {
    ctx.fail(fmt::format("input must have rank >= {}, got {}", minRank, shapeString(x.shape())));
  }
  return x.dim(1);
}

void batchNormKernel(KernelContext& ctx) {
  if (ctx.node.attrInt("training_mode", 0) != 0) {
    ctx.fail(
        "training_mode=1 is not supported: the interpreter runs BatchNormalization for "
        "inference only (export the model in eval mode)");
  }
  if (wantsOutput(ctx, 1) || wantsOutput(ctx, 2)) {
    ctx.fail(
        "the running mean/variance outputs exist only in training mode, which the "
        "interpreter does not run");
  }
  const Array& x = ctx.in(0);
  const int64_t channels = channelsOf(ctx, x, 2);
  const std::vector<float> scale = channelParam(ctx, ctx.in(1), "scale", channels);
  const std::vector<float> bias = channelParam(ctx, ctx.in(2), "B", channels);
  const std::vector<float> mean = channelParam(ctx, ctx.in(3), "input_mean", channels);
  const std::vector<float> var = channelParam(ctx, ctx.in(4), "input_var", channels);
  const float epsilon = ctx.node.attrFloat("epsilon", 1e-5f);
  // As ONNX Runtime: y = x * (scale / sqrt(var + eps)) + (B - mean * scale / sqrt(var + eps)),
  // in float. A Conv before it may apply the same map as its epilogue (Epilogue.h).
  std::vector<float> a, b;
  batchNormCoefficients(scale, bias, mean, var, epsilon, a, b);
  Array y(x.dataType(), x.shape());
  dispatchFloat(x.dataType(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    affinePerChannel<T>(ctx, x.data<T>(), y.data<T>(), x.dim(0) * channels, channels,
                        product(x.shape(), 2), a, b);
  });
  ctx.outputs[0] = std::move(y);
}

void instanceNormKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const int64_t channels = channelsOf(ctx, x, 3);
  const std::vector<float> scale = channelParam(ctx, ctx.in(1), "scale", channels);
  const std::vector<float> bias = channelParam(ctx, ctx.in(2), "B", channels);
  const double epsilon = ctx.node.attrFloat("epsilon", 1e-5f);
  const int64_t planes = x.dim(0) * channels;
  const int64_t inner = product(x.shape(), 2);
  Array y(x.dataType(), x.shape());
  forEachSlice(ctx, x, y, planes, inner, 1,
               [&]<class T>(int64_t p, const T* xs, T* ys, const Moments& m) {
                 const size_t c = static_cast<size_t>(p % channels);
                 const double a = scale[c] / std::sqrt(m.variance + epsilon);
                 const double b = bias[c] - m.mean * a;
                 for (int64_t i = 0; i < inner; ++i) {
                   ys[i] = fromCompute<T>(static_cast<ComputeT<T>>(toCompute(xs[i]) * a + b));
                 }
               });
  ctx.outputs[0] = std::move(y);
}

// Scale and B broadcast unidirectionally to the normalized shape x.shape[axis:]; returns a
// float copy expanded to `inner` elements.
std::vector<float> expandToInner(const KernelContext& ctx, const Array& p, const char* what,
                                 const Shape& xShape, int64_t axis, int64_t inner) {
  if (!isFloatingPoint(p.dataType()))
    ctx.fail(fmt::format("{} must be a floating point tensor", what));
  const Shape target(xShape.begin() + axis, xShape.end());
  const Shape& s = p.shape();
  if (s.size() > target.size()) {
    ctx.fail(fmt::format("{} of shape {} does not broadcast to {}", what, shapeString(s),
                         shapeString(target)));
  }
  const size_t lead = target.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != 1 && s[i] != target[lead + i]) {
      ctx.fail(fmt::format("{} of shape {} does not broadcast to {}", what, shapeString(s),
                           shapeString(target)));
    }
  }
  const std::vector<float> values = p.toFloatVector();
  if (p.numel() == inner) return values;
  std::vector<float> out(static_cast<size_t>(inner));
  std::vector<int64_t> idx(target.size(), 0);
  for (int64_t i = 0; i < inner; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < s.size(); ++d) src = src * s[d] + (s[d] == 1 ? 0 : idx[lead + d]);
    out[static_cast<size_t>(i)] = values[static_cast<size_t>(src)];
    for (size_t d = target.size(); d-- > 0;) {
      if (++idx[d] < target[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

void layerNormKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const int64_t axis = [&] {
    try {
      return normalizeAxis(ctx.node.attrInt("axis", -1), x.rank());
    } catch (const Error& e) {
      ctx.fail(e.cause());
    }
  }();
  const int64_t stashType = ctx.node.attrInt("stash_type", 1);
  if (stashType != 1) {
    ctx.fail(fmt::format("stash_type {} is not supported (only 1, float)", stashType));
  }
  const double epsilon = ctx.node.attrFloat("epsilon", 1e-5f);
  const int64_t outer = product(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = product(x.shape(), static_cast<size_t>(axis));
  const std::vector<float> scale = expandToInner(ctx, ctx.in(1), "Scale", x.shape(), axis, inner);
  std::vector<float> bias;
  if (const Array* b = ctx.optIn(2)) bias = expandToInner(ctx, *b, "B", x.shape(), axis, inner);
  Shape statShape = x.shape();
  std::fill(statShape.begin() + axis, statShape.end(), 1);
  Array y(x.dataType(), x.shape());
  const bool wantMean = wantsOutput(ctx, 1), wantInvStd = wantsOutput(ctx, 2);
  // Mean and InvStdDev have the stash type (float).
  Array meanOut, invStdOut;
  if (wantMean) meanOut = Array(DataType::Float, statShape);
  if (wantInvStd) invStdOut = Array(DataType::Float, statShape);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner));
  forEachSlice(ctx, x, y, outer, inner, grain,
               [&]<class T>(int64_t r, const T* xs, T* ys, const Moments& m) {
                 const float meanF = static_cast<float>(m.mean);
                 const float invStd = static_cast<float>(1.0 / std::sqrt(m.variance + epsilon));
                 for (int64_t i = 0; i < inner; ++i) {
                   const size_t s = static_cast<size_t>(i);
                   float v = (static_cast<float>(toCompute(xs[i])) - meanF) * invStd * scale[s];
                   if (!bias.empty()) v += bias[s];
                   ys[i] = fromCompute<T>(static_cast<ComputeT<T>>(v));
                 }
                 if (wantMean) meanOut.data<float>()[r] = meanF;
                 if (wantInvStd) invStdOut.data<float>()[r] = invStd;
               });
  ctx.outputs[0] = std::move(y);
  if (wantMean) ctx.outputs[1] = std::move(meanOut);
  if (wantInvStd) ctx.outputs[2] = std::move(invStdOut);
}

// Opsets 7 and 8 computed statistics per channel too unless spatial=0 (per element).
void batchNorm7Kernel(KernelContext& ctx) {
  if (ctx.node.attrInt("spatial", 1) == 0) {
    ctx.fail("spatial=0 (statistics per element) is not supported");
  }
  batchNormKernel(ctx);
}

// GroupNormalization: statistics per (batch, group of channels); scale and bias per group at
// opset 18, per channel from 21.
void groupNormKernel(KernelContext& ctx, bool perChannel) {
  const Array& x = ctx.in(0);
  const int64_t channels = channelsOf(ctx, x, 2);
  const int64_t groups = ctx.node.attrInt("num_groups", 0);
  if (groups <= 0 || channels % groups != 0) {
    ctx.fail(fmt::format("num_groups {} does not divide the {} channels", groups, channels));
  }
  const int64_t affine = perChannel ? channels : groups;
  const std::vector<float> scale = ctx.in(1).toFloatVector();
  const std::vector<float> bias = ctx.in(2).toFloatVector();
  if (static_cast<int64_t>(scale.size()) != affine || static_cast<int64_t>(bias.size()) != affine) {
    ctx.fail(fmt::format("scale and bias must hold {} values (one per {}), got {} and {}", affine,
                         perChannel ? "channel" : "group", scale.size(), bias.size()));
  }
  if (ctx.node.attrInt("stash_type", 1) != 1) ctx.fail("only stash_type 1 (float) is supported");
  const double epsilon = ctx.node.attrFloat("epsilon", 1e-5f);
  const int64_t spatial = product(x.shape(), 2);
  const int64_t perGroup = channels / groups;
  const int64_t inner = perGroup * spatial;  // one group's contiguous elements
  const int64_t slices = product(x.shape(), 0, 1) * groups;
  Array y(x.dataType(), x.shape());
  forEachSlice(ctx, x, y, slices, inner, 1,
               [&]<class T>(int64_t s, const T* xs, T* ys, const Moments& m) {
                 const double invStd = 1.0 / std::sqrt(m.variance + epsilon);
                 const int64_t g = s % groups;
                 for (int64_t c = 0; c < perGroup; ++c) {
                   const size_t k = static_cast<size_t>(perChannel ? g * perGroup + c : g);
                   for (int64_t i = c * spatial; i < (c + 1) * spatial; ++i) {
                     const double v = (static_cast<double>(toCompute(xs[i])) - m.mean) * invStd;
                     ys[i] = fromCompute<T>(static_cast<ComputeT<T>>(v * scale[k] + bias[k]));
                   }
                 }
               });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void registerNormalizationKernels(KernelRegistry& registry) {
  registry.add({
      {"BatchNormalization", 7, batchNorm7Kernel},
      {"BatchNormalization", 9, batchNormKernel},
      {"InstanceNormalization", 6, instanceNormKernel},
      {"LayerNormalization", 17, layerNormKernel},
  });
  registry.add("", "GroupNormalization", 18,
               [](KernelContext& ctx) { groupNormKernel(ctx, /*perChannel=*/false); });
  registry.add("", "GroupNormalization", 21,
               [](KernelContext& ctx) { groupNormKernel(ctx, /*perChannel=*/true); });
}

}  // namespace qopt::interp
