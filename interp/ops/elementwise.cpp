// Elementwise kernels: arithmetic, comparisons, logic, Where, Clip and the variadic
// Min/Max/Sum/Mean (unary.cpp has the activations and math functions). Every binary op broadcasts
// multidirectionally; loops are templated on the element type so the per-element operation inlines.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ArrayOps.h"
#include "Broadcast.h"
#include "KernelSupport.h"
#include "VectorMath.h"

namespace qopt::interp {

namespace {

// ---------------------------------------------------------------------------------------------
// Binary

/// out = op(a, b) on storage types A, B, O over the broadcast of a and b.
template <class A, class B, class O, class Op>
Array binaryArrays(KernelContext& ctx, const Array& a, const Array& b, DataType outType, Op op) {
  Shape shape = broadcastShapes(a.shape(), b.shape());
  Array out(outType, shape);
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  BroadcastLoop loop(shapes, shape);
  binaryBroadcast(loop, a.data<A>(), b.data<B>(), out.data<O>(), op, ctx.pool);
  return out;
}

void requireSameType(KernelContext& ctx, const Array& a, const Array& b) {
  if (a.dataType() != b.dataType()) {
    ctx.fail(fmt::format("input types differ: {} and {}", dataTypeName(a.dataType()),
                         dataTypeName(b.dataType())));
  }
}

/// Arithmetic: output type = input type; op works on compute values.
template <class Op>
Array arithmetic(KernelContext& ctx, const Array& a, const Array& b, Op op) {
  requireSameType(ctx, a, b);
  return dispatchNumeric(a.dataType(), [&]<class T>(TypeTag<T>) {
    return binaryArrays<T, T, T>(ctx, a, b, a.dataType(), [op](T x, T y) {
      return fromCompute<T>(static_cast<ComputeT<T>>(op(toCompute(x), toCompute(y))));
    });
  });
}

template <class Op>
void addArithmetic(KernelRegistry& r, const char* name, int since, Op op) {
  r.add("", name, since,
        [op](KernelContext& ctx) { ctx.outputs[0] = arithmetic(ctx, ctx.in(0), ctx.in(1), op); });
}

/// Integer division truncating toward zero (C semantics, as ONNX Runtime); division by zero is
/// an error rather than a crash, and INT_MIN / -1 wraps.
template <class C>
C divide(C x, C y) {
  if constexpr (std::is_integral_v<C>) {
    if (y == 0) throw Error("integer division by zero");
    if constexpr (std::is_signed_v<C>) {
      if (y == -1) {
        using U = std::make_unsigned_t<C>;
        return static_cast<C>(U(0) - static_cast<U>(x));
      }
    }
    return static_cast<C>(x / y);
  } else {
    return x / y;
  }
}

template <class C>
C modulo(C x, C y, bool fmod) {
  if constexpr (std::is_integral_v<C>) {
    if (y == 0) throw Error("integer modulo by zero");
    if constexpr (std::is_signed_v<C>) {
      if (y == -1) return 0;
      C r = static_cast<C>(x % y);
      if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
      return r;
    } else {
      return static_cast<C>(x % y);
    }
  } else {
    C r = std::fmod(x, y);
    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  }
}

/// Comparison: bool output.
template <class Op>
Array compare(KernelContext& ctx, const Array& a, const Array& b, Op op) {
  requireSameType(ctx, a, b);
  return dispatchNumericOrBool(a.dataType(), [&]<class T>(TypeTag<T>) {
    return binaryArrays<T, T, bool>(ctx, a, b, DataType::Bool, [op](T x, T y) {
      return static_cast<bool>(op(toCompute(x), toCompute(y)));
    });
  });
}

template <class Op>
void addComparison(KernelRegistry& r, const char* name, int since, Op op) {
  r.add("", name, since, [op](KernelContext& ctx) {
    const Array& a = ctx.in(0);
    const Array& b = ctx.in(1);
    if (a.dataType() == DataType::String && b.dataType() == DataType::String) {
      Shape shape = broadcastShapes(a.shape(), b.shape());
      Array out(DataType::Bool, shape);
      const Shape* shapes[] = {&a.shape(), &b.shape()};
      BroadcastLoop loop(shapes, shape);
      loop.forRows(0, loop.rows(), [&](int64_t off, const int64_t* offs) {
        for (int64_t i = 0; i < loop.innerSize(); ++i) {
          const std::string& x =
              a.strings()[static_cast<size_t>(offs[0] + i * loop.innerStride(0))];
          const std::string& y =
              b.strings()[static_cast<size_t>(offs[1] + i * loop.innerStride(1))];
          out.data<bool>()[off + i] = op(x, y);
        }
      });
      ctx.outputs[0] = std::move(out);
      return;
    }
    ctx.outputs[0] = compare(ctx, a, b, op);
  });
}

template <class Op>
void addLogical(KernelRegistry& r, const char* name, Op op) {
  r.add("", name, 7, [op](KernelContext& ctx) {
    const Array& a = ctx.in(0);
    const Array& b = ctx.in(1);
    if (a.dataType() != DataType::Bool || b.dataType() != DataType::Bool) {
      ctx.fail("logical ops take bool tensors");
    }
    ctx.outputs[0] = binaryArrays<bool, bool, bool>(ctx, a, b, DataType::Bool, op);
  });
}

template <class Op>
void addBitwise(KernelRegistry& r, const char* name, Op op) {
  r.add("", name, 18, [op](KernelContext& ctx) {
    const Array& a = ctx.in(0);
    const Array& b = ctx.in(1);
    requireSameType(ctx, a, b);
    ctx.outputs[0] = dispatchInteger(a.dataType(), [&]<class T>(TypeTag<T>) {
      return binaryArrays<T, T, T>(ctx, a, b, a.dataType(),
                                   [op](T x, T y) { return static_cast<T>(op(x, y)); });
    });
  });
}

/// Pow's exponent as int64, uint64 or double: each exponent value keeps its value exactly, and
/// every use below converts it on to the base's compute type as the original type would. One
/// loop per base type and these three exponent types, instead of one per pair of the twelve
/// numeric types, keeps the file's compile time in bounds.
Array widenExponent(const Array& exponent) {
  const DataType from = exponent.dataType();
  const DataType to = isFloatingPoint(from)      ? DataType::Double
                      : from == DataType::UInt64 ? DataType::UInt64
                                                 : DataType::Int64;
  if (from == to) return exponent;
  Array wide(to, exponent.shape());
  dispatchNumeric(from, [&]<class E>(TypeTag<E>) {
    const E* in = exponent.data<E>();
    auto convert = [&]<class W>(W* out) {
      for (int64_t i = 0; i < exponent.numel(); ++i) out[i] = static_cast<W>(toCompute(in[i]));
    };
    if (to == DataType::Double) {
      convert(wide.data<double>());
    } else {
      convert(wide.data<int64_t>());
    }
  });
  return wide;
}

/// Calls fn(TypeTag<E>{}) for the three types widenExponent returns.
template <class Fn>
decltype(auto) dispatchWideExponent(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::Double:
      return fn(TypeTag<double>{});
    case DataType::UInt64:
      return fn(TypeTag<uint64_t>{});
    default:
      return fn(TypeTag<int64_t>{});
  }
}

void pow(KernelContext& ctx) {
  const Array& base = ctx.in(0);
  ctx.outputs[0] = dispatchNumeric(base.dataType(), [&]<class T>(TypeTag<T>) {
    const Array exponent = widenExponent(ctx.in(1));
    return dispatchWideExponent(exponent.dataType(), [&]<class E>(TypeTag<E>) {
      return binaryArrays<T, E, T>(ctx, base, exponent, base.dataType(), [](T x, E y) {
        using C = ComputeT<T>;
        if constexpr (std::is_integral_v<C> && std::is_integral_v<ComputeT<E>>) {
          // Exact integer power by squaring (wrapping like numpy); negative exponents truncate.
          // toCompute/fromCompute are the identity here; they keep clang 14, which compiles
          // this discarded branch for float16 too, from failing.
          int64_t e = static_cast<int64_t>(toCompute(y));
          if (e < 0) {
            int64_t bx = static_cast<int64_t>(toCompute(x));
            return fromCompute<T>(
                static_cast<C>(bx == 1 ? 1 : (bx == -1 ? (e % 2 == 0 ? 1 : -1) : 0)));
          }
          uint64_t result = 1;
          auto b = static_cast<uint64_t>(static_cast<int64_t>(toCompute(x)));
          while (e > 0) {
            if (e & 1) result *= b;
            b *= b;
            e >>= 1;
          }
          return fromCompute<T>(static_cast<C>(result));
        } else if constexpr (std::is_integral_v<C>) {
          double v = std::pow(static_cast<double>(x), static_cast<double>(toCompute(y)));
          return static_cast<T>(static_cast<int64_t>(v));
        } else {
          return fromCompute<T>(
              static_cast<C>(std::pow(static_cast<C>(toCompute(x)), static_cast<C>(toCompute(y)))));
        }
      });
    });
  });
}

void bitShift(KernelContext& ctx) {
  std::string direction = ctx.node.attrString("direction");
  if (direction != "LEFT" && direction != "RIGHT") {
    ctx.fail(fmt::format("direction must be LEFT or RIGHT, got '{}'", direction));
  }
  bool left = direction == "LEFT";
  const Array& a = ctx.in(0);
  const Array& b = ctx.in(1);
  requireSameType(ctx, a, b);
  ctx.outputs[0] = dispatchInteger(a.dataType(), [&]<class T>(TypeTag<T>) {
    return binaryArrays<T, T, T>(ctx, a, b, a.dataType(), [left](T x, T y) {
      auto shift = static_cast<uint64_t>(y);
      if (shift >= sizeof(T) * 8) return T(0);
      return left ? static_cast<T>(x << shift) : static_cast<T>(x >> shift);
    });
  });
}

void prelu(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Array& slope = ctx.in(1);
  requireSameType(ctx, x, slope);
  Array out = dispatchNumeric(x.dataType(), [&]<class T>(TypeTag<T>) {
    return binaryArrays<T, T, T>(ctx, x, slope, x.dataType(), [](T v, T s) {
      auto cv = toCompute(v);
      return cv < 0 ? fromCompute<T>(static_cast<ComputeT<T>>(cv * toCompute(s))) : v;
    });
  });
  if (out.shape() != x.shape()) {
    ctx.fail(fmt::format("slope of shape {} does not broadcast to X's shape {}",
                         shapeString(slope.shape()), shapeString(x.shape())));
  }
  ctx.outputs[0] = std::move(out);
}

void registerBinary(KernelRegistry& r) {
  addArithmetic(r, "Add", 7, [](auto x, auto y) { return x + y; });
  addArithmetic(r, "Sub", 7, [](auto x, auto y) { return x - y; });
  addArithmetic(r, "Mul", 7, [](auto x, auto y) { return x * y; });
  addArithmetic(r, "Div", 7, [](auto x, auto y) { return divide(x, y); });
  r.add("", "Mod", 10, [](KernelContext& ctx) {
    bool fmod = ctx.node.attrInt("fmod", 0) != 0;
    ctx.outputs[0] = arithmetic(ctx, ctx.in(0), ctx.in(1),
                                [fmod](auto x, auto y) { return modulo(x, y, fmod); });
  });
  r.add("", "Pow", 7, pow);
  r.add("", "PRelu", 7, prelu);
  r.add("", "BitShift", 11, bitShift);
  addBitwise(r, "BitwiseAnd", [](auto x, auto y) { return x & y; });
  addBitwise(r, "BitwiseOr", [](auto x, auto y) { return x | y; });
  addBitwise(r, "BitwiseXor", [](auto x, auto y) { return x ^ y; });

  addComparison(r, "Equal", 7, [](const auto& x, const auto& y) { return x == y; });
  addComparison(r, "Less", 7, [](const auto& x, const auto& y) { return x < y; });
  addComparison(r, "Greater", 7, [](const auto& x, const auto& y) { return x > y; });
  addComparison(r, "LessOrEqual", 12, [](const auto& x, const auto& y) { return x <= y; });
  addComparison(r, "GreaterOrEqual", 12, [](const auto& x, const auto& y) { return x >= y; });

  addLogical(r, "And", [](bool x, bool y) { return x && y; });
  addLogical(r, "Or", [](bool x, bool y) { return x || y; });
  addLogical(r, "Xor", [](bool x, bool y) { return x != y; });
}

// ---------------------------------------------------------------------------------------------
// Variadic, Where, Clip

template <class Op>
void addVariadic(KernelRegistry& r, const char* name, int since, bool mean, Op op) {
  r.add("", name, since, [op, mean](KernelContext& ctx) {
    size_t n = ctx.numInputs();
    if (n == 0) ctx.fail("needs at least one input");
    Array acc = ctx.in(0);
    for (size_t i = 1; i < n; ++i) acc = arithmetic(ctx, acc, ctx.in(i), op);
    if (n == 1) {
      acc = arithmetic(ctx, acc, acc, [](auto x, auto) { return x; });  // a fresh copy
    }
    if (mean) {
      Array count = dispatchFloat(acc.dataType(), [&]<class T>(TypeTag<T>) {
        return Array::scalar(acc.dataType(), fromCompute<T>(static_cast<ComputeT<T>>(n)));
      });
      acc = arithmetic(ctx, acc, count, [](auto x, auto y) { return x / y; });
    }
    ctx.outputs[0] = std::move(acc);
  });
}

template <class W>
void whereLoop(const BroadcastLoop& loop, const bool* c, const W* x, const W* y, W* o,
               ThreadPool* pool) {
  int64_t n = loop.innerSize();
  int64_t sc = loop.innerStride(0), sx = loop.innerStride(1), sy = loop.innerStride(2);
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1));
  parallelFor(pool, loop.rows(), grain, [&](int64_t r0, int64_t r1) {
    loop.forRows(r0, r1, [&](int64_t off, const int64_t* offs) {
      const bool* pc = c + offs[0];
      const W* px = x + offs[1];
      const W* py = y + offs[2];
      W* po = o + off;
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
    });
  });
}

