// Unary elementwise kernels: activations and math functions, over every numeric type they take.
// Kept apart from the binary ones (elementwise.cpp) because their templated loops, instantiated
// per element type at -O3, made one file a quarter of the interpreter's build time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "ArrayOps.h"
#include "KernelSupport.h"
#include "VectorMath.h"

namespace qopt::interp {

namespace {

/// out = f(x) for floating point x, or for any numeric x with `Numeric` (16-bit floats computed
/// in float, rounded back).
template <bool Numeric, class F>
void unaryMap(KernelContext& ctx, F f) {
  const Array& x = ctx.in(0);
  Array out(x.dataType(), x.shape());
  auto run = [&]<class T>(TypeTag<T>) {
    const T* in = x.data<T>();
    T* o = out.data<T>();
    parallelFor(ctx.pool, x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        o[i] = fromCompute<T>(static_cast<ComputeT<T>>(f(toCompute(in[i]))));
      }
    });
  };
  if constexpr (Numeric) {
    dispatchNumeric(x.dataType(), run);
  } else {
    dispatchFloat(x.dataType(), run);
  }
  ctx.outputs[0] = std::move(out);
}

template <class F>
void unaryFloat(KernelContext& ctx, F f) {
  unaryMap<false>(ctx, f);
}

template <class F>
void unaryNumeric(KernelContext& ctx, F f) {
  unaryMap<true>(ctx, f);
}

/// out = f(x) for floating point x, where float32 arrays go through `vectorF(in, out, n)` (exp
/// and erf through the vector math library) and other types through `f`.
template <class F>
void unaryFloatVectorized(KernelContext& ctx, void (*vectorF)(const float*, float*, int64_t), F f) {
  const Array& x = ctx.in(0);
  if (x.dataType() != DataType::Float) {
    unaryFloat(ctx, f);
    return;
  }
  Array out(x.dataType(), x.shape());
  const float* in = x.data<float>();
  float* o = out.data<float>();
  parallelFor(ctx.pool, x.numel(), kElementwiseGrain,
              [&](int64_t b, int64_t e) { vectorF(in + b, o + b, e - b); });
  ctx.outputs[0] = std::move(out);
}

/// Bool-valued predicate on floating point x (IsNaN, IsInf).
template <class F>
void predicateFloat(KernelContext& ctx, F f) {
  const Array& x = ctx.in(0);
  Array out(DataType::Bool, x.shape());
  bool* o = out.data<bool>();
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    const T* in = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = f(toCompute(in[i]));
  });
  ctx.outputs[0] = std::move(out);
}

template <class T>
T erfOf(T x) {
  return std::erf(x);
}

}  // namespace

