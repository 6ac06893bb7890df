// Convolution kernels: Conv, ConvTranspose, ConvInteger and QLinearConv.
#include <fmt/format.h>

#include <optional>
#include <vector>

#include "ConvKernel.h"
#include "Convolution.h"
#include "Epilogue.h"
#include "FloatStaging.h"
#include "KernelSupport.h"
#include "QuantMath.h"
#include "WindowGeometry.h"

namespace qopt::interp {

namespace {

ConvShape convShape(const KernelContext& ctx, const Shape& x, const Shape& w, bool transposed) {
  ConvShape s;
  s.groups = ctx.node.attrInt("group", 1);
  if (s.groups <= 0) ctx.fail(fmt::format("group must be positive, got {}", s.groups));
  if (w.size() != x.size()) {
    ctx.fail(fmt::format("weights {} and input {} must have the same rank", shapeString(w),
                         shapeString(x)));
  }
  s.batch = x[0];
  s.channels = x[1];
  if (s.channels % s.groups != 0) {
    ctx.fail(fmt::format("{} input channels are not divisible by group {}", s.channels, s.groups));
  }
  if (transposed) {
    if (w[0] != s.channels) {
      ctx.fail(fmt::format("weights {} must have {} (input channels) as first dim", shapeString(w),
                           s.channels));
    }
    s.filters = w[1] * s.groups;
  } else {
    s.filters = w[0];
    if (w[1] * s.groups != s.channels) {
      ctx.fail(fmt::format("weights {} expect {} input channels, input {} has {}", shapeString(w),
                           w[1] * s.groups, shapeString(x), s.channels));
    }
    if (s.filters % s.groups != 0) {
      ctx.fail(
          fmt::format("{} output channels are not divisible by group {}", s.filters, s.groups));
    }
  }
  return s;
}

void checkBias(const KernelContext& ctx, const Array* bias, int64_t filters, DataType type) {
  if (bias == nullptr) return;
  if (bias->dataType() != type) {
    ctx.fail(fmt::format("bias has type {}, expected {}", dataTypeName(bias->dataType()),
                         dataTypeName(type)));
  }
  if (bias->rank() != 1 || bias->dim(0) != filters) {
    ctx.fail(fmt::format("bias must have shape [{}], got {}", filters, shapeString(bias->shape())));
  }
}

std::vector<int64_t> spatialDims(const Shape& s) {
  return {s.begin() + 2, s.end()};
}

}  // namespace

bool runConv(KernelContext& ctx, const ConvEpilogue* epilogue, const Array* residual) {
  const Array& x = ctx.in(0);
  if (epilogue != nullptr && x.dataType() != DataType::Float) return false;
  const Array& w = ctx.in(1);
  const Array* bias = ctx.optIn(2);
  if (w.dataType() != x.dataType()) ctx.fail("X and W must have the same element type");
  const ConvShape s = convShape(ctx, x.shape(), w.shape(), false);
  checkBias(ctx, bias, s.filters, x.dataType());
  if (epilogue != nullptr && !epilogue->scale.empty() &&
      epilogue->scale.size() != static_cast<size_t>(s.filters)) {
    return false;  // BatchNormalization reports the mismatch when the nodes run one by one
  }
  const WindowGeometry g = windowGeometry(ctx, x.shape(), {spatialDims(w.shape())});
  Shape yShape = windowOutputShape(x.shape(), s.filters, g);
  const bool addsResidual = epilogue != nullptr && epilogue->addsResidual;
  if (addsResidual && (residual == nullptr || residual->dataType() != DataType::Float ||
                       residual->shape() != yShape)) {
    return false;
  }
  Array y(x.dataType(), std::move(yShape));
  if (y.numel() == 0) {
    ctx.outputs[0] = std::move(y);
    return true;
  }
  if (x.dataType() == DataType::Double) {
    convolve(x.data<double>(), w.data<double>(), bias ? bias->data<double>() : nullptr,
             y.data<double>(), s, g, ctx.pool);
  } else {
    dispatchFloat(x.dataType(), [](auto) {});  // rejects non-float types with a clear error
    FloatInput fx(x), fw(w);
    std::optional<FloatInput> fb;
    if (bias) fb.emplace(*bias);
    FloatOutput fy(y);
    convolve(fx.data(), fw.data(), fb ? fb->data() : nullptr, fy.data(), s, g, ctx.pool, epilogue,
             addsResidual ? residual->data<float>() : nullptr);
    fy.commit();
  }
  ctx.outputs[0] = std::move(y);
  return true;
}

namespace {

void convKernel(KernelContext& ctx) {
  runConv(ctx, nullptr);
}

// ConvTranspose geometry: g.input = X's spatial dims, g.output = Y's, pads as resolved by the
// ONNX rules for output_shape, auto_pad and output_padding.
WindowGeometry transposeGeometry(const KernelContext& ctx, const Shape& x, const Shape& w) {
  WindowGeometry g;
  g.spatialRank = static_cast<int64_t>(x.size()) - 2;
  const size_t rank = static_cast<size_t>(g.spatialRank);
  g.input = spatialDims(x);
  g.kernel = spatialDims(w);
  auto perAxis = [&](const char* name, int64_t fallback) {
    std::vector<int64_t> v = ctx.node.attrInts(name);
    if (v.empty()) return std::vector<int64_t>(rank, fallback);
    if (v.size() != rank) {
      ctx.fail(
          fmt::format("attribute '{}' has {} values for {} spatial axes", name, v.size(), rank));
    }
    return v;
  };
  std::vector<int64_t> attrKernel = ctx.node.attrInts("kernel_shape");
  if (!attrKernel.empty() && attrKernel != g.kernel) {
    ctx.fail(fmt::format("kernel_shape [{}] does not match the weights' spatial dims [{}]",
                         fmt::join(attrKernel, ","), fmt::join(g.kernel, ",")));
  }
  g.strides = perAxis("strides", 1);
  g.dilations = perAxis("dilations", 1);
  const std::vector<int64_t> outputPadding = perAxis("output_padding", 0);
  std::vector<int64_t> outputShape = ctx.node.attrInts("output_shape");
  if (outputShape.size() > rank) {
    outputShape.erase(outputShape.begin(), outputShape.end() - static_cast<int64_t>(rank));
  }
  if (!outputShape.empty() && outputShape.size() != rank) {
    ctx.fail(
        fmt::format("output_shape has {} values for {} spatial axes", outputShape.size(), rank));
  }
  const std::string autoPad = ctx.node.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER") {
    ctx.fail(fmt::format("unknown auto_pad '{}'", autoPad));
  }
  std::vector<int64_t> pads = ctx.node.attrInts("pads");
  if (!pads.empty() && pads.size() != 2 * rank) {
    ctx.fail(fmt::format("attribute 'pads' has {} values, expected {}", pads.size(), 2 * rank));
  }
  g.padsBegin.assign(rank, 0);
  g.padsEnd.assign(rank, 0);
  g.output.assign(rank, 0);
  for (size_t a = 0; a < rank; ++a) {
    if (g.strides[a] <= 0 || g.dilations[a] <= 0) {
      ctx.fail("strides and dilations must be positive");
    }
    const int64_t extent = (g.kernel[a] - 1) * g.dilations[a] + 1;
    const int64_t full = g.strides[a] * (g.input[a] - 1) + outputPadding[a] + extent;
    const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
    if (!outputShape.empty() || same) {
      const int64_t out = !outputShape.empty() ? outputShape[a] : g.input[a] * g.strides[a];
      // A negative total (output_shape larger than the input reaches) extends the output with
      // positions no input contributes to. Halves round down, as in ONNX's reference.
      const int64_t total = full - out;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      // ONNX: SAME_UPPER puts the extra pad at the end, anything else at the beginning.
      g.padsBegin[a] = autoPad == "SAME_UPPER" ? half : total - half;
      g.padsEnd[a] = total - g.padsBegin[a];
      g.output[a] = out;
    } else {
      if (!pads.empty() && autoPad == "NOTSET") {
        g.padsBegin[a] = pads[a];
        g.padsEnd[a] = pads[a + rank];
      }
      g.output[a] = full - g.padsBegin[a] - g.padsEnd[a];
      if (g.output[a] < 0) ctx.fail(fmt::format("pads leave no output on spatial axis {}", a));
    }
  }
  return g;
}

void convTransposeKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& w = ctx.in(1);
  const Array* bias = ctx.optIn(2);
  if (w.dataType() != x.dataType()) ctx.fail("X and W must have the same element type");
  if (x.rank() < 3)
    ctx.fail(fmt::format("input must have rank >= 3, got {}", shapeString(x.shape())));
  const ConvShape s = convShape(ctx, x.shape(), w.shape(), true);
  checkBias(ctx, bias, s.filters, x.dataType());
  const WindowGeometry g = transposeGeometry(ctx, x.shape(), w.shape());
  Array y(x.dataType(), windowOutputShape(x.shape(), s.filters, g));
  if (y.numel() == 0) {
    ctx.outputs[0] = std::move(y);
    return;
  }
  if (x.dataType() == DataType::Double) {
    convolveTranspose(x.data<double>(), w.data<double>(), bias ? bias->data<double>() : nullptr,
                      y.data<double>(), s, g, ctx.pool);
  } else {
    dispatchFloat(x.dataType(), [](auto) {});
    FloatInput fx(x), fw(w);
    std::optional<FloatInput> fb;
    if (bias) fb.emplace(*bias);
    FloatOutput fy(y);
    convolveTranspose(fx.data(), fw.data(), fb ? fb->data() : nullptr, fy.data(), s, g, ctx.pool);
    fy.commit();
  }
  ctx.outputs[0] = std::move(y);
}

