// Quantization kernels: QuantizeLinear, DequantizeLinear (per tensor, per axis from opset 13,
// blocked from opset 21; 4-, 8- and 16-bit integers, int32 for DequantizeLinear, and the four
// float8 types from opset 19) and DynamicQuantizeLinear. Integer rounding is half to even with
// saturation, float8 conversion as qopt/ir/Float8.h describes (the saturate attribute chooses
// clamping or inf/NaN); both bit-identical to ONNX Runtime.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "KernelSupport.h"
#include "QuantLoops.h"
#include "QuantMath.h"
#include "ThreadPool.h"
#include "qopt/ir/Float8.h"

namespace qopt::interp {

namespace {

// Calls fn(TypeTag<S>{}) with S the storage type of a quantized integer type.
template <class Fn>
void dispatchQuantized(const KernelContext& ctx, DataType type, bool allowInt32, Fn&& fn) {
  switch (type) {
    case DataType::Int4:
    case DataType::Int8:
      return fn(TypeTag<int8_t>{});
    case DataType::UInt4:
    case DataType::UInt8:
      return fn(TypeTag<uint8_t>{});
    case DataType::Int16:
      return fn(TypeTag<int16_t>{});
    case DataType::UInt16:
      return fn(TypeTag<uint16_t>{});
    case DataType::Int32:
      if (allowInt32) return fn(TypeTag<int32_t>{});
      break;
    default:
      break;
  }
  if (type == DataType::Float4E2M1) {
    ctx.fail(
        fmt::format("{} quantization is not supported by the interpreter", dataTypeName(type)));
  }
  ctx.fail(fmt::format("element type {} is not a supported quantized type", dataTypeName(type)));
}

// ONNX Runtime's com.microsoft QuantizeLinear/DequantizeLinear (opset 1 of that domain) have the
// axis attribute and take 16- and 4-bit types: they read as the default domain's opset 21.
int64_t quantOpset(const KernelContext& ctx) {
  return ctx.node.domain() == "com.microsoft" ? 21 : ctx.opset;
}

// Types that need a newer opset than the model's.
void checkTypeOpset(const KernelContext& ctx, DataType type) {
  const bool wide = type == DataType::Int16 || type == DataType::UInt16 || type == DataType::Int4 ||
                    type == DataType::UInt4;
  if (wide && quantOpset(ctx) < 21) {
    ctx.fail(fmt::format("{} needs opset 21", dataTypeName(type)));
  }
  if (isFloat8(type) && quantOpset(ctx) < 19) {
    ctx.fail(fmt::format("{} needs opset 19", dataTypeName(type)));
  }
}

// ONNX leaves a float8 zero point unused ("usually not used", with the integer formula kept for
// form) and ONNX Runtime ignores it: only 0 has one meaning, so anything else is refused.
void checkFloat8ZeroPoint(const KernelContext& ctx, const Array* zeroPoint) {
  if (zeroPoint == nullptr) return;
  for (int64_t i = 0; i < zeroPoint->numel(); ++i) {
    const double v = zeroPoint->getDouble(i);
    if (v != 0) {
      ctx.fail(fmt::format("a {} zero point must be 0, got {} at index {}",
                           dataTypeName(zeroPoint->dataType()), v, i));
    }
  }
}

// How the scale and zero point map onto x: x is viewed as [outer, axisDim, inner], and the
// parameter index of element (o, d, i) is (o * paramAxis + d / block) * paramInner + i with
// paramInner = inner (blocked) or 0/1 factors for per-tensor and per-axis.
struct ParamLayout {
  int64_t outer = 1, axisDim = 1, inner = 1;
  int64_t block = 1;      // elements of the axis sharing one parameter
  int64_t paramAxis = 1;  // parameters along the axis
  bool perTensor = true;
  bool blocked = false;

