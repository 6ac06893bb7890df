// Cast/CastLike, Constant, ConstantOfShape, Range, Dropout (inference), EyeLike, NonZero, Trilu,
// OneHot and Einsum.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "ArrayOps.h"
#include "KernelSupport.h"

namespace qopt::interp {

namespace {

// ---------------------------------------------------------------------------------------------
// Cast

bool isMiniFloat(DataType t) {
  return t == DataType::Float8E4M3FN || t == DataType::Float8E4M3FNUZ ||
         t == DataType::Float8E5M2 || t == DataType::Float8E5M2FNUZ || t == DataType::Float4E2M1;
}

/// Decoding tables and a nearest-value encoder for the 8- and 4-bit float formats.
class MiniFloatCodec {
 public:
  explicit MiniFloatCodec(DataType type) : type_(type) {
    int codes = type == DataType::Float4E2M1 ? 16 : 256;
    Tensor all(type, {codes});
    std::vector<std::byte> bytes;
    if (type == DataType::Float4E2M1) {
      for (int i = 0; i < 16; i += 2) bytes.push_back(static_cast<std::byte>(i | ((i + 1) << 4)));
    } else {
      for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<std::byte>(i));
    }
    all.setRawBytes(std::move(bytes));
    decode_ = all.toDoubles();
    int signBit = codes / 2;
    for (int code = 0; code < signBit; ++code) {
      double v = decode_[static_cast<size_t>(code)];
      if (std::isfinite(v)) positive_.push_back({v, code});
      if (std::isnan(v) && nanCode_ < 0) nanCode_ = code;
      if (std::isinf(v)) infCode_ = code;
    }
    for (int code = signBit; code < codes && nanCode_ < 0; ++code) {
      if (std::isnan(decode_[static_cast<size_t>(code)])) nanCode_ = code;
    }
    std::sort(positive_.begin(), positive_.end());
    signBit_ = signBit;
    fnuz_ = type == DataType::Float8E4M3FNUZ || type == DataType::Float8E5M2FNUZ;
  }

  double decode(uint8_t code) const { return decode_[code]; }

  /// Round to nearest, ties to the even code. Out of range: the largest finite value when
  /// saturating, else infinity (when the format has one) or NaN.
  uint8_t encode(double value, bool saturate) const {
    if (std::isnan(value)) return static_cast<uint8_t>(nanCode_ >= 0 ? nanCode_ : 0);
    bool negative = std::signbit(value);
    double magnitude = std::fabs(value);
    const auto& [maxValue, maxCode] = positive_.back();
    int code;
    if (magnitude > maxValue) {
      double ulp = maxValue - positive_[positive_.size() - 2].first;
      bool overflows = std::isinf(magnitude) || magnitude >= maxValue + ulp / 2;
      if (saturate || !overflows) {
        code = maxCode;
      } else if (infCode_ >= 0) {
        code = infCode_;
      } else {
        return static_cast<uint8_t>(nanCode_ >= 0 ? nanCode_ : maxCode);
      }
    } else {
      auto it = std::lower_bound(positive_.begin(), positive_.end(),
                                 std::pair<double, int>{magnitude, -1});
      if (it == positive_.begin()) {
        code = it->second;
      } else {
        auto below = std::prev(it);
        double dBelow = magnitude - below->first;
        double dAbove = it->first - magnitude;
        if (dBelow < dAbove) {
          code = below->second;
        } else if (dAbove < dBelow) {
          code = it->second;
        } else {
          code = (below->second % 2 == 0) ? below->second : it->second;
        }
      }
    }
    if (negative && !(fnuz_ && code == 0)) code |= signBit_;
    return static_cast<uint8_t>(code);
  }

  static const MiniFloatCodec& of(DataType type) {
    static std::mutex mutex;
    static std::map<DataType, std::unique_ptr<MiniFloatCodec>> codecs;
    std::lock_guard lock(mutex);
    auto& codec = codecs[type];
    if (!codec) codec = std::make_unique<MiniFloatCodec>(type);
    return *codec;
  }

 private:
  DataType type_;
  std::vector<double> decode_;
  std::vector<std::pair<double, int>> positive_;
  int nanCode_ = -1;
  int infCode_ = -1;
  int signBit_ = 128;
  bool fnuz_ = false;
};

/// double -> float rounding to odd, so a second rounding to a narrower format is exact-correct.
float toFloatRoundOdd(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(f) || static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) {
    f = std::nextafter(f, 0.0f);
  }
  uint32_t bits = std::bit_cast<uint32_t>(f);
  return std::bit_cast<float>(bits | 1u);
}

