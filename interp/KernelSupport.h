// Helpers shared by kernels: element-type dispatch, float16/bfloat16 storage types, axis checks.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/interp/Kernel.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Tensor.h"

namespace qopt::interp {

/// Storage types of the 16-bit floats: kernels compute in float and round to the stored type.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <class T>
struct ComputeTypeOf {
  using type = T;
};
template <>
struct ComputeTypeOf<Half> {
  using type = float;
};
template <>
struct ComputeTypeOf<BFloat16> {
  using type = float;
};
/// The type arithmetic on T is done in (float for the 16-bit floats, T otherwise).
template <class T>
using ComputeT = typename ComputeTypeOf<T>::type;

// Inline copies of qopt's half and bfloat16 conversions (ir/Tensor.cpp, round to nearest even):
// kernels convert every element, so the call must not cross a library boundary.
inline float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1Fu;
  uint32_t mant = bits & 0x3FFu;
  if (exp == 0) {
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
    return sign ? -f : f;
  }
  uint32_t out =
      exp == 31 ? (sign | 0x7F800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  return std::bit_cast<float>(out);
}

inline uint16_t floatToHalf(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) {
    return static_cast<uint16_t>(sign | 0x7C00u |
                                 (absx > 0x7F800000u ? 0x200u | ((absx >> 13) & 0x3FFu) : 0));
  }
  if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (absx < 0x38800000u) {
    float f = std::bit_cast<float>(absx) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(f) - 0x3F000000u));
  }
  uint32_t mantOdd = (absx >> 13) & 1u;
  absx += 0xC8000FFFu + mantOdd;
  return static_cast<uint16_t>(sign | (absx >> 13));
}

inline float bfloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t floatToBFloat16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

template <class T>
inline ComputeT<T> toCompute(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return halfToFloat(v.bits);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bfloat16ToFloat(v.bits);
  } else {
    return v;
  }
}

template <class T>
inline T fromCompute(ComputeT<T> v) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{floatToHalf(v)};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16{floatToBFloat16(v)};
  } else {
    return v;
  }
}

template <class T>
inline constexpr bool kIsFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T>
constexpr DataType dataTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DataType::Float;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::Double;
  else if constexpr (std::is_same_v<T, Half>)
    return DataType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DataType::BFloat16;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DataType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DataType::UInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DataType::Int16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DataType::UInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DataType::Int32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DataType::UInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DataType::Int64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DataType::UInt64;
  else if constexpr (std::is_same_v<T, bool>)
    return DataType::Bool;
  else
    static_assert(sizeof(T) == 0, "no ONNX type for T");
}

template <class T>
struct TypeTag {
  using type = T;
};

[[noreturn]] inline void unsupportedType(DataType type, const char* what) {
  throw Error(fmt::format("element type {} is not supported {}", dataTypeName(type), what));
}

/// A list of element storage types, for dispatchTypes.
template <class... Ts>
struct TypeList {};
template <class... A, class... B>
constexpr TypeList<A..., B...> operator+(TypeList<A...>, TypeList<B...>) {
  return {};
}
using FloatTypes = TypeList<float, double, Half, BFloat16>;
using IntegerTypes =
    TypeList<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t>;
using NumericTypes = decltype(FloatTypes{} + IntegerTypes{});

namespace detail {
template <class T, class... Rest, class Fn, class Fail>
decltype(auto) dispatchAmong(DataType type, Fn&& fn, Fail&& fail) {
  if (type == dataTypeOf<T>()) return fn(TypeTag<T>{});
  if constexpr (sizeof...(Rest) > 0) {
    return dispatchAmong<Rest...>(type, std::forward<Fn>(fn), std::forward<Fail>(fail));
  } else {
    fail();  // throws
    __builtin_unreachable();
  }
}
}  // namespace detail

