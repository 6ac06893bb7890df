// TensorProto -> Tensor. raw_data is moved out of the proto (no copy), external data is checked
// and mapped lazily, typed fields (float_data, int32_data, ...) are turned into raw bytes and the
// tensor remembers them so export writes the same fields.
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ExternalData.h"
#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace {

class TensorImporter {
 public:
  TensorImporter(onnx::TensorProto& proto, const ImportContext& context, const Subject& subject)
      : proto_(proto), context_(context), subject_(subject) {}

  Tensor run() {
    DataType type = DataType::Undefined;
    if (proto_.has_data_type()) {
      auto known = dataTypeFromInt(proto_.data_type());
      if (!known) {
        fail(fmt::format("unknown data type {} (qopt knows 0 to {})", proto_.data_type(),
                         kMaxKnownDataType));
      }
      type = *known;
    }
    Tensor tensor(type, {proto_.dims().begin(), proto_.dims().end()});
    tensor.setName(proto_.name());
    tensor.emptyNamePresent = proto_.has_name() && proto_.name().empty();
    try {
      count_ = tensor.numElements();
    } catch (const Error& e) {
      fail(e.cause());
    }
    auto bytes = dataTypeStorageBytes(type, count_);
    if (!bytes)
      fail(fmt::format("its shape [{}] needs more bytes than can be addressed", dimsText()));
    bytesNeeded_ = *bytes;

    if (proto_.has_segment()) tensor.segment = {proto_.segment().begin(), proto_.segment().end()};
    tensor.setDocString(proto_.doc_string());

    const char* typedField = nonEmptyTypedField();
    if (proto_.data_location() == onnx::TensorProto::EXTERNAL) {
      if (proto_.has_raw_data() || typedField) {
        fail("stores values both inline and as external data");
      }
      importExternal(tensor);
    } else if (!proto_.external_data().empty()) {
      fail("has external_data entries but its data_location is not EXTERNAL");
    } else if (proto_.has_raw_data()) {
      if (typedField) fail(fmt::format("stores values in both raw_data and {}", typedField));
      importRaw(tensor);
    } else {
      importTyped(tensor);
    }
    takeMetadataProps(proto_, kTensorMetadataPropsField, tensor.metadataProps());
    tensor.unknownFields = saveUnknownFields(proto_);
    return tensor;
  }

 private:
  [[noreturn]] void fail(const std::string& cause) const {
    throw Error(ErrorKind::Input, context_.displayName, subject_.str(), cause);
  }

  std::string dimsText() const { return fmt::format("{}", fmt::join(proto_.dims(), ", ")); }

  DataType type() const { return static_cast<DataType>(proto_.data_type()); }

  const char* nonEmptyTypedField() const {
    const char* found = nullptr;
    auto note = [&](bool nonEmpty, const char* name) {
      if (!nonEmpty) return;
      if (found) fail(fmt::format("stores values in both {} and {}", found, name));
      found = name;
    };
    note(!proto_.float_data().empty(), "float_data");
    note(!proto_.int32_data().empty(), "int32_data");
    note(!proto_.string_data().empty(), "string_data");
    note(!proto_.int64_data().empty(), "int64_data");
    note(!proto_.double_data().empty(), "double_data");
    note(!proto_.uint64_data().empty(), "uint64_data");
    return found;
  }

  void importRaw(Tensor& tensor) {
    if (type() == DataType::String) fail("a STRING tensor cannot use raw_data");
    std::unique_ptr<std::string> raw(proto_.release_raw_data());
    if (raw->size() != bytesNeeded_) {
      fail(fmt::format("raw_data holds {} bytes, but its shape [{}] of {} needs {}", raw->size(),
                       dimsText(), dataTypeName(type()), bytesNeeded_));
    }
    tensor.setRawBytes(Buffer::adoptString(std::move(raw)));
  }

  void checkCount(const char* field, uint64_t have, uint64_t need) const {
    if (have != need) {
      fail(fmt::format("{} holds {} values, but its shape [{}] of {} needs {}", field, have,
                       dimsText(), dataTypeName(type()), need));
    }
  }

  [[noreturn]] void wrongField(const char* field) const {
    fail(fmt::format("{} cannot hold values of type {}", field, dataTypeName(type())));
  }

  template <class Repeated>
  static std::string copyContiguous(const Repeated& values) {
    std::string bytes(static_cast<size_t>(values.size()) * sizeof(values.Get(0)), '\0');
    if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }

  // Narrows each element to `width` bytes (the raw layout of types stored widened in a field).
  template <class Repeated>
  static std::string narrow(const Repeated& values, size_t width) {
    std::string bytes(static_cast<size_t>(values.size()) * width, '\0');
    char* out = bytes.data();
    for (auto value : values) {
      auto bits = static_cast<uint64_t>(value);
      std::memcpy(out, &bits, width);  // little-endian: the low bytes come first
      out += width;
    }
    return bytes;
  }