void where(KernelContext& ctx) {
  const Array& cond = ctx.in(0);
  const Array& x = ctx.in(1);
  const Array& y = ctx.in(2);
  if (cond.dataType() != DataType::Bool) ctx.fail("the condition must be a bool tensor");
  requireSameType(ctx, x, y);
  const Shape* shapes[] = {&cond.shape(), &x.shape(), &y.shape()};
  Shape shape = broadcastShapes(shapes);
  BroadcastLoop loop(shapes, shape);
  Array out(x.dataType(), shape);
  if (out.numel() == 0) {
    ctx.outputs[0] = std::move(out);
    return;
  }
  const bool* c = cond.data<bool>();
  if (x.dataType() == DataType::String) {
    loop.forRows(0, loop.rows(), [&](int64_t off, const int64_t* offs) {
      for (int64_t i = 0; i < loop.innerSize(); ++i) {
        bool pick = c[offs[0] + i * loop.innerStride(0)];
        out.strings()[static_cast<size_t>(off + i)] =
            pick ? x.strings()[static_cast<size_t>(offs[1] + i * loop.innerStride(1))]
                 : y.strings()[static_cast<size_t>(offs[2] + i * loop.innerStride(2))];
      }
    });
    ctx.outputs[0] = std::move(out);
    return;
  }
  auto run = [&]<class W>(W*) {
    whereLoop(loop, c, reinterpret_cast<const W*>(x.bytes()), reinterpret_cast<const W*>(y.bytes()),
              reinterpret_cast<W*>(out.bytes()), ctx.pool);
  };
  if (!dispatchWord(x.elementSize(), run)) {
    ctx.fail(fmt::format("unsupported element type {}", dataTypeName(x.dataType())));
  }
  ctx.outputs[0] = std::move(out);
}

