#include "qopt/ir/DataType.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <string>

namespace qopt {

namespace {

// What a type's elements are; the predicates below read it.
enum class Kind { Other, Float, Signed, Unsigned };

struct TypeInfo {
  DataType type;
  std::string_view name;
  int bits;
  Kind kind;
};

constexpr std::array<TypeInfo, 24> kTypes = {{
    {DataType::Undefined, "UNDEFINED", 0, Kind::Other},
    {DataType::Float, "FLOAT", 32, Kind::Float},
    {DataType::UInt8, "UINT8", 8, Kind::Unsigned},
    {DataType::Int8, "INT8", 8, Kind::Signed},
    {DataType::UInt16, "UINT16", 16, Kind::Unsigned},
    {DataType::Int16, "INT16", 16, Kind::Signed},
    {DataType::Int32, "INT32", 32, Kind::Signed},
    {DataType::Int64, "INT64", 64, Kind::Signed},
    {DataType::String, "STRING", 0, Kind::Other},
    {DataType::Bool, "BOOL", 8, Kind::Other},
    {DataType::Float16, "FLOAT16", 16, Kind::Float},
    {DataType::Double, "DOUBLE", 64, Kind::Float},
    {DataType::UInt32, "UINT32", 32, Kind::Unsigned},
    {DataType::UInt64, "UINT64", 64, Kind::Unsigned},
    {DataType::Complex64, "COMPLEX64", 64, Kind::Other},
    {DataType::Complex128, "COMPLEX128", 128, Kind::Other},
    {DataType::BFloat16, "BFLOAT16", 16, Kind::Float},
    {DataType::Float8E4M3FN, "FLOAT8E4M3FN", 8, Kind::Float},
    {DataType::Float8E4M3FNUZ, "FLOAT8E4M3FNUZ", 8, Kind::Float},
    {DataType::Float8E5M2, "FLOAT8E5M2", 8, Kind::Float},
    {DataType::Float8E5M2FNUZ, "FLOAT8E5M2FNUZ", 8, Kind::Float},
    {DataType::UInt4, "UINT4", 4, Kind::Unsigned},
    {DataType::Int4, "INT4", 4, Kind::Signed},
    {DataType::Float4E2M1, "FLOAT4E2M1", 4, Kind::Float},
}};

const TypeInfo* infoOf(DataType type) {
  auto index = static_cast<size_t>(type);
  return index < kTypes.size() ? &kTypes[index] : nullptr;
}

}  // namespace

std::string_view dataTypeName(DataType type) {
  const TypeInfo* info = infoOf(type);
  return info ? info->name : std::string_view("UNKNOWN");
}

std::optional<DataType> parseDataType(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static constexpr std::pair<std::string_view, DataType> kAliases[] = {
      {"FLOAT32", DataType::Float}, {"FP32", DataType::Float},     {"F32", DataType::Float},
      {"FP16", DataType::Float16},  {"F16", DataType::Float16},    {"HALF", DataType::Float16},
      {"BF16", DataType::BFloat16}, {"FLOAT64", DataType::Double}, {"F64", DataType::Double},
      {"FP64", DataType::Double},   {"I8", DataType::Int8},        {"U8", DataType::UInt8},
      {"I32", DataType::Int32},     {"I64", DataType::Int64},      {"I16", DataType::Int16},
      {"U16", DataType::UInt16},    {"U32", DataType::UInt32},     {"U64", DataType::UInt64},
  };
  for (const auto& [alias, type] : kAliases) {
    if (upper == alias) return type;
  }
  for (const TypeInfo& info : kTypes) {
    if (info.name == upper && info.type != DataType::Undefined) return info.type;
  }
  return std::nullopt;
}

std::optional<DataType> dataTypeFromInt(int64_t value) {
  if (value < 0 || value > kMaxKnownDataType) return std::nullopt;
  return static_cast<DataType>(value);
}

int dataTypeBits(DataType type) {
  const TypeInfo* info = infoOf(type);
  return info ? info->bits : 0;
}

std::optional<size_t> dataTypeStorageBytes(DataType type, uint64_t count) {
  int bits = dataTypeBits(type);
  if (bits == 0) return size_t{0};
  if (bits == 4) return static_cast<size_t>(count / 2 + count % 2);  // no overflow at the top
  uint64_t bytes = static_cast<uint64_t>(bits / 8);
  if (count > std::numeric_limits<uint64_t>::max() / bytes) return std::nullopt;
  uint64_t total = count * bytes;
  if (total > std::numeric_limits<size_t>::max()) return std::nullopt;
  return static_cast<size_t>(total);
}

bool isFloatingPoint(DataType type) {
  const TypeInfo* info = infoOf(type);
  return info && info->kind == Kind::Float;
}

bool isSignedInteger(DataType type) {
  const TypeInfo* info = infoOf(type);
  return info && info->kind == Kind::Signed;
}

bool isInteger(DataType type) {
  const TypeInfo* info = infoOf(type);
  return info && (info->kind == Kind::Signed || info->kind == Kind::Unsigned);
}

bool isQuantizedIntegerType(DataType type) {
  return quantizedIntegerRange(type).has_value();
}

std::optional<std::pair<int64_t, int64_t>> quantizedIntegerRange(DataType type) {
  using Range = std::pair<int64_t, int64_t>;
  switch (type) {
    case DataType::Int4:
      return Range{-8, 7};
    case DataType::UInt4:
      return Range{0, 15};
    case DataType::Int8:
      return Range{-128, 127};
    case DataType::UInt8:
      return Range{0, 255};
    case DataType::Int16:
      return Range{-32768, 32767};
    case DataType::UInt16:
      return Range{0, 65535};
    case DataType::Int32:
      return Range{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return std::nullopt;
  }
}

}  // namespace qopt
