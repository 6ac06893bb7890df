// Array: the interpreter's runtime value. Mostly a tensor: contiguous, row-major, 64-byte
// aligned, shared ownership (a constant initializer is wrapped without copying when its bytes are
// aligned). It may also be one of ONNX's other values: a sequence of tensors, or an optional that
// is none or holds one tensor or sequence. The interpreter hands kernels tensors only, except the
// few ops that take the other kinds, so tensor kernels never check the kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qopt/ir/DataType.h"
#include "qopt/ir/Tensor.h"

namespace qopt::interp {

using Shape = std::vector<int64_t>;

enum class ValueKind : uint8_t { Tensor, Sequence, Optional };

/// "tensor", "sequence", "optional": for messages.
const char* valueKindName(ValueKind kind);

class Array {
 public:
  Array() = default;
  /// Allocates uninitialised storage for `shape` (aligned; strings default-constructed).
  Array(DataType type, Shape shape);
  static Array zeros(DataType type, Shape shape);
  template <class T>
  static Array scalar(DataType type, T value) {
    Array a(type, {});
    *a.data<T>() = value;
    return a;
  }
  /// Wraps an IR tensor: shares the tensor's buffer when aligned, else copies. 4-bit types are
  /// unpacked to one byte per element (int8/uint8 storage); float8 and float4 stay one byte each.
  static Array fromTensor(const Tensor& tensor);
  /// Converts back to an IR tensor (4-bit types packed again). Throws for a sequence or optional.
  Tensor toTensor(std::string name = {}) const;

  /// A sequence of `items`, tensors of `elemType` each (which an empty sequence still has).
  /// The items keep sharing their storage; throws when one is not a tensor of `elemType`.
  static Array sequence(DataType elemType, std::vector<Array> items);
  /// An optional holding `value` (a tensor or a sequence).
  static Array optional(Array value);
  /// An optional holding nothing.
  static Array none();

  ValueKind kind() const { return kind_; }
  bool isTensor() const { return kind_ == ValueKind::Tensor; }
  bool isSequence() const { return kind_ == ValueKind::Sequence; }
  bool isOptional() const { return kind_ == ValueKind::Optional; }
  /// A sequence's tensors, in order (throws for other kinds).
  const std::vector<Array>& items() const;
  /// Whether an optional holds a value (throws for other kinds).
  bool hasValue() const;
  /// The value an optional holds (throws for other kinds and for none).
  const Array& value() const;

  /// A tensor's element type; a sequence's, the element type of its tensors; an optional's, its
  /// value's (Undefined for none).
  DataType dataType() const { return type_; }

  // Shape and data describe a tensor: a sequence or optional has shape [] and no elements.
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const {
    return shape_[static_cast<size_t>(axis < 0 ? axis + rank() : axis)];
  }
  int64_t numel() const { return numel_; }
  /// Bytes per element as stored here (4-bit types use a byte each).
  size_t elementSize() const { return elementSize_; }
  size_t byteSize() const { return static_cast<size_t>(numel_) * elementSize_; }
  /// False for a default-constructed Array (no value).
  bool valid() const { return type_ != DataType::Undefined || kind_ != ValueKind::Tensor; }

  template <class T>
  T* data() {
    return reinterpret_cast<T*>(bytes_);
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes_);
  }
  std::byte* bytes() { return bytes_; }
  const std::byte* bytes() const { return bytes_; }
  std::vector<std::string>& strings() { return *strings_; }
  const std::vector<std::string>& strings() const { return *strings_; }

  /// Same data, new shape (numel must match): no copy.
  Array reshaped(Shape shape) const;
  /// Element i converted to double / int64 (any numeric type).
  double getDouble(int64_t i) const;
  int64_t getInt64(int64_t i) const;
  /// All elements as int64 (shape tensors, axes, indices).
  std::vector<int64_t> toInt64Vector() const;
  std::vector<float> toFloatVector() const;

 private:
  DataType type_ = DataType::Undefined;
  ValueKind kind_ = ValueKind::Tensor;
  Shape shape_;
  int64_t numel_ = 0;
  size_t elementSize_ = 0;
  // Keeps the contents alive: a tensor's storage (own allocation or a Buffer); the
  // std::vector<Array> of a sequence's items or of an optional's one value (null for none), so
  // that tensors pay nothing for the other kinds.
  std::shared_ptr<void> owner_;
  std::byte* bytes_ = nullptr;
  std::shared_ptr<std::vector<std::string>> strings_;
};

/// Storage size per element in an Array (4-bit types take a byte; strings 0).
size_t arrayElementSize(DataType type);

/// While alive, arrays made on this thread outside an interpreter run take their storage from
/// one process-wide pool that keeps freed blocks for the next arrays. For data read from disk and
/// freed by other threads (samples that the sample workers consume): from the heap, glibc raises
/// its mmap threshold after the first large free and the blocks freed across threads fragment
/// the heap, so that a stream of samples keeps many samples' worth of memory it no longer uses;
/// mapping each array from the system instead costs a page fault per page of every sample.
class DataArrayScope {
 public:
  DataArrayScope();
  ~DataArrayScope();
  DataArrayScope(const DataArrayScope&) = delete;
  DataArrayScope& operator=(const DataArrayScope&) = delete;

 private:
  bool previous_;
};

}  // namespace qopt::interp
