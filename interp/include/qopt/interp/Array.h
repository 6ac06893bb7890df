// Array: the interpreter's runtime tensor. Contiguous, row-major, 64-byte aligned, shared
// ownership (a constant initializer is wrapped without copying when its bytes are aligned).
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
  /// Converts back to an IR tensor (4-bit types packed again).
  Tensor toTensor(std::string name = {}) const;

  DataType dataType() const { return type_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_[static_cast<size_t>(axis < 0 ? axis + rank() : axis)]; }
  int64_t numel() const { return numel_; }
  /// Bytes per element as stored here (4-bit types use a byte each).
  size_t elementSize() const { return elementSize_; }
  size_t byteSize() const { return static_cast<size_t>(numel_) * elementSize_; }
  bool valid() const { return type_ != DataType::Undefined; }

  template <class T>
  T* data() { return reinterpret_cast<T*>(bytes_); }
  template <class T>
  const T* data() const { return reinterpret_cast<const T*>(bytes_); }
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
  Shape shape_;
  int64_t numel_ = 0;
  size_t elementSize_ = 0;
  std::shared_ptr<void> owner_;  // keeps the storage alive (own allocation or a Buffer)
  std::byte* bytes_ = nullptr;
  std::shared_ptr<std::vector<std::string>> strings_;
};

/// Storage size per element in an Array (4-bit types take a byte; strings 0).
size_t arrayElementSize(DataType type);

}  // namespace qopt::interp