void registerUnaryKernels(KernelRegistry& r) {
  auto addFloat = [&r](const char* op, int since, auto f) {
    r.add("", op, since, [f](KernelContext& ctx) { unaryFloat(ctx, f); });
  };
  addFloat("Sigmoid", 1, [](auto x) {
    using C = decltype(x);
    // Split by sign so exp never overflows.
    if (x >= 0) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  });
  addFloat("Tanh", 1, [](auto x) { return std::tanh(x); });
  r.add("", "Erf", 9, [](KernelContext& ctx) {
    unaryFloatVectorized(ctx, erfFloats, [](auto x) { return erfOf(x); });
  });
  r.add("", "Exp", 1, [](KernelContext& ctx) {
    unaryFloatVectorized(ctx, expFloats, [](auto x) { return std::exp(x); });
  });
  addFloat("Log", 1, [](auto x) { return std::log(x); });
  addFloat("Sqrt", 1, [](auto x) { return std::sqrt(x); });
  addFloat("Reciprocal", 1, [](auto x) { return decltype(x)(1) / x; });
  addFloat("Floor", 1, [](auto x) { return std::floor(x); });
  addFloat("Ceil", 1, [](auto x) { return std::ceil(x); });
  addFloat("Round", 11, [](auto x) { return std::nearbyint(x); });  // half to even
  addFloat("Sin", 7, [](auto x) { return std::sin(x); });
  addFloat("Cos", 7, [](auto x) { return std::cos(x); });
  addFloat("Tan", 7, [](auto x) { return std::tan(x); });
  addFloat("Asin", 7, [](auto x) { return std::asin(x); });
  addFloat("Acos", 7, [](auto x) { return std::acos(x); });
  addFloat("Atan", 7, [](auto x) { return std::atan(x); });
  addFloat("Sinh", 9, [](auto x) { return std::sinh(x); });
  addFloat("Cosh", 9, [](auto x) { return std::cosh(x); });
  addFloat("Asinh", 9, [](auto x) { return std::asinh(x); });
  addFloat("Acosh", 9, [](auto x) { return std::acosh(x); });
  addFloat("Atanh", 9, [](auto x) { return std::atanh(x); });
  addFloat("Softsign", 1, [](auto x) { return x / (decltype(x)(1) + std::abs(x)); });
  addFloat("Softplus", 1, [](auto x) {
    // log(1 + e^x) without overflow for large x.
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  });
  addFloat("HardSwish", 14, [](auto x) {
    using C = decltype(x);
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  });

  // Activations with float attributes, which f takes in x's compute type: f(x, alpha) and
  // f(x, first, second).
  auto addWithAlpha = [&r](const char* op, int since, float alphaDefault, auto f) {
    r.add("", op, since, [=](KernelContext& ctx) {
      const double alpha = ctx.node.attrFloat("alpha", alphaDefault);
      unaryFloat(ctx, [=](auto x) { return f(x, static_cast<decltype(x)>(alpha)); });
    });
  };
  using FloatAttr = std::pair<const char*, float>;  // name, default
  auto addWithTwo = [&r](const char* op, int since, FloatAttr first, FloatAttr second, auto f) {
    r.add("", op, since, [=](KernelContext& ctx) {
      const double a = ctx.node.attrFloat(first.first, first.second);
      const double b = ctx.node.attrFloat(second.first, second.second);
      unaryFloat(ctx, [=](auto x) {
        using C = decltype(x);
        return f(x, static_cast<C>(a), static_cast<C>(b));
      });
    });
  };
  addWithAlpha("LeakyRelu", 6, 0.01f, [](auto x, auto alpha) { return x >= 0 ? x : alpha * x; });
  addWithTwo("HardSigmoid", 6, {"alpha", 0.2f}, {"beta", 0.5f}, [](auto x, auto alpha, auto beta) {
    using C = decltype(x);
    return std::max(C(0), std::min(C(1), alpha * x + beta));
  });
  addWithAlpha("Elu", 6, 1.0f, [](auto x, auto alpha) {
    return x >= 0 ? x : alpha * (std::exp(x) - decltype(x)(1));
  });
  addWithTwo("Selu", 6, {"alpha", 1.67326319217681884765625f},
             {"gamma", 1.05070102214813232421875f},
             [](auto x, auto a, auto g) { return x > 0 ? g * x : g * (a * std::exp(x) - a); });
  addWithAlpha("Celu", 12, 1.0f, [](auto x, auto a) {
    using C = decltype(x);
    return std::max(C(0), x) + std::min(C(0), a * (std::exp(x / a) - C(1)));
  });
  addWithAlpha("ThresholdedRelu", 10, 1.0f,
               [](auto x, auto alpha) { return x > alpha ? x : decltype(x)(0); });
  r.add("", "Shrink", 9, [](KernelContext& ctx) {
    double bias = ctx.node.attrFloat("bias", 0.0f);
    double lambd = ctx.node.attrFloat("lambd", 0.5f);
    unaryNumeric(ctx, [bias, lambd](auto x) {
      using C = decltype(x);
      auto v = static_cast<double>(x);
      return static_cast<C>(v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0));
    });
  });
  r.add("", "Gelu", 20, [](KernelContext& ctx) {
    std::string approximate = ctx.node.attrString("approximate", "none");
    if (approximate == "tanh") {
      unaryFloat(ctx, [](auto x) {
        using C = decltype(x);
        const C k = static_cast<C>(0.7978845608028654);  // sqrt(2 / pi)
        return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
      });
    } else if (approximate == "none") {
      auto gelu = [](auto x) {
        using C = decltype(x);
        return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
      };
      // float32: the same formula with erf over blocks of the array.
      auto geluFloats = [](const float* x, float* y, int64_t n) {
        constexpr int64_t kBlock = 256;
        float t[kBlock];
        for (int64_t b = 0; b < n; b += kBlock) {
          const int64_t m = std::min(kBlock, n - b);
          for (int64_t i = 0; i < m; ++i) t[i] = x[b + i] * 0.7071067811865476f;
          erfFloats(t, t, m);
          for (int64_t i = 0; i < m; ++i) y[b + i] = 0.5f * x[b + i] * (1.0f + t[i]);
        }
      };
      unaryFloatVectorized(ctx, +geluFloats, gelu);
    } else {
      ctx.fail(fmt::format("unknown approximate '{}' (none or tanh)", approximate));
    }
  });

  // Numeric (integers too).
  r.add("", "Relu", 1, [](KernelContext& ctx) {
    unaryNumeric(ctx, [](auto x) { return x > 0 ? x : decltype(x)(0); });
  });
  r.add("", "Abs", 1, [](KernelContext& ctx) {
    unaryNumeric(ctx, [](auto x) {
      if constexpr (std::is_unsigned_v<decltype(x)>) {
        return x;
      } else {
        return x < 0 ? -x : x;
      }
    });
  });
  r.add("", "Neg", 1, [](KernelContext& ctx) {
    unaryNumeric(ctx, [](auto x) {
      using C = decltype(x);
      if constexpr (std::is_integral_v<C>) {
        // Two's complement wrap (INT_MIN stays INT_MIN) without signed overflow.
        using U = std::make_unsigned_t<C>;
        return static_cast<C>(U(0) - static_cast<U>(x));
      } else {
        return -x;
      }
    });
  });
  r.add("", "Sign", 9, [](KernelContext& ctx) {
    unaryNumeric(ctx, [](auto x) {
      using C = decltype(x);
      return static_cast<C>(x > 0 ? 1 : (x < 0 ? -1 : 0));
    });
  });

  r.add("", "IsNaN", 9,
        [](KernelContext& ctx) { predicateFloat(ctx, [](auto x) { return std::isnan(x); }); });
  r.add("", "IsInf", 10, [](KernelContext& ctx) {
    bool negative = ctx.node.attrInt("detect_negative", 1) != 0;
    bool positive = ctx.node.attrInt("detect_positive", 1) != 0;
    predicateFloat(
        ctx, [=](auto x) { return std::isinf(x) && ((x > 0 && positive) || (x < 0 && negative)); });
  });
  r.add("", "Not", 1, [](KernelContext& ctx) {
    const Array& x = ctx.in(0);
    if (x.dataType() != DataType::Bool) ctx.fail("Not takes a bool tensor");
    Array out(DataType::Bool, x.shape());
    const bool* in = x.data<bool>();
    bool* o = out.data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = !in[i];
    ctx.outputs[0] = std::move(out);
  });
  r.add("", "BitwiseNot", 18, [](KernelContext& ctx) {
    const Array& x = ctx.in(0);
    Array out(x.dataType(), x.shape());
    dispatchInteger(x.dataType(), [&]<class T>(TypeTag<T>) {
      const T* in = x.data<T>();
      T* o = out.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<T>(~in[i]);
    });
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace qopt::interp
