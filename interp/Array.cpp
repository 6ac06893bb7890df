#include "qopt/interp/Array.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "AllocationLimit.h"
#include "BufferPool.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {

namespace {

thread_local uint64_t allocationLimit = std::numeric_limits<uint64_t>::max();

bool isFourBit(DataType type) {
  return type == DataType::Int4 || type == DataType::UInt4 || type == DataType::Float4E2M1;
}

int64_t checkedNumel(const Shape& shape) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      throw Error(
          ErrorKind::Input, {}, {},
          fmt::format("negative dimension {} in tensor shape [{}]", d, fmt::join(shape, ",")));
    }
    if (d != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) /
                              static_cast<uint64_t>(d)) {
      throw Error(ErrorKind::Input, {}, {},
                  fmt::format("tensor shape [{}] has too many elements", fmt::join(shape, ",")));
    }
    count *= static_cast<uint64_t>(d);
  }
  return static_cast<int64_t>(count);
}

// An IR Buffer that keeps an Array's storage alive: Array -> Tensor without copying.
class ArrayBuffer final : public Buffer {
 public:
  ArrayBuffer(std::shared_ptr<void> owner, const std::byte* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}
  const std::byte* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  std::shared_ptr<void> owner_;
  const std::byte* data_;
  size_t size_;
};

// The items of a sequence, or an optional's value: shared by copies of the Array, never changed
// (ops on sequences build new ones, whose items share the tensors' storage).
using Items = std::vector<Array>;

}  // namespace

const char* valueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::Tensor:
      return "tensor";
    case ValueKind::Sequence:
      return "sequence";
    case ValueKind::Optional:
      return "optional";
  }
  return "value";
}

AllocationLimitScope::AllocationLimitScope(uint64_t maxBytes) : previous_(allocationLimit) {
  allocationLimit = maxBytes;
}
AllocationLimitScope::~AllocationLimitScope() {
  allocationLimit = previous_;
}
uint64_t currentAllocationLimit() {
  return allocationLimit;
}

size_t arrayElementSize(DataType type) {
  if (type == DataType::String || type == DataType::Undefined) return 0;
  if (isFourBit(type)) return 1;
  return static_cast<size_t>(dataTypeBits(type) / 8);
}

Array::Array(DataType type, Shape shape) : type_(type), shape_(std::move(shape)) {
  if (type == DataType::Undefined) throw Error("cannot create a tensor of undefined type");
  if (type == DataType::Complex64 || type == DataType::Complex128) {
    throw Error(fmt::format("tensors of type {} are not supported", dataTypeName(type)));
  }
  numel_ = checkedNumel(shape_);
  elementSize_ = arrayElementSize(type);
  if (type == DataType::String) {
    // Empty strings still take a std::string each: a ConstantOfShape-like op making 1e12 of
    // them must hit the limit too.
    uint64_t bytes = static_cast<uint64_t>(numel_) * sizeof(std::string);
    if (static_cast<uint64_t>(numel_) > allocationLimit / sizeof(std::string)) {
      throw Error(ErrorKind::Input, {}, {},
                  fmt::format("tensor of type string and shape [{}] needs {} bytes, over the "
                              "limit of {}",
                              fmt::join(shape_, ","), bytes, allocationLimit));
    }
    strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(numel_));
    return;
  }
  uint64_t bytes = static_cast<uint64_t>(numel_) * elementSize_;
  if (elementSize_ != 0 &&
      static_cast<uint64_t>(numel_) > std::numeric_limits<uint64_t>::max() / elementSize_) {
    throw Error(fmt::format("tensor of shape [{}] is too large", fmt::join(shape_, ",")));
  }
  if (bytes > allocationLimit) {
    throw Error(ErrorKind::Input, {}, {},
                fmt::format("tensor of type {} and shape [{}] needs {} bytes, over the limit of {}",
                            dataTypeName(type), fmt::join(shape_, ","), bytes, allocationLimit));
  }
  owner_ = allocateTensorStorage(static_cast<size_t>(bytes));
  if (owner_ == nullptr) {
    throw Error(fmt::format("out of memory allocating {} bytes for a tensor of shape [{}]", bytes,
                            fmt::join(shape_, ",")));
  }
  bytes_ = static_cast<std::byte*>(owner_.get());
}

Array Array::zeros(DataType type, Shape shape) {
  Array a(type, std::move(shape));
  if (a.bytes_) std::memset(a.bytes_, 0, a.byteSize());
  return a;
}