  int64_t index(int64_t o, int64_t d, int64_t i) const {
    if (perTensor) return 0;
    if (!blocked) return d;
    return (o * paramAxis + d / block) * inner + i;
  }
};

ParamLayout paramLayout(const KernelContext& ctx, const Shape& x, const Array& scale,
                        const Array* zeroPoint) {
  ParamLayout l;
  // One element is one element: ONNX Runtime (and its quantizer, which writes them) takes a
  // scale of shape [1] with a zero point of shape [], and the reverse.
  const bool oneElementEach = zeroPoint && zeroPoint->numel() == 1 && scale.numel() == 1 &&
                              zeroPoint->rank() <= 1 && scale.rank() <= 1;
  if (zeroPoint && zeroPoint->shape() != scale.shape() && !oneElementEach) {
    ctx.fail(fmt::format("zero point shape {} differs from scale shape {}",
                         shapeString(zeroPoint->shape()), shapeString(scale.shape())));
  }
  const int64_t blockSize = quantOpset(ctx) >= 21 ? ctx.node.attrInt("block_size", 0) : 0;
  if (blockSize < 0) ctx.fail("block_size must not be negative");
  if (scale.numel() == 1 && scale.rank() <= 1 && blockSize == 0) {  // per tensor: one long row
    l.inner = product(x);
    return l;
  }
  if (quantOpset(ctx) < 13) {
    ctx.fail(fmt::format("scale of shape {} must be a scalar before opset 13",
                         shapeString(scale.shape())));
  }
  const int64_t axis = [&] {
    try {
      return normalizeAxis(ctx.node.attrInt("axis", 1), static_cast<int64_t>(x.size()));
    } catch (const Error& e) {
      ctx.fail(e.cause());
    }
  }();
  l.perTensor = false;
  l.outer = product(x, 0, static_cast<size_t>(axis));
  l.axisDim = x[static_cast<size_t>(axis)];
  l.inner = product(x, static_cast<size_t>(axis) + 1);
  if (blockSize == 0) {
    if (scale.rank() != 1 || scale.dim(0) != l.axisDim) {
      ctx.fail(fmt::format("per-axis scale must have shape [{}] (axis {} of {}), got {}", l.axisDim,
                           axis, shapeString(x), shapeString(scale.shape())));
    }
    return l;
  }
  l.blocked = true;
  l.block = blockSize;
  l.paramAxis = (l.axisDim + blockSize - 1) / blockSize;
  Shape expect = x;
  expect[static_cast<size_t>(axis)] = l.paramAxis;
  if (scale.shape() != expect) {
    ctx.fail(fmt::format("blocked scale must have shape {} (block_size {} on axis {}), got {}",
                         shapeString(expect), blockSize, axis, shapeString(scale.shape())));
  }
  return l;
}

std::vector<float> floatValues(const KernelContext& ctx, const Array& a, const char* what) {
  if (!isFloatingPoint(a.dataType()) || a.dataType() == DataType::Double) {
    ctx.fail(fmt::format("{} must be float, float16 or bfloat16, got {}", what,
                         dataTypeName(a.dataType())));
  }
  return a.toFloatVector();
}

// Runs body(o, d, i0, i1, flatOffset) over rows of `inner` elements, split across the pool.
template <class Body>
void forEachRow(const KernelContext& ctx, const ParamLayout& l, Body&& body) {
  const int64_t rows = l.outer * l.axisDim;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, l.inner));
  parallelFor(ctx.pool, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) body(r / l.axisDim, r % l.axisDim, r * l.inner);
  });
}

// Runs body(p, offset, count) over spans of elements that share parameter p, split across the
// pool: rows of the per-axis case, and pieces of the one long row of the per-tensor case.
template <class Body>
void forEachSpan(const KernelContext& ctx, const ParamLayout& l, Body&& body) {
  if (l.perTensor) {
    parallelFor(ctx.pool, l.inner, kElementwiseGrain,
                [&](int64_t i0, int64_t i1) { body(size_t{0}, i0, i1 - i0); });
    return;
  }
  forEachRow(ctx, l, [&](int64_t o, int64_t d, int64_t offset) {
    body(static_cast<size_t>(l.index(o, d, 0)), offset, l.inner);
  });
}

DataType quantizeOutputType(const KernelContext& ctx, const Array* zeroPoint) {
  const int64_t outputDtype = quantOpset(ctx) >= 21 ? ctx.node.attrInt("output_dtype", 0) : 0;
  if (outputDtype != 0) {
    std::optional<DataType> t = dataTypeFromInt(outputDtype);
    if (!t) ctx.fail(fmt::format("unknown output_dtype {}", outputDtype));
    if (zeroPoint && zeroPoint->dataType() != *t) {
      ctx.fail(fmt::format("output_dtype {} differs from the zero point's type {}",
                           dataTypeName(*t), dataTypeName(zeroPoint->dataType())));
    }
    return *t;
  }
  return zeroPoint ? zeroPoint->dataType() : DataType::UInt8;
}

// Calls fn(TypeTag<X>{}) with X the element type of QuantizeLinear's input x.
template <class Fn>
void dispatchQuantizeInput(const KernelContext& ctx, DataType type, Fn&& fn) {
  dispatchTypes(TypeList<float, Half, BFloat16, int32_t>{}, type, std::forward<Fn>(fn), [&] {
    ctx.fail(fmt::format("x of type {} is not supported", dataTypeName(type)));
  });
}

