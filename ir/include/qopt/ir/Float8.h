// Exact conversions between float and ONNX's four 8-bit float types, for the code that quantizes
// to them (QuantizeLinear/DequantizeLinear kernels, insert-qdq's FP8 weights, strip-qdq's
// ranges). Arithmetic rather than a search over the 256 codes: weights of millions of elements
// are converted.
//
// float -> float8 follows ONNX's Cast and QuantizeLinear (opset 19) tables: round to nearest,
// ties to even, with the exponent unbounded, so a value overflows when it rounds beyond the
// largest finite value (E4M3FN: 464 is a tie and goes to 448, anything above goes past it).
// saturate=true clamps overflows and infinities to +-max; saturate=false gives +-inf for E5M2
// and NaN for the others. NaN keeps its sign where the type has a signed NaN (E4M3FN: 0x7F/0xFF,
// E5M2: 0x7F/0xFF), as ONNX Runtime does; the FNUZ types have one NaN, 0x80 (decoded as a
// negative NaN), and no -0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "qopt/ir/DataType.h"

namespace qopt {

/// The layout of one 8-bit float type.
struct Float8Format {
  int mantissaBits;  // 3 (E4M3) or 2 (E5M2)
  int bias;          // exponent bias
  bool fnuz;         // one NaN at 0x80, no negative zero, no infinity
  bool hasInfinity;  // E5M2: IEEE-like infinities at exponent all ones
  uint8_t maxCode;   // the largest finite positive value's code
  double maxFinite;  // its value: 448, 240, 57344, 57344
};

/// The format of a float8 type; nullopt for every other type.
inline std::optional<Float8Format> float8Format(DataType type) {
  switch (type) {
    case DataType::Float8E4M3FN:
      return Float8Format{3, 7, false, false, 0x7E, 448.0};
    case DataType::Float8E4M3FNUZ:
      return Float8Format{3, 8, true, false, 0x7F, 240.0};
    case DataType::Float8E5M2:
      return Float8Format{2, 15, false, true, 0x7B, 57344.0};
    case DataType::Float8E5M2FNUZ:
      return Float8Format{2, 16, true, false, 0x7F, 57344.0};
    default:
      return std::nullopt;
  }
}

inline bool isFloat8(DataType type) {
  return float8Format(type).has_value();
}

/// The value of a float8 code (NaN and infinities included).
inline double float8ToDouble(uint8_t code, const Float8Format& f) {
  const bool negative = (code & 0x80) != 0;
  const int exponentField = (code & 0x7F) >> f.mantissaBits;
  const int mantissa = code & ((1 << f.mantissaBits) - 1);
  const int exponentMax = (1 << (7 - f.mantissaBits)) - 1;
  if (f.fnuz && code == 0x80)
    return -std::nan("");  // its sign bit is set, as ONNX Runtime reads it
  if (f.hasInfinity && exponentField == exponentMax) {
    if (mantissa != 0) return negative ? -std::nan("") : std::nan("");
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (!f.fnuz && !f.hasInfinity && (code & 0x7F) == 0x7F) {  // E4M3FN's S.1111.111
    return negative ? -std::nan("") : std::nan("");
  }
  const double magnitude =
      exponentField == 0 ? std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissaBits)
                         : std::ldexp(static_cast<double>(mantissa | (1 << f.mantissaBits)),
                                      exponentField - f.bias - f.mantissaBits);
  return negative ? -magnitude : magnitude;
}

/// The code of `value` rounded as described above.
inline uint8_t doubleToFloat8(double value, const Float8Format& f, bool saturate) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const uint8_t nan = f.fnuz ? 0x80 : static_cast<uint8_t>(sign | 0x7F);
  if (std::isnan(value)) return nan;
  auto overflow = [&]() -> uint8_t {
    if (saturate) return static_cast<uint8_t>(sign | f.maxCode);
    if (f.hasInfinity) return static_cast<uint8_t>(sign | 0x7C);
    return nan;
  };
  const double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return overflow();
  const uint8_t zero = f.fnuz ? 0x00 : sign;
  if (magnitude == 0) return zero;
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  const int minExponent = 1 - f.bias;
  const int unbiased = std::max(exponent - 1, minExponent);  // subnormals share the least one
  // The multiple of the quantum nearest `magnitude`, ties to even: exact in double (a power of
  // two scaling, then nearbyint in the default rounding mode).
  const double steps = std::nearbyint(std::ldexp(magnitude, f.mantissaBits - unbiased));
  if (steps == 0) return zero;
  if (std::ldexp(steps, unbiased - f.mantissaBits) > f.maxFinite) return overflow();
  const int implicitOne = 1 << f.mantissaBits;
  if (steps < implicitOne) return static_cast<uint8_t>(sign | static_cast<int>(steps));
  int exponentField = unbiased + f.bias;
  int mantissa = static_cast<int>(steps);
  if (mantissa == 2 * implicitOne) {  // rounded up into the next binade
    mantissa = implicitOne;
    ++exponentField;
  }
  return static_cast<uint8_t>(sign | (exponentField << f.mantissaBits) | (mantissa - implicitOne));
}

}  // namespace qopt