template <class Fn>
void dispatch8Bit(const KernelContext& ctx, DataType type, const char* what, Fn&& fn) {
  if (type == DataType::UInt8) return fn(TypeTag<uint8_t>{});
  if (type == DataType::Int8) return fn(TypeTag<int8_t>{});
  ctx.fail(fmt::format("{} must be int8 or uint8, got {}", what, dataTypeName(type)));
}

// The int32 convolution shared by ConvInteger and QLinearConv. `xZero`/`wZero` may be null
// (zero). Returns the accumulator [N, M, out...].
Array integerConvolution(const KernelContext& ctx, const Array& x, const Array* xZero,
                         const Array& w, const Array* wZero, ConvShape& s, WindowGeometry& g) {
  s = convShape(ctx, x.shape(), w.shape(), false);
  g = windowGeometry(ctx, x.shape(), {spatialDims(w.shape())});
  Array acc(DataType::Int32, windowOutputShape(x.shape(), s.filters, g));
  if (xZero && xZero->numel() != 1) ctx.fail("the input zero point must be per tensor");
  if (wZero && wZero->numel() != 1 && !(wZero->rank() == 1 && wZero->dim(0) == s.filters)) {
    ctx.fail(fmt::format("the weight zero point must be per tensor or have {} values, got {}",
                         s.filters, shapeString(wZero->shape())));
  }
  if (acc.numel() == 0) return acc;
  dispatch8Bit(ctx, x.dataType(), "x", [&](auto tx) {
    using TX = typename decltype(tx)::type;
    dispatch8Bit(ctx, w.dataType(), "w", [&](auto tw) {
      using TW = typename decltype(tw)::type;
      if ((xZero && xZero->dataType() != x.dataType()) ||
          (wZero && wZero->dataType() != w.dataType())) {
        ctx.fail("zero points must have the type of their tensor");
      }
      const TX xz = xZero ? xZero->data<TX>()[0] : TX(0);
      static constexpr TW kZero = 0;
      const TW* wz = wZero ? wZero->data<TW>() : &kZero;
      const int64_t wzStride = wZero && wZero->numel() > 1 ? 1 : 0;
      convolveInteger<TX, TW>(x.data<TX>(), xz, w.data<TW>(), wz, wzStride, acc.data<int32_t>(), s,
                              g, ctx.pool);
    });
  });
  return acc;
}