// y = float8(x / scale): the quotient in float, as ONNX Runtime computes it, then rounded once.
void quantizeToFloat8(const KernelContext& ctx, const Array& x, const ParamLayout& l,
                      const std::vector<float>& scale, const Float8Format& format, Array& y) {
  const bool saturate = ctx.node.attrInt("saturate", 1) != 0;
  uint8_t* yp = y.data<uint8_t>();
  dispatchQuantizeInput(ctx, x.dataType(), [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    const X* xp = x.data<X>();
    forEachRow(ctx, l, [&](int64_t o, int64_t d, int64_t offset) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const size_t p = static_cast<size_t>(l.index(o, d, i));
        const float v = static_cast<float>(toCompute(xp[offset + i])) / scale[p];
        yp[offset + i] = doubleToFloat8(v, format, saturate);
      }
    });
  });
}

void quantizeLinearKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& scaleArray = ctx.in(1);
  const Array* zeroPoint = ctx.optIn(2);
  const DataType outType = quantizeOutputType(ctx, zeroPoint);
  checkTypeOpset(ctx, outType);
  const ParamLayout l = paramLayout(ctx, x.shape(), scaleArray, zeroPoint);
  const std::vector<float> scale = floatValues(ctx, scaleArray, "y_scale");
  Array y(outType, x.shape());
  if (std::optional<Float8Format> format = float8Format(outType)) {
    checkFloat8ZeroPoint(ctx, zeroPoint);
    quantizeToFloat8(ctx, x, l, scale, *format, y);
    ctx.outputs[0] = std::move(y);
    return;
  }
  const QuantRange range = quantRange(outType);
  std::vector<int32_t> zp(scale.size(), 0);
  if (zeroPoint) {
    for (size_t i = 0; i < zp.size(); ++i) {
      zp[i] = static_cast<int32_t>(zeroPoint->getInt64(static_cast<int64_t>(i)));
    }
  }
  if (x.dataType() != DataType::Int32) dispatchFloat(x.dataType(), [](auto) {});
  dispatchQuantized(ctx, outType, false, [&](auto qtag) {
    using Q = typename decltype(qtag)::type;
    Q* yp = y.data<Q>();
    dispatchQuantizeInput(ctx, x.dataType(), [&](auto xtag) {
      using X = typename decltype(xtag)::type;
      const X* xp = x.data<X>();
      if (!l.blocked && isSmallRange(range)) {
        // One scale and zero point per row: the common per-tensor and per-axis case.
        if constexpr (std::is_same_v<X, float> &&
                      (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t>)) {
          forEachSpan(ctx, l, [&](size_t p, int64_t offset, int64_t count) {
            quantizeRow(xp + offset, yp + offset, count, quantizeParams(scale[p], zp[p], range));
          });
          return;
        }
        forEachRow(ctx, l, [&](int64_t o, int64_t d, int64_t offset) {
          const size_t p = static_cast<size_t>(l.index(o, d, 0));
          const float s = scale[p];
          const int32_t z = zp[p];
          const float lo = static_cast<float>(static_cast<int64_t>(range.min) - z);
          const float hi = static_cast<float>(static_cast<int64_t>(range.max) - z);
          const X* in = xp + offset;
          Q* out = yp + offset;
          for (int64_t i = 0; i < l.inner; ++i) {
            const float v = static_cast<float>(toCompute(in[i])) / s;
            out[i] = static_cast<Q>(quantizeSmallRange(v, z, lo, hi));
          }
        });
        return;
      }
      forEachRow(ctx, l, [&](int64_t o, int64_t d, int64_t offset) {
        for (int64_t i = 0; i < l.inner; ++i) {
          const size_t p = static_cast<size_t>(l.index(o, d, i));
          // x / scale in float, as ONNX Runtime (not x * (1 / scale)).
          const float v = static_cast<float>(toCompute(xp[offset + i])) / scale[p];
          yp[offset + i] = static_cast<Q>(quantizeValue(v, zp[p], range));
        }
      });
    });
  });
  ctx.outputs[0] = std::move(y);
}

// y[j] = value(j, p) for every element j, p its parameter index, rounded to y's float type.
template <class Value>
void writeDequantized(const KernelContext& ctx, const ParamLayout& l, Array& y, Value&& value) {
  dispatchFloat(y.dataType(), [&](auto ytag) {
    using Y = typename decltype(ytag)::type;
    Y* yp = y.data<Y>();
    forEachRow(ctx, l, [&](int64_t o, int64_t d, int64_t offset) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const size_t p = static_cast<size_t>(l.index(o, d, i));
        yp[offset + i] = fromCompute<Y>(static_cast<ComputeT<Y>>(value(offset + i, p)));
      }
    });
  });
}

