#include "qopt/ir/Tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include <fmt/format.h>

#include "qopt/ir/Error.h"

namespace qopt {

// ---------------------------------------------------------------------------------------------
// Buffers

namespace {

class StringBuffer final : public Buffer {
 public:
  explicit StringBuffer(std::unique_ptr<std::string> bytes) : bytes_(std::move(bytes)) {}
  const std::byte* data() const override {
    return reinterpret_cast<const std::byte*>(bytes_->data());
  }
  size_t size() const override { return bytes_->size(); }
  std::string* ownedString() const override { return bytes_.get(); }

 private:
  std::unique_ptr<std::string> bytes_;
};

class MappedBuffer final : public Buffer {
 public:
  MappedBuffer(void* base, size_t mappedLength, const std::byte* data, size_t size)
      : base_(base), mappedLength_(mappedLength), data_(data), size_(size) {}
  ~MappedBuffer() override {
    if (base_) munmap(base_, mappedLength_);
  }
  const std::byte* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* base_;
  size_t mappedLength_;
  const std::byte* data_;
  size_t size_;
};

struct FileCloser {
  int fd;
  ~FileCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<const Buffer> Buffer::adoptString(std::unique_ptr<std::string> bytes) {
  if (!bytes) bytes = std::make_unique<std::string>();
  return std::make_shared<StringBuffer>(std::move(bytes));
}

std::shared_ptr<const Buffer> Buffer::fromString(std::string bytes) {
  return adoptString(std::make_unique<std::string>(std::move(bytes)));
}

std::shared_ptr<const Buffer> Buffer::copyOf(std::span<const std::byte> bytes) {
  return fromString(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::shared_ptr<const Buffer> Buffer::mapFile(const std::filesystem::path& file, uint64_t offset,
                                              uint64_t length) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(ErrorKind::Input, file.string(), {},
                fmt::format("cannot open external data file: {}", std::strerror(errno)));
  }
  FileCloser closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw Error(ErrorKind::Input, file.string(), {}, "external data is not a regular file");
  }
  auto fileSize = static_cast<uint64_t>(st.st_size);
  if (offset > fileSize || length > fileSize - offset) {
    throw Error(ErrorKind::Input, file.string(), {},
                fmt::format("external data file is too short: needs {} bytes at offset {}, "
                            "the file has {} bytes",
                            length, offset, fileSize));
  }
  if (length == 0) return fromString({});
  auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t alignedOffset = offset - offset % page;
  size_t mapLength = static_cast<size_t>(length + (offset - alignedOffset));
  void* base =
      mmap(nullptr, mapLength, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(alignedOffset));
  if (base == MAP_FAILED) {
    throw Error(ErrorKind::Input, file.string(), {},
                fmt::format("cannot map external data: {}", std::strerror(errno)));
  }
  auto* data = static_cast<const std::byte*>(base) + (offset - alignedOffset);
  return std::make_shared<MappedBuffer>(base, mapLength, data, static_cast<size_t>(length));
}

// ---------------------------------------------------------------------------------------------
// Small float formats

uint16_t floatToHalfBits(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7C00u |
                                 (absx > 0x7F800000u ? 0x200u | ((absx >> 13) & 0x3FFu) : 0));
  }
  if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (absx < 0x38800000u) {                                               // subnormal half or zero
    // Add the value to 0.5 (as float) so the FPU's round-to-nearest-even does the work.
    float f = std::bit_cast<float>(absx) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(f) - 0x3F000000u));
  }
  uint32_t mantOdd = (absx >> 13) & 1u;
  absx += 0xC8000FFFu + mantOdd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (absx >> 13));
}

float halfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1Fu;
  uint32_t mant = bits & 0x3FFu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {
      float f = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
      return sign ? -f : f;
    }
  } else if (exp == 31) {
    out = sign | 0x7F800000u | (mant << 13);
  } else {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t floatToBFloat16Bits(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bfloat16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

namespace {

struct MiniFloat {
  int expBits;
  int mantBits;
  int bias;
  bool fnuz;        // NaN is 0x80 only, no negative zero, no infinity
  bool hasInf;      // IEEE-like infinities (E5M2)
  bool allOnesNan;  // E4M3FN: S.1111.111 is NaN, no infinity
};

MiniFloat miniFloatOf(DataType type) {
  switch (type) {
    case DataType::Float8E4M3FN:
      return {4, 3, 7, false, false, true};
    case DataType::Float8E4M3FNUZ:
      return {4, 3, 8, true, false, false};
    case DataType::Float8E5M2:
      return {5, 2, 15, false, true, false};
    case DataType::Float8E5M2FNUZ:
      return {5, 2, 16, true, false, false};
    default:
      return {2, 1, 1, false, false, false};  // Float4E2M1
  }
}

double decodeMiniFloat(DataType type, uint32_t bits) {
  MiniFloat f = miniFloatOf(type);
  int total = 1 + f.expBits + f.mantBits;
  uint32_t signBit = 1u << (total - 1);
  uint32_t expMask = (1u << f.expBits) - 1;
  uint32_t mantMask = (1u << f.mantBits) - 1;
  bool negative = (bits & signBit) != 0;
  uint32_t exp = (bits >> f.mantBits) & expMask;
  uint32_t mant = bits & mantMask;
  if (f.fnuz && bits == signBit) return std::numeric_limits<double>::quiet_NaN();
  if (f.allOnesNan && exp == expMask && mant == mantMask) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (f.hasInf && exp == expMask) {
    if (mant != 0) return std::numeric_limits<double>::quiet_NaN();
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  double value;
  if (exp == 0) {
    value = std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mantBits);
  } else {
    value = std::ldexp(static_cast<double>(mant | (1u << f.mantBits)),
                       static_cast<int>(exp) - f.bias - f.mantBits);
  }
  return negative ? -value : value;
}

// Round to nearest (ties to even), saturating to the largest finite value as ONNX's Cast does
// by default. Exhaustive over the code space: these types are small and rarely encoded.
uint32_t encodeMiniFloat(DataType type, double value) {
  MiniFloat f = miniFloatOf(type);
  int total = 1 + f.expBits + f.mantBits;
  uint32_t codes = 1u << total;
  uint32_t signBit = 1u << (total - 1);
  if (std::isnan(value)) {
    if (f.fnuz) return signBit;
    if (f.allOnesNan) return codes - 1 - signBit;  // 0x7F
    if (f.hasInf) return (((1u << f.expBits) - 1) << f.mantBits) | 1u;
    return 0;  // float4 has no NaN
  }
  bool negative = std::signbit(value);
  if (std::isinf(value)) {
    // ONNX's saturating Cast: infinities become the largest finite value, or NaN for the FNUZ
    // types (the exhaustive search below cannot rank codes by an infinite error).
    if (f.fnuz) return signBit;
    uint32_t largest = signBit - 1;
    while (largest > 0 && !std::isfinite(decodeMiniFloat(type, largest))) --largest;
    return negative ? (largest | signBit) : largest;
  }
  double magnitude = std::fabs(value);
  uint32_t best = 0;
  double bestErr = std::numeric_limits<double>::infinity();
  for (uint32_t code = 0; code < signBit; ++code) {
    double v = decodeMiniFloat(type, code);
    if (!std::isfinite(v)) continue;
    double err = std::fabs(v - magnitude);
    if (err < bestErr || (err == bestErr && (code & 1u) == 0)) {
      best = code;
      bestErr = err;
    }
  }
  if (negative && !(f.fnuz && best == 0)) best |= signBit;
  return best;
}

template <class T>
T loadAs(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
void storeAs(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

double decodeElement(DataType type, const std::byte* data, uint64_t i, const std::string& name) {
  switch (type) {
    case DataType::Float:
      return loadAs<float>(data + i * 4);
    case DataType::Double:
      return loadAs<double>(data + i * 8);
    case DataType::Float16:
      return halfBitsToFloat(loadAs<uint16_t>(data + i * 2));
    case DataType::BFloat16:
      return bfloat16BitsToFloat(loadAs<uint16_t>(data + i * 2));
    case DataType::Int8:
      return loadAs<int8_t>(data + i);
    case DataType::UInt8:
      return loadAs<uint8_t>(data + i);
    case DataType::Bool:
      return loadAs<uint8_t>(data + i) != 0 ? 1.0 : 0.0;
    case DataType::Int16:
      return loadAs<int16_t>(data + i * 2);
    case DataType::UInt16:
      return loadAs<uint16_t>(data + i * 2);
    case DataType::Int32:
      return loadAs<int32_t>(data + i * 4);
    case DataType::UInt32:
      return loadAs<uint32_t>(data + i * 4);
    case DataType::Int64:
      return static_cast<double>(loadAs<int64_t>(data + i * 8));
    case DataType::UInt64:
      return static_cast<double>(loadAs<uint64_t>(data + i * 8));
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
      return decodeMiniFloat(type, static_cast<uint32_t>(loadAs<uint8_t>(data + i)));
    case DataType::Int4:
    case DataType::UInt4:
    case DataType::Float4E2M1: {
      uint8_t byte = loadAs<uint8_t>(data + i / 2);
      uint32_t nibble = (i % 2 == 0) ? (byte & 0x0Fu) : (byte >> 4);
      if (type == DataType::UInt4) return nibble;
      if (type == DataType::Int4) return static_cast<double>(static_cast<int>(nibble << 28) >> 28);
      return decodeMiniFloat(type, nibble);
    }
    default:
      throw Error(ErrorKind::Input, {}, fmt::format("tensor '{}'", name),
                  fmt::format("values of type {} cannot be read as numbers", dataTypeName(type)));
  }
}

// A double to float conversion that rounds to odd: narrowing that float again (to float16 or
// bfloat16, both at least two bits narrower) with round-to-nearest-even then gives the correctly
// rounded result, where a plain cast would round twice (1 + 2^-11 + 2^-40 must become the half
// above 1, not 1).
float toFloatRoundToOdd(double v) {
  auto f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  auto bits = std::bit_cast<uint32_t>(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) --bits;  // truncate toward zero
  return std::bit_cast<float>(bits | 1u);
}

template <class T>
T saturate(double v) {
  if (std::isnan(v)) return T{0};
  double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  double hi = static_cast<double>(std::numeric_limits<T>::max());
  double r = std::nearbyint(v);
  if (r <= lo) return std::numeric_limits<T>::lowest();
  if (r >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

/// Stores convert(values[i]) as a T at element i.
template <class T, class Convert>
void storeEach(std::byte* out, std::span<const double> values, Convert convert) {
  for (size_t i = 0; i < values.size(); ++i) storeAs<T>(out + i * sizeof(T), convert(values[i]));
}

template <class T>
void storeSaturated(std::byte* out, std::span<const double> values) {
  storeEach<T>(out, values, [](double v) { return saturate<T>(v); });
}

/// Rounds and saturates to each integer type.
struct IntegerStore {
  DataType type;
  void (*store)(std::byte*, std::span<const double>);
};
constexpr IntegerStore kIntegerStores[] = {
    {DataType::Int8, storeSaturated<int8_t>},   {DataType::UInt8, storeSaturated<uint8_t>},
    {DataType::Int16, storeSaturated<int16_t>}, {DataType::UInt16, storeSaturated<uint16_t>},
    {DataType::Int32, storeSaturated<int32_t>}, {DataType::UInt32, storeSaturated<uint32_t>},
    {DataType::Int64, storeSaturated<int64_t>}, {DataType::UInt64, storeSaturated<uint64_t>}};

/// A 4-bit element: Int4 and UInt4 round and saturate, Float4E2M1 encodes.
uint32_t encodeNibble(DataType type, double v) {
  if (type == DataType::Int4) {
    // Through int32: converting a negative double straight to unsigned is undefined.
    double clamped = std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(v), -8.0, 7.0);
    return static_cast<uint32_t>(static_cast<int32_t>(clamped)) & 0xFu;
  }
  if (type == DataType::UInt4) {
    double clamped = std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(v), 0.0, 15.0);
    return static_cast<uint32_t>(clamped);
  }
  return encodeMiniFloat(type, v);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tensor

Tensor::Tensor(DataType type, std::vector<int64_t> dims) : type_(type), dims_(std::move(dims)) {
  bytes_ = Buffer::fromString({});
}

uint64_t Tensor::numElements() const {
  uint64_t count = 1;
  for (int64_t d : dims_) {
    if (d < 0) {
      throw Error(ErrorKind::Input, {}, fmt::format("tensor '{}'", name_),
                  fmt::format("negative dimension {}", d));
    }
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      throw Error(ErrorKind::Input, {}, fmt::format("tensor '{}'", name_),
                  "the product of the dimensions overflows 64 bits");
    }
    count *= static_cast<uint64_t>(d);
  }
  return count;
}

void Tensor::load() const {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (bytes_ || !external_) return;
  const ExternalData& ext = *external_;
  uint64_t offset = ext.offset.value_or(0);
  uint64_t length;
  if (ext.length) {
    length = *ext.length;
  } else {
    auto needed = dataTypeStorageBytes(type_, numElements());
    length = needed.value_or(0);
  }
  try {
    bytes_ = Buffer::mapFile(ext.baseDir / ext.location, offset, length);
  } catch (const Error& e) {
    throw Error(ErrorKind::Input, e.where(), fmt::format("tensor '{}'", name_), e.cause());
  }
}

bool Tensor::isLoaded() const {
  return bytes_ != nullptr;
}

std::span<const std::byte> Tensor::rawBytes() const {
  if (!bytes_) load();
  return bytes_ ? bytes_->bytes() : std::span<const std::byte>();
}

std::shared_ptr<const Buffer> Tensor::buffer() const {
  if (!bytes_) load();
  return bytes_;
}

void Tensor::setRawBytes(std::shared_ptr<const Buffer> bytes) {
  bytes_ = std::move(bytes);
  encoding_ = TensorEncoding::Raw;
  external_.reset();
}

void Tensor::setRawBytes(std::vector<std::byte> bytes) {
  setRawBytes(copyBytes(bytes));
}

void Tensor::setStrings(std::vector<std::string> values) {
  strings_ = std::move(values);
  bytes_ = Buffer::fromString({});
  external_.reset();
}

void Tensor::setExternalData(ExternalData data) {
  external_ = std::move(data);
  encoding_ = TensorEncoding::External;
  bytes_.reset();
}

void Tensor::clearExternalData() {
  if (!bytes_) load();
  external_.reset();
  encoding_ = TensorEncoding::Raw;
}

std::shared_ptr<const Buffer> Tensor::copyBytes(std::span<const std::byte> bytes) {
  return Buffer::copyOf(bytes);
}

double Tensor::doubleAt(uint64_t index) const {
  return decodeElement(type_, rawBytes().data(), index, name_);
}

std::vector<double> Tensor::toDoubles() const {
  uint64_t n = numElements();
  auto bytes = rawBytes();
  auto needed = dataTypeStorageBytes(type_, n);
  if (type_ == DataType::String || type_ == DataType::Complex64 || type_ == DataType::Complex128 ||
      type_ == DataType::Undefined) {
    throw Error(ErrorKind::Input, {}, fmt::format("tensor '{}'", name_),
                fmt::format("values of type {} cannot be read as numbers", dataTypeName(type_)));
  }
  if (!needed || bytes.size() < *needed) {
    throw Error(
        ErrorKind::Input, {}, fmt::format("tensor '{}'", name_),
        fmt::format("holds {} bytes, its shape needs {}", bytes.size(), needed.value_or(0)));
  }
  std::vector<double> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = decodeElement(type_, bytes.data(), i, name_);
  return out;
}

std::vector<float> Tensor::toFloats() const {
  if (type_ == DataType::Float) {
    auto bytes = rawBytes();
    uint64_t n = numElements();
    if (bytes.size() >= n * 4) {
      std::vector<float> out(n);
      if (n) std::memcpy(out.data(), bytes.data(), n * 4);
      return out;
    }
  }
  std::vector<double> d = toDoubles();
  return std::vector<float>(d.begin(), d.end());
}

std::vector<int64_t> Tensor::toInt64s() const {
  if (type_ == DataType::Int64 || type_ == DataType::UInt64) {
    auto bytes = rawBytes();
    uint64_t n = numElements();
    if (bytes.size() >= n * 8) {
      std::vector<int64_t> out(n);
      if (n) std::memcpy(out.data(), bytes.data(), n * 8);
      return out;
    }
  }
  std::vector<double> d = toDoubles();
  std::vector<int64_t> out(d.size());
  for (size_t i = 0; i < d.size(); ++i) out[i] = static_cast<int64_t>(d[i]);
  return out;
}

Tensor Tensor::fromDoubles(DataType type, std::vector<int64_t> dims,
                           std::span<const double> values) {
  Tensor t(type, std::move(dims));
  auto size = dataTypeStorageBytes(type, values.size());
  if (!size || type == DataType::String || type == DataType::Complex64 ||
      type == DataType::Complex128) {
    throw Error(ErrorKind::Internal, {}, {},
                fmt::format("cannot build a {} tensor from numbers", dataTypeName(type)));
  }
  std::string bytes(*size, '\0');
  auto* out = reinterpret_cast<std::byte*>(bytes.data());
  switch (type) {
    case DataType::Float:
      storeEach<float>(out, values, [](double v) { return static_cast<float>(v); });
      break;
    case DataType::Double:
      storeEach<double>(out, values, [](double v) { return v; });
      break;
    case DataType::Float16:
      storeEach<uint16_t>(out, values,
                          [](double v) { return floatToHalfBits(toFloatRoundToOdd(v)); });
      break;
    case DataType::BFloat16:
      storeEach<uint16_t>(out, values,
                          [](double v) { return floatToBFloat16Bits(toFloatRoundToOdd(v)); });
      break;
    case DataType::Bool:
      storeEach<uint8_t>(out, values, [](double v) { return static_cast<uint8_t>(v != 0.0); });
      break;
    case DataType::Int8:
    case DataType::UInt8:
    case DataType::Int16:
    case DataType::UInt16:
    case DataType::Int32:
    case DataType::UInt32:
    case DataType::Int64:
    case DataType::UInt64:
      for (const IntegerStore& store : kIntegerStores) {
        if (store.type == type) store.store(out, values);
      }
      break;
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
      storeEach<uint8_t>(
          out, values, [type](double v) { return static_cast<uint8_t>(encodeMiniFloat(type, v)); });
      break;
    case DataType::Int4:
    case DataType::UInt4:
    case DataType::Float4E2M1:
      for (size_t i = 0; i < values.size(); ++i) {
        auto& byte = reinterpret_cast<uint8_t&>(out[i / 2]);
        const uint32_t nibble = encodeNibble(type, values[i]);
        byte = static_cast<uint8_t>(i % 2 == 0 ? ((byte & 0xF0u) | nibble)
                                               : ((byte & 0x0Fu) | (nibble << 4)));
      }
      break;
    default:
      break;
  }
  t.setRawBytes(Buffer::fromString(std::move(bytes)));
  return t;
}

Tensor Tensor::fromFloats(std::vector<int64_t> dims, std::span<const float> values) {
  return fromPod<float>(DataType::Float, std::move(dims), values);
}

Tensor Tensor::fromInt64s(DataType type, std::vector<int64_t> dims,
                          std::span<const int64_t> values) {
  if (type == DataType::Int64) return fromPod<int64_t>(type, std::move(dims), values);
  std::vector<double> d(values.begin(), values.end());
  return fromDoubles(type, std::move(dims), d);
}

uint64_t Tensor::contentHash() const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  };
  auto type = static_cast<int32_t>(type_);
  mix(&type, sizeof(type));
  for (int64_t d : dims_) mix(&d, sizeof(d));
  if (type_ == DataType::String) {
    for (const std::string& s : strings_) {
      uint64_t len = s.size();
      mix(&len, sizeof(len));
      mix(s.data(), s.size());
    }
  } else {
    auto bytes = rawBytes();
    mix(bytes.data(), bytes.size());
  }
  return h;
}

bool Tensor::sameContent(const Tensor& other) const {
  if (type_ != other.type_ || dims_ != other.dims_) return false;
  if (type_ == DataType::String) return strings_ == other.strings_;
  auto a = rawBytes();
  auto b = other.rawBytes();
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

}  // namespace qopt
