// Typed pass options that belong to the pass instance and print back, so that a pipeline string
// round-trips: `insert-qdq{method=entropy ops=[Conv,Gemm] percentile=99.99}`.
//
// A pass declares its options as members, registering them with itself (a Pass is an OptionSet):
//
//   Option<bool> recurse_{*this, "recurse", true, "Also clean If/Loop/Scan bodies"};
//   Option<int64_t> maxIterations_{*this, "max-iterations", 8, "Give up after this many rounds"};
//   Option<double> percentile_{*this, "percentile", 99.99, "Histogram percentile"};
//   Option<std::string> file_{*this, "file", "", "Where to write the table"};
//   ListOption<std::string> ops_{*this, "ops", {"Conv", "Gemm"}, "Op types to quantize"};
//   EnumOption<Method> method_{*this, "method", Method::Max, "Calibration method",
//                              {{Method::Max, "max"}, {Method::Entropy, "entropy"}}};
//
// and reads them with `*recurse_`, `ops_.get()`. Values are set only by the pipeline parser (and
// tests), always before anything runs, so a bad value never surfaces half-way through a run.
//
// Textual forms: bool true|false (also 1|0|yes|no|on|off when reading), int decimal, float in the
// shortest form that reads back exactly, strings bare or double-quoted with backslash escapes,
// lists as [a,b,c] of the element form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qopt {

/// An option value as written in a pipeline: a scalar, or a bracketed list of scalars.
struct OptionValue {
  bool isList = false;
  std::vector<std::string> items;  // one item for a scalar

  static OptionValue scalar(std::string text) { return {false, {std::move(text)}}; }
  static OptionValue list(std::vector<std::string> items) { return {true, std::move(items)}; }
  bool operator==(const OptionValue&) const = default;
};

/// Thrown by OptionBase::parse for a value it cannot take; OptionSet::set turns it into a
/// qopt::Error naming the pass and the key.
struct OptionValueError {
  std::string reason;
};

class OptionSet;

class OptionBase {
 public:
  OptionBase(OptionSet& owner, std::string name, std::string help);
  OptionBase(const OptionBase&) = delete;
  OptionBase& operator=(const OptionBase&) = delete;
  virtual ~OptionBase() = default;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  /// "bool", "int", "float", "string", "list<string>", "list<int>", "list<float>", "enum".
  virtual std::string typeName() const = 0;
  /// Allowed values of an enum option (empty for other types).
  virtual std::vector<std::string> choices() const { return {}; }
  virtual OptionValue value() const = 0;
  virtual OptionValue defaultValue() const = 0;
  /// Sets the option from its textual form; throws OptionValueError.
  virtual void parse(const OptionValue& text) = 0;
  virtual void reset() = 0;
  /// Whether the value was given explicitly (parse) rather than left at its default.
  bool isExplicit() const { return explicit_; }

 protected:
  void markExplicit(bool value) { explicit_ = value; }

 private:
  std::string name_;
  std::string help_;
  bool explicit_ = false;
};

/// The options of one pass (or of a pipeline construct such as fixpoint), in declaration order.
class OptionSet {
 public:
  /// `ownerName` names the pass in messages.
  explicit OptionSet(std::string ownerName) : ownerName_(std::move(ownerName)) {}
  OptionSet(const OptionSet&) = delete;
  OptionSet& operator=(const OptionSet&) = delete;
  virtual ~OptionSet() = default;

  const std::string& ownerName() const { return ownerName_; }
  const std::vector<OptionBase*>& optionList() const { return options_; }
  OptionBase* findOption(std::string_view key) const;
  /// Sets `key`; throws qopt::Error (Usage) naming the pass, the key and the valid keys or
  /// values, with a did-you-mean for near misses.
  void setOption(std::string_view key, const OptionValue& value);
  /// Convenience for code and tests: parses `text` as written inside braces (`[a,b]` is a list).
  void setOption(std::string_view key, std::string_view text);
  /// `key=value key2=value2` in declaration order, every option included (the canonical form).
  std::string printOptions() const;
  /// Checks ranges and combinations once every option is set (the pipeline parser calls it);
  /// reports a problem with failOption.
  virtual void validateOptions() const {}
  /// Throws qopt::Error (Usage): "pass 'x': option 'key': <reason>".
  [[noreturn]] void failOption(std::string_view key, const std::string& reason) const;

 private:
  friend class OptionBase;
  std::string ownerName_;
  std::vector<OptionBase*> options_;
};