Array Array::fromTensor(const Tensor& tensor) {
  DataType type = tensor.dataType();
  Shape shape(tensor.dims().begin(), tensor.dims().end());
  if (type == DataType::String) {
    Array a(type, shape);
    if (tensor.strings().size() != static_cast<size_t>(a.numel())) {
      throw Error(
          ErrorKind::Input, {}, fmt::format("tensor '{}'", tensor.name()),
          fmt::format("has {} strings for {} elements", tensor.strings().size(), a.numel()));
    }
    *a.strings_ = tensor.strings();
    return a;
  }
  int64_t numel = checkedNumel(shape);
  std::span<const std::byte> raw = tensor.rawBytes();
  auto expected = dataTypeStorageBytes(type, static_cast<uint64_t>(numel));
  if (!expected || raw.size() != *expected) {
    throw Error(
        ErrorKind::Input, {}, fmt::format("tensor '{}'", tensor.name()),
        fmt::format("has {} bytes of data, expected {} for type {} and shape [{}]", raw.size(),
                    expected.value_or(0), dataTypeName(type), fmt::join(shape, ",")));
  }
  if (isFourBit(type)) {
    Array a(type, std::move(shape));
    auto* out = a.data<uint8_t>();
    for (int64_t i = 0; i < numel; ++i) {
      auto byte = static_cast<uint8_t>(raw[static_cast<size_t>(i / 2)]);
      uint8_t nibble = (i % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
      // int4 is kept sign-extended in its byte so kernels can read it as int8.
      if (type == DataType::Int4 && (nibble & 0x08)) nibble |= 0xF0;
      out[i] = nibble;
    }
    return a;
  }
  size_t elem = arrayElementSize(type);
  if (elem == 0) {  // an undefined data type (0) whose tensor holds no bytes
    throw Error(ErrorKind::Input, {}, fmt::format("tensor '{}'", tensor.name()),
                fmt::format("tensors of type {} cannot be computed with", dataTypeName(type)));
  }
  auto address = reinterpret_cast<uintptr_t>(raw.data());
  // Kernels read bool elements as C++ bool, which must hold 0 or 1: other bytes are normalised
  // into a copy rather than shared.
  bool oddBools = type == DataType::Bool && std::any_of(raw.begin(), raw.end(), [](std::byte b) {
                    return std::to_integer<uint8_t>(b) > 1;
                  });
  if (oddBools) {
    Array a(type, std::move(shape));
    for (size_t i = 0; i < raw.size(); ++i) a.bytes_[i] = std::byte{raw[i] != std::byte{0}};
    return a;
  }
  if (numel > 0 && address % 16 == 0 && address % elem == 0) {
    Array a;
    a.type_ = type;
    a.shape_ = std::move(shape);
    a.numel_ = numel;
    a.elementSize_ = elem;
    std::shared_ptr<const Buffer> buffer = tensor.buffer();
    a.bytes_ = const_cast<std::byte*>(raw.data());  // never written: kernels make new outputs
    a.owner_ = std::const_pointer_cast<Buffer>(buffer);
    return a;
  }
  Array a(type, std::move(shape));
  if (!raw.empty()) std::memcpy(a.bytes_, raw.data(), raw.size());
  return a;
}

Tensor Array::toTensor(std::string name) const {
  if (!isTensor()) {
    throw Error(fmt::format("a {} value cannot be converted to a tensor", valueKindName(kind_)));
  }
  Tensor t(type_, shape_);
  t.setName(std::move(name));
  if (type_ == DataType::String) {
    t.setStrings(*strings_);
    return t;
  }
  if (isFourBit(type_)) {
    std::vector<std::byte> packed(static_cast<size_t>((numel_ + 1) / 2));
    const auto* in = data<uint8_t>();
    for (int64_t i = 0; i < numel_; ++i) {
      auto nibble = static_cast<uint8_t>(in[i] & 0x0F);
      auto& byte = packed[static_cast<size_t>(i / 2)];
      byte |= static_cast<std::byte>(i % 2 == 0 ? nibble : nibble << 4);
    }
    t.setRawBytes(std::move(packed));
    return t;
  }
  t.setRawBytes(std::make_shared<ArrayBuffer>(owner_, bytes_, byteSize()));
  return t;
}

Array Array::sequence(DataType elemType, std::vector<Array> items) {
  for (size_t i = 0; i < items.size(); ++i) {
    const Array& item = items[i];
    if (!item.isTensor()) {
      throw Error(fmt::format("a sequence holds tensors only; item {} is a {}", i,
                              valueKindName(item.kind())));
    }
    if (item.dataType() != elemType) {
      throw Error(fmt::format("a sequence of {} tensors cannot hold a {} tensor (item {})",
                              dataTypeName(elemType), dataTypeName(item.dataType()), i));
    }
  }
  Array a;
  a.type_ = elemType;
  a.kind_ = ValueKind::Sequence;
  a.owner_ = std::make_shared<Items>(std::move(items));
  return a;
}

Array Array::optional(Array value) {
  if (!value.valid()) throw Error("an optional cannot hold a missing value");
  if (value.isOptional()) throw Error("an optional cannot hold another optional");
  Array a;
  a.type_ = value.dataType();
  a.kind_ = ValueKind::Optional;
  a.owner_ = std::make_shared<Items>(1, std::move(value));
  return a;
}

Array Array::none() {
  Array a;
  a.kind_ = ValueKind::Optional;
  return a;
}

const std::vector<Array>& Array::items() const {
  if (!isSequence()) {
    throw Error(fmt::format("expected a sequence, got a {}", valueKindName(kind_)));
  }
  return *static_cast<const Items*>(owner_.get());
}

bool Array::hasValue() const {
  if (!isOptional()) {
    throw Error(fmt::format("expected an optional, got a {}", valueKindName(kind_)));
  }
  return owner_ != nullptr;
}

const Array& Array::value() const {
  if (!hasValue()) throw Error("the optional holds no value");
  return static_cast<const Items*>(owner_.get())->front();
}

Array Array::reshaped(Shape shape) const {
  if (!isTensor()) {
    throw Error(fmt::format("a {} value cannot be reshaped", valueKindName(kind_)));
  }
  int64_t numel = checkedNumel(shape);
  if (numel != numel_) {
    throw Error(fmt::format("cannot reshape a tensor of shape [{}] to [{}]", fmt::join(shape_, ","),
                            fmt::join(shape, ",")));
  }
  Array a = *this;
  a.shape_ = std::move(shape);
  return a;
}

double Array::getDouble(int64_t i) const {
  const std::byte* p = bytes_ + static_cast<size_t>(i) * elementSize_;
  auto load = [p]<class T>(T*) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (type_) {
    case DataType::Float:
      return load(static_cast<float*>(nullptr));
    case DataType::Double:
      return load(static_cast<double*>(nullptr));
    case DataType::Float16:
      return halfBitsToFloat(load(static_cast<uint16_t*>(nullptr)));
    case DataType::BFloat16:
      return bfloat16BitsToFloat(load(static_cast<uint16_t*>(nullptr)));
    case DataType::Int8:
    case DataType::Int4:
      return load(static_cast<int8_t*>(nullptr));
    case DataType::UInt8:
    case DataType::UInt4:
      return load(static_cast<uint8_t*>(nullptr));
    case DataType::Bool:
      return load(static_cast<uint8_t*>(nullptr)) != 0 ? 1.0 : 0.0;
    case DataType::Int16:
      return load(static_cast<int16_t*>(nullptr));
    case DataType::UInt16:
      return load(static_cast<uint16_t*>(nullptr));
    case DataType::Int32:
      return load(static_cast<int32_t*>(nullptr));
    case DataType::UInt32:
      return load(static_cast<uint32_t*>(nullptr));
    case DataType::Int64:
      return static_cast<double>(load(static_cast<int64_t*>(nullptr)));
    case DataType::UInt64:
      return static_cast<double>(load(static_cast<uint64_t*>(nullptr)));
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float4E2M1: {
      Tensor one(type_, {1});
      one.setRawBytes(std::vector<std::byte>{*p});
      return one.doubleAt(0);
    }
    default:
      throw Error(fmt::format("values of type {} cannot be read as numbers", dataTypeName(type_)));
  }
}

int64_t Array::getInt64(int64_t i) const {
  const std::byte* p = bytes_ + static_cast<size_t>(i) * elementSize_;
  switch (type_) {
    case DataType::Int64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DataType::Int32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::UInt64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<int64_t>(v);
    }
    default: {
      double d = getDouble(i);
      if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)) {
        throw Error(fmt::format("value {} does not fit in int64", d));
      }
      return static_cast<int64_t>(d);
    }
  }
}

std::vector<int64_t> Array::toInt64Vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  if (type_ == DataType::Int64) {
    if (numel_ > 0) std::memcpy(out.data(), bytes_, byteSize());
    return out;
  }
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = getInt64(i);
  return out;
}

std::vector<float> Array::toFloatVector() const {
  std::vector<float> out(static_cast<size_t>(numel_));
  if (type_ == DataType::Float) {
    if (numel_ > 0) std::memcpy(out.data(), bytes_, byteSize());
    return out;
  }
  for (int64_t i = 0; i < numel_; ++i)
    out[static_cast<size_t>(i)] = static_cast<float>(getDouble(i));
  return out;
}

}  // namespace qopt::interp