/// The one type switch behind every dispatcher: calls fn(TypeTag<T>{}) with T the type of `Ts`
/// whose element type is `type`, else fail(), which must throw. A chain of comparisons with
/// constants, which the compiler lowers like a switch.
template <class... Ts, class Fn, class Fail>
decltype(auto) dispatchTypes(TypeList<Ts...>, DataType type, Fn&& fn, Fail&& fail) {
  return detail::dispatchAmong<Ts...>(type, std::forward<Fn>(fn), std::forward<Fail>(fail));
}

/// A dispatcher over the types of `Types`: dispatchFloat(type, fn) calls fn(TypeTag<T>{}) with T
/// the storage type of `type`, and throws for a type outside the list naming the accepted ones.
template <class Types>
struct Dispatcher {
  const char* accepted;
  template <class Fn>
  decltype(auto) operator()(DataType type, Fn&& fn) const {
    const char* what = accepted;
    return dispatchTypes(Types{}, type, std::forward<Fn>(fn),
                         [type, what] { unsupportedType(type, what); });
  }
};
inline constexpr Dispatcher<FloatTypes> dispatchFloat{"here (floating point types only)"};
/// Integer types (not bool).
inline constexpr Dispatcher<IntegerTypes> dispatchInteger{"here (integer types only)"};
/// Floating point and integer types (not bool).
inline constexpr Dispatcher<NumericTypes> dispatchNumeric{"here (numeric types only)"};

/// Numeric types and bool.
template <class Fn>
decltype(auto) dispatchNumericOrBool(DataType type, Fn&& fn) {
  if (type == DataType::Bool) return fn(TypeTag<bool>{});
  return dispatchNumeric(type, std::forward<Fn>(fn));
}

/// Normalises `axis` in [-rank, rank) to [0, rank), else throws. With `inclusiveEnd` (Flatten,
/// the opset < 13 softmax coercion) `axis` may also equal rank.
inline int64_t normalizeAxis(int64_t axis, int64_t rank, bool inclusiveEnd = false) {
  int64_t limit = inclusiveEnd ? rank + 1 : rank;
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= limit) {
    throw Error(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  return a;
}

/// Product of shape[begin, end) (clamped to the shape).
inline int64_t product(const Shape& shape, size_t begin = 0, size_t end = SIZE_MAX) {
  end = std::min(end, shape.size());
  begin = std::min(begin, end);
  int64_t p = 1;
  for (auto it = shape.begin() + static_cast<std::ptrdiff_t>(begin);
       it != shape.begin() + static_cast<std::ptrdiff_t>(end); ++it) {
    p *= *it;
  }
  return p;
}

inline std::string shapeString(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

/// Reads a scalar or 1-element tensor as double.
inline double scalarValue(const Array& a, const char* what) {
  if (a.numel() != 1) {
    throw Error(
        fmt::format("{} must have one element, got shape {}", what, shapeString(a.shape())));
  }
  return a.getDouble(0);
}

/// The node's string attribute `name` (default `fallback`) as an enumerator of E: `names` spells
/// E's enumerators in their declaration order (0, 1, ...). Another string fails naming `name`.
template <class E>
E enumAttr(const KernelContext& ctx, const char* name, const char* fallback,
           std::initializer_list<std::string_view> names) {
  const std::string s = ctx.node.attrString(name, fallback);
  int index = 0;
  for (std::string_view n : names) {
    if (s == n) return static_cast<E>(index);
    ++index;
  }
  ctx.fail(fmt::format("unknown {} '{}'", name, s));
}

/// Steps `index` to the next index of `dims` in row-major order (from the last, wrapping to 0).
inline void nextIndex(std::vector<int64_t>& index, const Shape& dims) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < dims[d]) return;
    index[d] = 0;
  }
}

/// Elements per thread-pool chunk for cheap elementwise loops.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

// Whether the model uses output `i` of the kernel's node (it exists and is not an omitted
// optional output).
inline bool wantsOutput(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.node.output(i);
  return v != nullptr && !v->isAbsent();
}

}  // namespace qopt::interp
