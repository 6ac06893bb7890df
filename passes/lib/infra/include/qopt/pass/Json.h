// A small JSON value: what passes publish for later passes and reports, and what --report writes.
// Objects keep insertion order so that output is deterministic and reads in a logical order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace qopt {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool value) : value_(value) {}
  Json(int value) : value_(static_cast<int64_t>(value)) {}
  Json(int64_t value) : value_(value) {}
  Json(uint64_t value) : value_(static_cast<int64_t>(value)) {}
  Json(double value) : value_(value) {}
  Json(const char* value) : value_(std::string(value)) {}
  Json(std::string value) : value_(std::move(value)) {}
  Json(std::string_view value) : value_(std::string(value)) {}
  Json(Array value) : value_(std::move(value)) {}
  Json(Object value) : value_(std::move(value)) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  bool isNull() const { return std::holds_alternative<std::monostate>(value_); }
  bool isBool() const { return std::holds_alternative<bool>(value_); }
  bool isInt() const { return std::holds_alternative<int64_t>(value_); }
  bool isNumber() const { return isInt() || std::holds_alternative<double>(value_); }
  bool isString() const { return std::holds_alternative<std::string>(value_); }
  bool isArray() const { return std::holds_alternative<Array>(value_); }
  bool isObject() const { return std::holds_alternative<Object>(value_); }

  // Accessors throw qopt::Error (Internal) on a type mismatch.
  bool asBool() const;
  int64_t asInt() const;
  double asDouble() const;  // ints convert
  const std::string& asString() const;
  const Array& asArray() const;
  Array& asArray();
  const Object& asObject() const;
  Object& asObject();

  /// Object member, inserted as null when missing (turns a null value into an object first).
  Json& operator[](std::string_view key);
  /// Object member, or a null value when missing (reading never inserts).
  const Json& operator[](std::string_view key) const;
  /// Object member or nullptr.
  const Json* find(std::string_view key) const;
  Json* find(std::string_view key);
  /// Appends to an array (turns a null value into an array first).
  void push(Json value);
  /// Appends an object member without looking for an existing key (for building large objects).
  void append(std::string key, Json value);
  size_t size() const;  // array or object length, else 0

  /// Compact (indent < 0) or pretty printed with `indent` spaces. Doubles print in the shortest
  /// form that reads back exactly; NaN and infinities print as null (JSON has no spelling).
  std::string dump(int indent = -1) const;
  /// Strict RFC 8259 parsing; throws qopt::Error (Input) naming `displayName`, line and column.
  static Json parse(std::string_view text, std::string_view displayName = "<json>");

  bool operator==(const Json& other) const = default;

 private:
  void dumpTo(std::string& out, int indent, int depth) const;
  std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object> value_;
};

}  // namespace qopt