/// Converts one element; integers from floats truncate toward zero and saturate (NaN -> 0).
template <class D, class S>
D convertValue(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return toCompute(v) != 0;
  } else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
    float f;
    if constexpr (std::is_same_v<S, double>) {
      f = toFloatRoundOdd(v);
    } else if constexpr (std::is_same_v<S, bool>) {
      f = v ? 1.0f : 0.0f;
    } else {
      f = static_cast<float>(toCompute(v));
    }
    return fromCompute<D>(f);
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(toCompute(v));
  } else if constexpr (kIsFloat<S>) {
    double d = static_cast<double>(toCompute(v));
    if (std::isnan(d)) return D(0);
    d = std::trunc(d);
    if (d <= static_cast<double>(std::numeric_limits<D>::lowest()))
      return std::numeric_limits<D>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<D>::max()))
      return std::numeric_limits<D>::max();
    return static_cast<D>(d);
  } else {
    return static_cast<D>(v);  // integer to integer wraps, as numpy's astype
  }
}

std::string formatNumber(double v, DataType from) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buffer[64];
  std::to_chars_result r;
  if (from == DataType::Double) {
    r = std::to_chars(buffer, buffer + sizeof buffer, v);
  } else if (isFloatingPoint(from)) {
    r = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(v));
  } else {
    r = std::to_chars(buffer, buffer + sizeof buffer, static_cast<int64_t>(v));
  }
  return std::string(buffer, r.ptr);
}

Array castArray(KernelContext& ctx, const Array& x, DataType to, bool saturate) {
  DataType from = x.dataType();
  if (from == to) return x;
  Array out(to, x.shape());
  int64_t n = x.numel();
  if (from == DataType::String || to == DataType::String) {
    if (from == DataType::String) {
      // Parse as double, then convert: "inf", "-INF", "NaN" are accepted like numpy.
      Array wide(DataType::Double, x.shape());
      for (int64_t i = 0; i < n; ++i) {
        const std::string& s = x.strings()[static_cast<size_t>(i)];
        char* end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str())
          ctx.fail(fmt::format("cannot convert the string '{}' to a number", s));
        wide.data<double>()[i] = v;
      }
      return castArray(ctx, wide, to, saturate);
    }
    for (int64_t i = 0; i < n; ++i) {
      out.strings()[static_cast<size_t>(i)] = formatNumber(x.getDouble(i), from);
    }
    return out;
  }
  if (isMiniFloat(from) || isMiniFloat(to) || from == DataType::Int4 || from == DataType::UInt4 ||
      to == DataType::Int4 || to == DataType::UInt4) {
    // Through double: these formats are small and rare in compute paths.
    Array wide(DataType::Double, x.shape());
    double* w = wide.data<double>();
    if (isMiniFloat(from)) {
      const MiniFloatCodec& codec = MiniFloatCodec::of(from);
      for (int64_t i = 0; i < n; ++i) w[i] = codec.decode(x.data<uint8_t>()[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) w[i] = x.getDouble(i);
    }
    if (isMiniFloat(to)) {
      const MiniFloatCodec& codec = MiniFloatCodec::of(to);
      for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = codec.encode(w[i], saturate);
    } else if (to == DataType::Int4 || to == DataType::UInt4) {
      double lo = to == DataType::Int4 ? -8 : 0;
      double hi = to == DataType::Int4 ? 7 : 15;
      for (int64_t i = 0; i < n; ++i) {
        double v = std::isnan(w[i]) ? 0 : std::clamp(std::trunc(w[i]), lo, hi);
        out.data<int8_t>()[i] = static_cast<int8_t>(v);
      }
    } else {
      return castArray(ctx, wide, to, saturate);
    }
    return out;
  }
  dispatchNumericOrBool(from, [&]<class S>(TypeTag<S>) {
    dispatchNumericOrBool(to, [&]<class D>(TypeTag<D>) {
      const S* in = x.data<S>();
      D* o = out.data<D>();
      parallelFor(ctx.pool, n, kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = convertValue<D>(in[i]);
      });
    });
  });
  return out;
}

void cast(KernelContext& ctx) {
  int64_t to = ctx.node.attrInt("to", 0);
  std::optional<DataType> type = dataTypeFromInt(to);
  if (!type || *type == DataType::Undefined) ctx.fail(fmt::format("unknown target type {}", to));
  bool saturate = ctx.opset < 19 || ctx.node.attrInt("saturate", 1) != 0;
  ctx.outputs[0] = castArray(ctx, ctx.in(0), *type, saturate);
}