void convIntegerKernel(KernelContext& ctx) {
  ConvShape s;
  WindowGeometry g;
  ctx.outputs[0] = integerConvolution(ctx, ctx.in(0), ctx.optIn(2), ctx.in(1), ctx.optIn(3), s, g);
}

std::vector<float> scaleValues(const KernelContext& ctx, const Array& scale, const char* what) {
  if (!isFloatingPoint(scale.dataType()) || scale.dataType() == DataType::Double) {
    ctx.fail(fmt::format("{} must be float, float16 or bfloat16", what));
  }
  return scale.toFloatVector();
}

void qlinearConvKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& w = ctx.in(3);
  const Array& yZero = ctx.in(7);
  const Array* bias = ctx.optIn(8);
  ConvShape s;
  WindowGeometry g;
  Array acc = integerConvolution(ctx, x, &ctx.in(2), w, &ctx.in(5), s, g);
  const std::vector<float> xScale = scaleValues(ctx, ctx.in(1), "x_scale");
  const std::vector<float> wScale = scaleValues(ctx, ctx.in(4), "w_scale");
  const std::vector<float> yScale = scaleValues(ctx, ctx.in(6), "y_scale");
  if (xScale.size() != 1 || yScale.size() != 1 || yZero.numel() != 1) {
    ctx.fail("x_scale, y_scale and y_zero_point must be per tensor");
  }
  if (wScale.size() != 1 && static_cast<int64_t>(wScale.size()) != s.filters) {
    ctx.fail(fmt::format("w_scale must have 1 or {} values, got {}", s.filters, wScale.size()));
  }
  if (bias && (bias->dataType() != DataType::Int32 || bias->numel() != s.filters)) {
    ctx.fail(fmt::format("B must be int32 with {} values", s.filters));
  }
  // As ONNX Runtime: the int32 bias joins the accumulator, then one float multiplier per output
  // channel, x_scale * w_scale[m] / y_scale.
  std::vector<float> multiplier(static_cast<size_t>(s.filters));
  for (int64_t m = 0; m < s.filters; ++m) {
    multiplier[static_cast<size_t>(m)] =
        xScale[0] * wScale[wScale.size() == 1 ? 0 : static_cast<size_t>(m)] / yScale[0];
  }
  const QuantRange range = quantRange(yZero.dataType());
  const int32_t zp = static_cast<int32_t>(yZero.getInt64(0));
  Array y(yZero.dataType(), acc.shape());
  const int64_t plane = g.outputSize();
  const int32_t* a = acc.data<int32_t>();
  const int32_t* b = bias ? bias->data<int32_t>() : nullptr;
  dispatch8Bit(ctx, yZero.dataType(), "y_zero_point", [&](auto ty) {
    using TY = typename decltype(ty)::type;
    TY* yp = y.data<TY>();
    for (int64_t nm = 0; nm < s.batch * s.filters; ++nm) {
      const int64_t m = nm % s.filters;
      const int32_t add = b ? b[m] : 0;
      const float mult = multiplier[static_cast<size_t>(m)];
      for (int64_t p = nm * plane; p < (nm + 1) * plane; ++p) {
        const int32_t sum =
            static_cast<int32_t>(static_cast<uint32_t>(a[p]) + static_cast<uint32_t>(add));
        yp[p] = static_cast<TY>(requantize(sum, mult, zp, range));
      }
    }
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void registerConvKernels(KernelRegistry& registry) {
  registry.add({
      {"Conv", 1, convKernel},
      {"ConvTranspose", 1, convTransposeKernel},
      {"ConvInteger", 10, convIntegerKernel},
      {"QLinearConv", 10, qlinearConvKernel},
  });
}

}  // namespace qopt::interp