  void importTyped(Tensor& tensor) {
    DataType t = type();
    std::string bytes;
    if (!proto_.float_data().empty()) {
      if (t != DataType::Float && t != DataType::Complex64) wrongField("float_data");
      checkCount("float_data", static_cast<uint64_t>(proto_.float_data_size()), bytesNeeded_ / 4);
      bytes = copyContiguous(proto_.float_data());
    } else if (!proto_.double_data().empty()) {
      if (t != DataType::Double && t != DataType::Complex128) wrongField("double_data");
      checkCount("double_data", static_cast<uint64_t>(proto_.double_data_size()), bytesNeeded_ / 8);
      bytes = copyContiguous(proto_.double_data());
    } else if (!proto_.int64_data().empty()) {
      if (t != DataType::Int64) wrongField("int64_data");
      checkCount("int64_data", static_cast<uint64_t>(proto_.int64_data_size()), count_);
      bytes = copyContiguous(proto_.int64_data());
    } else if (!proto_.uint64_data().empty()) {
      if (t != DataType::UInt64 && t != DataType::UInt32) wrongField("uint64_data");
      checkCount("uint64_data", static_cast<uint64_t>(proto_.uint64_data_size()), count_);
      bytes = t == DataType::UInt64 ? copyContiguous(proto_.uint64_data())
                                    : narrow(proto_.uint64_data(), 4);
    } else if (!proto_.int32_data().empty()) {
      int bits = dataTypeBits(t);
      bool fits = t != DataType::String && t != DataType::Int64 && t != DataType::UInt64 &&
                  t != DataType::UInt32 && t != DataType::Float && t != DataType::Double &&
                  t != DataType::Complex64 && t != DataType::Complex128 && bits != 0;
      if (!fits) wrongField("int32_data");
      // One element per int32, except 4-bit types: one packed byte (two elements) per int32.
      size_t width = bits <= 8 ? 1 : static_cast<size_t>(bits / 8);
      checkCount("int32_data", static_cast<uint64_t>(proto_.int32_data_size()),
                 bytesNeeded_ / width);
      bytes = width == 4 ? copyContiguous(proto_.int32_data()) : narrow(proto_.int32_data(), width);
    } else if (!proto_.string_data().empty() || t == DataType::String) {
      if (t != DataType::String) wrongField("string_data");
      checkCount("string_data", static_cast<uint64_t>(proto_.string_data_size()), count_);
      std::vector<std::string> strings;
      strings.reserve(static_cast<size_t>(proto_.string_data_size()));
      for (std::string& s : *proto_.mutable_string_data()) strings.push_back(std::move(s));
      tensor.setStrings(std::move(strings));
      tensor.setEncoding(TensorEncoding::Typed);
      return;
    } else if (bytesNeeded_ != 0) {
      fail(fmt::format("holds no values, but its shape [{}] of {} needs {}", dimsText(),
                       dataTypeName(t), count_));
    }
    tensor.setRawBytes(Buffer::fromString(std::move(bytes)));
    tensor.setEncoding(TensorEncoding::Typed);
  }

  uint64_t parseNumber(const std::string& key, const std::string& value) const {
    uint64_t number = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
      fail(fmt::format("external data {} '{}' is not a non-negative integer", key, value));
    }
    return number;
  }

  void importExternal(Tensor& tensor) {
    if (type() == DataType::String) fail("a STRING tensor cannot use external data");
    ExternalData ext;
    // Absolute, so that the lazy read still finds the file if the working folder changes.
    ext.baseDir = context_.baseDir.empty() ? std::filesystem::current_path()
                                           : std::filesystem::absolute(context_.baseDir);
    bool hasLocation = false;
    for (const onnx::StringStringEntryProto& entry : proto_.external_data()) {
      ext.entries.emplace_back(entry.key(), entry.value());
      if (entry.key() == "location") {
        ext.location = entry.value();
        hasLocation = true;
      } else if (entry.key() == "offset") {
        ext.offset = parseNumber("offset", entry.value());
      } else if (entry.key() == "length") {
        ext.length = parseNumber("length", entry.value());
      }
    }
    if (!hasLocation) fail("external data has no location");
    if (ext.length && *ext.length != bytesNeeded_) {
      fail(
          fmt::format("external data length {} disagrees with its shape [{}] of {}, which needs "
                      "{} bytes",
                      *ext.length, dimsText(), dataTypeName(type()), bytesNeeded_));
    }
    std::filesystem::path file =
        resolveExternalLocation(ext.baseDir, ext.location, context_.displayName, subject_.str());
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
      int error = errno;
      fail(error == ENOENT ? fmt::format("external data file '{}' does not exist", ext.location)
                           : fmt::format("cannot read external data file '{}': {}", ext.location,
                                         std::strerror(error)));
    }
    if (!S_ISREG(st.st_mode)) {
      fail(fmt::format("external data file '{}' is not a regular file", ext.location));
    }
    auto fileSize = static_cast<uint64_t>(st.st_size);
    uint64_t offset = ext.offset.value_or(0);
    if (offset > fileSize || bytesNeeded_ > fileSize - offset) {
      fail(
          fmt::format("external data file '{}' is too short: the tensor needs {} bytes at offset "
                      "{}, the file has {} bytes",
                      ext.location, bytesNeeded_, offset, fileSize));
    }
    tensor.setExternalData(std::move(ext));
  }

  onnx::TensorProto& proto_;
  const ImportContext& context_;
  const Subject& subject_;
  uint64_t count_ = 0;
  size_t bytesNeeded_ = 0;
};

}  // namespace

Tensor importTensorProto(onnx::TensorProto&& proto, const ImportContext& context,
                         const Subject& subject) {
  return TensorImporter(proto, context, subject).run();
}

Tensor importTensorProto(onnx::TensorProto&& proto, const ImportContext& context) {
  std::string name = proto.name();
  return importTensorProto(std::move(proto), context, Subject("tensor", name));
}

}  // namespace qopt::detail
