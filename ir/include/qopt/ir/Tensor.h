// Tensor: a constant value (initializer, Constant attribute, tensor attribute).
//
// The bytes stay exactly as the file had them until someone asks for numbers: a tensor read from
// raw_data keeps that buffer (moved, not copied, out of the protobuf), a tensor stored in external
// data is memory-mapped on first access, and a tensor stored in the typed repeated fields
// (float_data, int32_data, ...) remembers that encoding so export writes the same fields back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "qopt/ir/DataType.h"

namespace qopt {

/// Immutable bytes shared between tensors (copies of a model share their weights).
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const std::byte* data() const = 0;
  virtual size_t size() const = 0;
  std::span<const std::byte> bytes() const { return {data(), size()}; }

  /// Takes ownership of a heap string without copying (protobuf's release_raw_data()).
  static std::shared_ptr<const Buffer> adoptString(std::unique_ptr<std::string> bytes);
  static std::shared_ptr<const Buffer> fromString(std::string bytes);
  static std::shared_ptr<const Buffer> copyOf(std::span<const std::byte> bytes);
  /// Maps `length` bytes at `offset` of `file` read-only. Throws qopt::Error when the file is
  /// missing or shorter than offset + length.
  static std::shared_ptr<const Buffer> mapFile(const std::filesystem::path& file, uint64_t offset,
                                               uint64_t length);

  /// When the buffer owns a std::string, that string (lets export lend it to protobuf).
  virtual std::string* ownedString() const { return nullptr; }
};

/// Where a tensor's bytes live outside the model file (ONNX's external_data key/value list).
struct ExternalData {
  std::string location;  // relative to the model's folder, as written in the file
  std::optional<uint64_t> offset;
  std::optional<uint64_t> length;
  /// All key/value entries in file order (location, offset, length, checksum and unknown keys),
  /// written back unchanged when the tensor keeps its layout.
  std::vector<std::pair<std::string, std::string>> entries;
  /// The folder the location is relative to (the model's folder at import).
  std::filesystem::path baseDir;
};

/// How a tensor's values were (and will be) encoded in the protobuf.
enum class TensorEncoding {
  Raw,       // raw_data
  Typed,     // float_data / int32_data / int64_data / double_data / uint64_data / string_data
  External,  // data_location = EXTERNAL
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DataType type, std::vector<int64_t> dims);

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  DataType dataType() const { return type_; }
  void setDataType(DataType type) { type_ = type; }
  const std::vector<int64_t>& dims() const { return dims_; }
  void setDims(std::vector<int64_t> dims) { dims_ = std::move(dims); }
  /// Product of the dims; throws qopt::Error on a negative dim or overflow.
  uint64_t numElements() const;

  /// The element bytes in raw_data layout (little-endian, 4-bit types packed two per byte).
  /// Loads external data on first use. Empty for string tensors.
  std::span<const std::byte> rawBytes() const;
  std::shared_ptr<const Buffer> buffer() const;
  /// Replaces the values; the tensor is written as raw_data from now on.
  void setRawBytes(std::shared_ptr<const Buffer> bytes);
  void setRawBytes(std::vector<std::byte> bytes);

  const std::vector<std::string>& strings() const { return strings_; }
  void setStrings(std::vector<std::string> values);

  /// Values converted to double / int64 (any numeric type; float16, bfloat16, float8 and 4-bit
  /// types decoded). Throws qopt::Error for strings and complex types.
  std::vector<double> toDoubles() const;
  std::vector<float> toFloats() const;
  std::vector<int64_t> toInt64s() const;
  /// One element, index in row-major order.
  double doubleAt(uint64_t index) const;

  /// Builds a tensor of `type` from doubles, rounding to nearest even for floating point types
  /// and saturating integer types.
  static Tensor fromDoubles(DataType type, std::vector<int64_t> dims,
                            std::span<const double> values);
  static Tensor fromFloats(std::vector<int64_t> dims, std::span<const float> values);
  static Tensor fromInt64s(DataType type, std::vector<int64_t> dims,
                           std::span<const int64_t> values);
  template <class T>
  static Tensor fromPod(DataType type, std::vector<int64_t> dims, std::span<const T> values) {
    Tensor t(type, std::move(dims));
    t.setRawBytes(copyBytes(std::as_bytes(values)));
    return t;
  }

  TensorEncoding encoding() const { return encoding_; }
  /// Import uses these to remember how the file stored the values.
  void setEncoding(TensorEncoding encoding) { encoding_ = encoding; }
  const std::optional<ExternalData>& externalData() const { return external_; }
  /// Makes the tensor lazily load its bytes from `data` (nothing is read until rawBytes()).
  void setExternalData(ExternalData data);
  /// Forgets the external location (after the bytes were loaded): written inline from now on.
  void clearExternalData();
  /// True once bytes are in memory (or mapped).
  bool isLoaded() const;

  const std::string& docString() const { return docString_; }
  void setDocString(std::string doc) { docString_ = std::move(doc); }
  std::vector<std::pair<std::string, std::string>>& metadataProps() { return metadataProps_; }
  const std::vector<std::pair<std::string, std::string>>& metadataProps() const {
    return metadataProps_;
  }
  /// TensorProto.segment (begin, end), kept for fidelity.
  std::optional<std::pair<int64_t, int64_t>> segment;
  /// Fields of the TensorProto this qopt does not model, serialized; written back unchanged.
  std::string unknownFields;
  /// The file wrote an empty name field (export writes one back while the name stays empty).
  bool emptyNamePresent = false;

  /// A stable 64-bit content hash (FNV-1a over type, dims and bytes), for printing and dedupe.
  uint64_t contentHash() const;
  /// Exact equality of type, dims and bytes.
  bool sameContent(const Tensor& other) const;

 private:
  static std::shared_ptr<const Buffer> copyBytes(std::span<const std::byte> bytes);
  void load() const;

  std::string name_;
  DataType type_ = DataType::Undefined;
  std::vector<int64_t> dims_;
  mutable std::shared_ptr<const Buffer> bytes_;
  std::vector<std::string> strings_;
  TensorEncoding encoding_ = TensorEncoding::Raw;
  std::optional<ExternalData> external_;
  std::string docString_;
  std::vector<std::pair<std::string, std::string>> metadataProps_;
};

using TensorPtr = std::shared_ptr<Tensor>;

/// Float conversions used by tensors and the interpreter (round to nearest even).
uint16_t floatToHalfBits(float value);
float halfBitsToFloat(uint16_t bits);
uint16_t floatToBFloat16Bits(float value);
float bfloat16BitsToFloat(uint16_t bits);

}  // namespace qopt
