// Element types of tensors, numbered exactly as ONNX's TensorProto.DataType so that the numbers
// written by any ONNX version (including types newer than the linked ONNX 1.12) survive unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace qopt {

enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
};

/// The highest data type number qopt knows; anything above is rejected at import.
inline constexpr int32_t kMaxKnownDataType = 23;

/// ONNX's upper-case name ("FLOAT", "INT8", "FLOAT8E4M3FN", ...).
std::string_view dataTypeName(DataType type);

/// Parses the name printed by dataTypeName (case-insensitive); also accepts "float32", "fp16",
/// "bf16", "f32" style spellings used on command lines.
std::optional<DataType> parseDataType(std::string_view name);

/// Validates a raw number read from a file.
std::optional<DataType> dataTypeFromInt(int64_t value);

/// Storage size in bits of one element in raw_data layout (4 for int4/uint4/float4, 0 for string).
int dataTypeBits(DataType type);

/// Bytes needed for `count` elements in raw_data layout (4-bit types pack two per byte).
/// Returns std::nullopt on overflow.
std::optional<size_t> dataTypeStorageBytes(DataType type, uint64_t count);

bool isFloatingPoint(DataType type);  // float8/16/32/64, bfloat16, float4
bool isInteger(DataType type);        // signed and unsigned, 4 to 64 bits (not bool)
bool isSignedInteger(DataType type);
bool isQuantizedIntegerType(DataType type);  // int4/uint4/int8/uint8/int16/uint16/int32
/// The integers a quantized type holds ([-128, 127] for int8, [0, 255] for uint8, ...);
/// nullopt for the types isQuantizedIntegerType refuses.
std::optional<std::pair<int64_t, int64_t>> quantizedIntegerRange(DataType type);

}  // namespace qopt