namespace option_detail {
template <class T>
struct Traits;
template <>
struct Traits<bool> {
  static std::string typeName() { return "bool"; }
  static bool parse(const std::string& text);
  static std::string print(bool value);
};
template <>
struct Traits<int64_t> {
  static std::string typeName() { return "int"; }
  static int64_t parse(const std::string& text);
  static std::string print(int64_t value);
};
template <>
struct Traits<double> {
  static std::string typeName() { return "float"; }
  static double parse(const std::string& text);
  static std::string print(double value);
};
template <>
struct Traits<std::string> {
  static std::string typeName() { return "string"; }
  static std::string parse(const std::string& text) { return text; }
  static std::string print(const std::string& value) { return value; }
};
/// Rejects a list where a scalar is expected.
const std::string& scalarText(const OptionValue& value);
}  // namespace option_detail

/// A scalar option: T is bool, int64_t, double or std::string.
template <class T>
class Option : public OptionBase {
  using Traits = option_detail::Traits<T>;

 public:
  Option(OptionSet& owner, std::string name, T defaultValue, std::string help)
      : OptionBase(owner, std::move(name), std::move(help)),
        default_(defaultValue),
        value_(std::move(defaultValue)) {}

  const T& get() const { return value_; }
  const T& operator*() const { return value_; }
  const T* operator->() const { return &value_; }
  void set(T value) {
    value_ = std::move(value);
    markExplicit(true);
  }

  std::string typeName() const override { return Traits::typeName(); }
  OptionValue value() const override { return OptionValue::scalar(Traits::print(value_)); }
  OptionValue defaultValue() const override { return OptionValue::scalar(Traits::print(default_)); }
  void parse(const OptionValue& text) override {
    value_ = Traits::parse(option_detail::scalarText(text));
    markExplicit(true);
  }
  void reset() override {
    value_ = default_;
    markExplicit(false);
  }

 private:
  T default_;
  T value_;
};

/// A list option: T is std::string, int64_t or double. A single bare value reads as a
/// one-element list.
template <class T>
class ListOption : public OptionBase {
  using Traits = option_detail::Traits<T>;

 public:
  ListOption(OptionSet& owner, std::string name, std::vector<T> defaultValue, std::string help)
      : OptionBase(owner, std::move(name), std::move(help)),
        default_(defaultValue),
        value_(std::move(defaultValue)) {}

  const std::vector<T>& get() const { return value_; }
  const std::vector<T>& operator*() const { return value_; }
  const std::vector<T>* operator->() const { return &value_; }
  void set(std::vector<T> value) {
    value_ = std::move(value);
    markExplicit(true);
  }

  std::string typeName() const override { return "list<" + Traits::typeName() + ">"; }
  OptionValue value() const override { return print(value_); }
  OptionValue defaultValue() const override { return print(default_); }
  void parse(const OptionValue& text) override {
    std::vector<T> parsed;
    for (const std::string& item : text.items) parsed.push_back(Traits::parse(item));
    value_ = std::move(parsed);
    markExplicit(true);
  }
  void reset() override {
    value_ = default_;
    markExplicit(false);
  }

 private:
  static OptionValue print(const std::vector<T>& values) {
    std::vector<std::string> items;
    for (const T& v : values) items.push_back(Traits::print(v));
    return OptionValue::list(std::move(items));
  }
  std::vector<T> default_;
  std::vector<T> value_;
};

/// An option taking one of a fixed set of spellings, each mapped to a value of E.
template <class E>
class EnumOption : public OptionBase {
 public:
  EnumOption(OptionSet& owner, std::string name, E defaultValue, std::string help,
             std::vector<std::pair<E, std::string>> spellings)
      : OptionBase(owner, std::move(name), std::move(help)),
        spellings_(std::move(spellings)),
        default_(defaultValue),
        value_(defaultValue) {}

  E get() const { return value_; }
  E operator*() const { return value_; }
  void set(E value) {
    value_ = value;
    markExplicit(true);
  }
  /// The spelling of the current value.
  std::string spelling() const { return spell(value_); }

  std::string typeName() const override { return "enum"; }
  std::vector<std::string> choices() const override {
    std::vector<std::string> names;
    for (const auto& [v, s] : spellings_) names.push_back(s);
    return names;
  }
  OptionValue value() const override { return OptionValue::scalar(spell(value_)); }
  OptionValue defaultValue() const override { return OptionValue::scalar(spell(default_)); }
  void parse(const OptionValue& text) override {
    const std::string& word = option_detail::scalarText(text);
    for (const auto& [v, s] : spellings_) {
      if (s == word) {
        value_ = v;
        markExplicit(true);
        return;
      }
    }
    throw OptionValueError{"'" + word + "' is not one of the choices"};
  }
  void reset() override {
    value_ = default_;
    markExplicit(false);
  }

 private:
  std::string spell(E value) const {
    for (const auto& [v, s] : spellings_) {
      if (v == value) return s;
    }
    return "?";
  }
  std::vector<std::pair<E, std::string>> spellings_;
  E default_;
  E value_;
};

/// Formats an option value the way the pipeline parser reads it back (quoting where needed).
std::string formatOptionValue(const OptionValue& value);

}  // namespace qopt