/// Clip: bounds from attributes (opset 6) or optional scalar inputs (opset 11+).
void clip(KernelContext& ctx, bool boundsAsInputs) {
  const Array& x = ctx.in(0);
  Array out(x.dataType(), x.shape());
  dispatchNumeric(x.dataType(), [&]<class T>(TypeTag<T>) {
    using C = ComputeT<T>;
    C lo = std::numeric_limits<C>::lowest();
    C hi = std::numeric_limits<C>::max();
    if (boundsAsInputs) {
      auto bound = [&](size_t i, C& value) {
        const Array* b = ctx.optIn(i);
        if (b == nullptr) return;
        if (b->dataType() != x.dataType()) ctx.fail("min and max must have the input's type");
        if (b->numel() != 1) ctx.fail("min and max must be scalars");
        value = toCompute(b->data<T>()[0]);
      };
      bound(1, lo);
      bound(2, hi);
    } else {
      lo = static_cast<C>(ctx.node.attrFloat("min", std::numeric_limits<float>::lowest()));
      hi = static_cast<C>(ctx.node.attrFloat("max", std::numeric_limits<float>::max()));
    }
    const T* in = x.data<T>();
    T* o = out.data<T>();
    parallelFor(ctx.pool, x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        C v = toCompute(in[i]);
        // Keeps NaN (comparisons with NaN are false); min wins over max when min > max.
        if (v > hi) v = hi;
        if (v < lo) v = lo;
        o[i] = fromCompute<T>(v);
      }
    });
  });
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& r) {
  registerBinary(r);
  // NaN propagates from either side, as numpy's maximum/minimum.
  addVariadic(r, "Max", 8, false, [](auto x, auto y) {
    if (std::isnan(static_cast<double>(x))) return x;
    if (std::isnan(static_cast<double>(y))) return y;
    return y > x ? y : x;
  });
  addVariadic(r, "Min", 8, false, [](auto x, auto y) {
    if (std::isnan(static_cast<double>(x))) return x;
    if (std::isnan(static_cast<double>(y))) return y;
    return y < x ? y : x;
  });
  addVariadic(r, "Sum", 8, false, [](auto x, auto y) { return x + y; });
  addVariadic(r, "Mean", 8, true, [](auto x, auto y) { return x + y; });
  r.add("", "Where", 9, where);
  r.add("", "Clip", 6, [](KernelContext& ctx) { clip(ctx, false); });
  r.add("", "Clip", 11, [](KernelContext& ctx) { clip(ctx, true); });
}

}  // namespace qopt::interp