// y = float(x) * scale in float, as ONNX Runtime; float8 values are exact in float.
void dequantizeFloat8(const KernelContext& ctx, const Array& x, const ParamLayout& l,
                      const std::vector<float>& scale, const Float8Format& format, Array& y) {
  std::array<float, 256> decoded{};
  for (int code = 0; code < 256; ++code) {
    decoded[static_cast<size_t>(code)] =
        static_cast<float>(float8ToDouble(static_cast<uint8_t>(code), format));
  }
  const uint8_t* xp = x.data<uint8_t>();
  writeDequantized(ctx, l, y,
                   [&](int64_t j, size_t p) -> float { return decoded[xp[j]] * scale[p]; });
}

void dequantizeLinearKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& scaleArray = ctx.in(1);
  const Array* zeroPoint = ctx.optIn(2);
  checkTypeOpset(ctx, x.dataType());
  if (zeroPoint && zeroPoint->dataType() != x.dataType()) {
    ctx.fail(fmt::format("x_zero_point has type {}, x has {}", dataTypeName(zeroPoint->dataType()),
                         dataTypeName(x.dataType())));
  }
  const ParamLayout l = paramLayout(ctx, x.shape(), scaleArray, zeroPoint);
  const std::vector<float> scale = floatValues(ctx, scaleArray, "x_scale");
  // The output has the scale's type (float before opset 19).
  Array y(scaleArray.dataType(), x.shape());
  if (std::optional<Float8Format> format = float8Format(x.dataType())) {
    checkFloat8ZeroPoint(ctx, zeroPoint);
    dequantizeFloat8(ctx, x, l, scale, *format, y);
    ctx.outputs[0] = std::move(y);
    return;
  }
  std::vector<int64_t> zp(scale.size(), 0);
  if (zeroPoint) {
    for (size_t i = 0; i < zp.size(); ++i) zp[i] = zeroPoint->getInt64(static_cast<int64_t>(i));
  }
  if (x.dataType() == DataType::Int32 &&
      std::any_of(zp.begin(), zp.end(), [](int64_t z) { return z != 0; })) {
    ctx.fail("an int32 input must have a zero point of 0");
  }
  dispatchQuantized(ctx, x.dataType(), true, [&](auto qtag) {
    using Q = typename decltype(qtag)::type;
    const Q* xp = x.data<Q>();
    if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t>) {
      if (y.dataType() == DataType::Float && !l.blocked) {
        float* yp = y.data<float>();
        forEachSpan(ctx, l, [&](size_t p, int64_t offset, int64_t count) {
          dequantizeRow(xp + offset, yp + offset, count, scale[p], static_cast<int32_t>(zp[p]));
        });
        return;
      }
    }
    writeDequantized(ctx, l, y, [&](int64_t j, size_t p) -> float {
      const auto shifted = static_cast<int32_t>(static_cast<int64_t>(xp[j]) - zp[p]);
      return static_cast<float>(shifted) * scale[p];
    });
  });
  ctx.outputs[0] = std::move(y);
}

void dynamicQuantizeLinearKernel(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (x.dataType() != DataType::Float) ctx.fail("x must be float");
  const float* xp = x.data<float>();
  const int64_t n = x.numel();
  // The range always includes 0 so that 0 is exactly representable.
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, xp[i]);
    hi = std::max(hi, xp[i]);
  }
  constexpr float kQmin = 0.0f, kQmax = 255.0f;
  // As ONNX Runtime: a constant-zero input gets scale 1 rather than dividing by zero.
  const float scale = hi == lo ? 1.0f : (hi - lo) / (kQmax - kQmin);
  const float initialZeroPoint = kQmin - lo / scale;
  const auto zeroPoint =
      static_cast<int32_t>(roundHalfToEven(std::clamp(initialZeroPoint, kQmin, kQmax)));
  Array y(DataType::UInt8, x.shape());
  uint8_t* yp = y.data<uint8_t>();
  const QuantRange range = quantRange(DataType::UInt8);
  parallelFor(ctx.pool, n, kElementwiseGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      yp[i] = static_cast<uint8_t>(quantizeValue(xp[i] / scale, zeroPoint, range));
    }
  });
  ctx.outputs[0] = std::move(y);
  ctx.outputs[1] = Array::scalar<float>(DataType::Float, scale);
  ctx.outputs[2] = Array::scalar<uint8_t>(DataType::UInt8, static_cast<uint8_t>(zeroPoint));
}

}  // namespace

void registerQuantKernels(KernelRegistry& registry) {
  registry.add("", "DynamicQuantizeLinear", 11, dynamicQuantizeLinearKernel);
  // com.microsoft's QuantizeLinear and DequantizeLinear (opset 1) are ONNX's from opset 10, run
  // by the same kernels.
  for (const auto& [domain, since] : {std::pair{"", 10}, std::pair{"com.microsoft", 1}}) {
    registry.add(domain, "QuantizeLinear", since, quantizeLinearKernel);
    registry.add(domain, "DequantizeLinear", since, dequantizeLinearKernel);
  }
}

}  // namespace qopt::interp