void castLike(KernelContext& ctx) {
  bool saturate = ctx.opset < 19 || ctx.node.attrInt("saturate", 1) != 0;
  ctx.outputs[0] = castArray(ctx, ctx.in(0), ctx.in(1).dataType(), saturate);
}

// ---------------------------------------------------------------------------------------------
// Constants

void constant(KernelContext& ctx) {
  const Node& node = ctx.node;
  if (node.attributes().size() != 1) ctx.fail("exactly one value attribute is required");
  const Attribute& a = node.attributes().front();
  auto floats = [](const std::vector<float>& v, Shape shape) {
    Array out(DataType::Float, std::move(shape));
    std::copy(v.begin(), v.end(), out.data<float>());
    return out;
  };
  auto ints = [](const std::vector<int64_t>& v, Shape shape) {
    Array out(DataType::Int64, std::move(shape));
    std::copy(v.begin(), v.end(), out.data<int64_t>());
    return out;
  };
  if (a.name == "value" && a.kind == AttrKind::Tensor && a.t) {
    ctx.outputs[0] = Array::fromTensor(*a.t);
  } else if (a.name == "value_float") {
    ctx.outputs[0] = floats({a.f}, {});
  } else if (a.name == "value_floats") {
    ctx.outputs[0] = floats(a.floats, {static_cast<int64_t>(a.floats.size())});
  } else if (a.name == "value_int") {
    ctx.outputs[0] = ints({a.i}, {});
  } else if (a.name == "value_ints") {
    ctx.outputs[0] = ints(a.ints, {static_cast<int64_t>(a.ints.size())});
  } else if (a.name == "value_string") {
    Array out(DataType::String, {});
    out.strings()[0] = a.s;
    ctx.outputs[0] = std::move(out);
  } else if (a.name == "value_strings") {
    Array out(DataType::String, {static_cast<int64_t>(a.strings.size())});
    out.strings() = a.strings;
    ctx.outputs[0] = std::move(out);
  } else {
    ctx.fail(fmt::format("unsupported value attribute '{}'", a.name));
  }
}

void constantOfShape(KernelContext& ctx) {
  std::vector<int64_t> dims = ctx.in(0).toInt64Vector();
  Array value = Array::scalar(DataType::Float, 0.0f);
  if (const Attribute* a = ctx.node.findAttr("value")) {
    if (a->kind != AttrKind::Tensor || !a->t) ctx.fail("value must be a tensor");
    value = Array::fromTensor(*a->t);
    if (value.numel() != 1) ctx.fail("value must have one element");
  }
  Array out(value.dataType(), Shape(dims.begin(), dims.end()));
  for (int64_t i = 0; i < out.numel(); ++i) copyElements(value, 0, out, i, 1);
  ctx.outputs[0] = std::move(out);
}

void range(KernelContext& ctx) {
  const Array& start = ctx.in(0);
  const Array& limit = ctx.in(1);
  const Array& delta = ctx.in(2);
  DataType type = start.dataType();
  if (limit.dataType() != type || delta.dataType() != type) ctx.fail("inputs must have one type");
  ctx.outputs[0] = dispatchNumeric(type, [&]<class T>(TypeTag<T>) {
    using C = ComputeT<T>;
    if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) {
      ctx.fail("start, limit and delta must be scalars");
    }
    C s = toCompute(start.data<T>()[0]);
    C l = toCompute(limit.data<T>()[0]);
    C d = toCompute(delta.data<T>()[0]);
    if (d == 0) ctx.fail("delta must not be 0");
    double count =
        std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d));
    if (!(count >= 0)) count = 0;
    if (count > 1e12) ctx.fail("the range is too long");
    auto n = static_cast<int64_t>(count);
    Array out(type, {n});
    T* o = out.data<T>();
    C v = s;
    for (int64_t i = 0; i < n; ++i) {
      o[i] = fromCompute<T>(v);
      v = static_cast<C>(v + d);  // the spec defines each element as the previous plus delta
    }
    return out;
  });
}

void dropout(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (ctx.opset >= 12) {
    double ratio = ctx.optIn(1) ? scalarValue(*ctx.optIn(1), "ratio") : 0.5;
    bool training = ctx.optIn(2) && scalarValue(*ctx.optIn(2), "training_mode") != 0;
    if (training && ratio != 0) {
      ctx.fail("training-mode Dropout is random; only inference (or ratio 0) is supported");
    }
  }
  ctx.outputs[0] = x;
  if (ctx.outputs.size() > 1) {
    // Opset 10+ returns a bool mask; older opsets a mask of the input's type.
    DataType maskType = ctx.opset >= 10 ? DataType::Bool : x.dataType();
    Array mask(maskType, x.shape());
    if (maskType == DataType::Bool) {
      std::fill_n(mask.data<bool>(), mask.numel(), true);
    } else {
      dispatchNumeric(maskType, [&]<class T>(TypeTag<T>) {
        std::fill_n(mask.data<T>(), mask.numel(), fromCompute<T>(static_cast<ComputeT<T>>(1)));
      });
    }
    ctx.outputs[1] = std::move(mask);
  }
}

void eyeLike(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (x.rank() != 2) ctx.fail("the input must be 2-D");
  DataType type = x.dataType();
  if (const Attribute* a = ctx.node.findAttr("dtype")) {
    auto t = dataTypeFromInt(a->i);
    if (!t) ctx.fail(fmt::format("unknown dtype {}", a->i));
    type = *t;
  }
  int64_t k = ctx.node.attrInt("k", 0);
  Array out = Array::zeros(type, x.shape());
  dispatchNumericOrBool(type, [&]<class T>(TypeTag<T>) {
    T one;
    if constexpr (std::is_same_v<T, bool>) {
      one = true;
    } else {
      one = fromCompute<T>(static_cast<ComputeT<T>>(1));
    }
    for (int64_t r = 0; r < x.shape()[0]; ++r) {
      int64_t c = r + k;
      if (c >= 0 && c < x.shape()[1]) out.data<T>()[r * x.shape()[1] + c] = one;
    }
  });
  ctx.outputs[0] = std::move(out);
}

void nonZero(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.getDouble(i) != 0) hits.push_back(i);
  }
  int64_t rank = x.rank();
  int64_t n = static_cast<int64_t>(hits.size());
  Array out(DataType::Int64, {rank, n});
  std::vector<int64_t> strides = contiguousStrides(x.shape());
  for (int64_t j = 0; j < n; ++j) {
    int64_t rest = hits[static_cast<size_t>(j)];
    for (int64_t d = 0; d < rank; ++d) {
      out.data<int64_t>()[d * n + j] = rest / strides[d];
      rest %= strides[d];
    }
  }
  ctx.outputs[0] = std::move(out);
}

void trilu(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (x.rank() < 2) ctx.fail("the input must have rank 2 or more");
  int64_t k = ctx.optIn(1) ? static_cast<int64_t>(scalarValue(*ctx.optIn(1), "k")) : 0;
  bool upper = ctx.node.attrInt("upper", 1) != 0;
  int64_t rows = x.shape()[x.rank() - 2];
  int64_t cols = x.shape()[x.rank() - 1];
  Array out = Array::zeros(x.dataType(), x.shape());
  int64_t batches = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        bool keep = upper ? c - r >= k : c - r <= k;
        int64_t i = (b * rows + r) * cols + c;
        if (keep) copyElements(x, i, out, i, 1);
      }
    }
  }
  ctx.outputs[0] = std::move(out);
}

void oneHot(KernelContext& ctx) {
  const Array& indices = ctx.in(0);
  int64_t depth = static_cast<int64_t>(scalarValue(ctx.in(1), "depth"));
  const Array& values = ctx.in(2);
  if (values.numel() != 2) ctx.fail("values must have two elements (off, on)");
  if (depth < 0) ctx.fail("depth must not be negative");
  int64_t rank = indices.rank() + 1;
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", -1), rank);
  Shape shape = indices.shape();
  shape.insert(shape.begin() + axis, depth);
  Array out(values.dataType(), shape);
  int64_t outer = product(indices.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(indices.shape(), static_cast<size_t>(axis));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t i = 0; i < inner; ++i) {
        auto index = static_cast<int64_t>(indices.getDouble(o * inner + i));
        if (index < 0) index += depth;
        copyElements(values, index == d ? 1 : 0, out, (o * depth + d) * inner + i, 1);
      }
    }
  }
  ctx.outputs[0] = std::move(out);
}

}  // namespace

// Einsum and NonMaxSuppression have their own files (ops/einsum.cpp, ops/detection.cpp) and
// join this group.
void registerEinsumKernel(KernelRegistry& r);
void registerDetectionKernels(KernelRegistry& r);

void registerMiscKernels(KernelRegistry& r) {
  r.add({
      {"Cast", 6, cast},
      {"CastLike", 15, castLike},
      {"Constant", 1, constant},
      {"ConstantOfShape", 9, constantOfShape},
      {"Range", 11, range},
      {"Dropout", 1, dropout},
      {"EyeLike", 9, eyeLike},
      {"NonZero", 9, nonZero},
      {"Trilu", 14, trilu},
      {"OneHot", 9, oneHot},
  });
  registerEinsumKernel(r);
  registerDetectionKernels(r);
}

}  // namespace qopt::interp
