#include "qopt/pass/Options.h"

#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/Suggest.h"

namespace qopt {

OptionBase::OptionBase(OptionSet& owner, std::string name, std::string help)
    : name_(std::move(name)), help_(std::move(help)) {
  owner.options_.push_back(this);
}

namespace option_detail {

bool Traits<bool>::parse(const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw OptionValueError{fmt::format("'{}' is not a boolean (true or false)", text)};
}
std::string Traits<bool>::print(bool value) {
  return value ? "true" : "false";
}

int64_t Traits<int64_t>::parse(const std::string& text) {
  int64_t value = 0;
  const char* begin = text.data();
  if (!text.empty() && text[0] == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size()) {
    throw OptionValueError{fmt::format("'{}' is not an integer", text)};
  }
  if (ec == std::errc::result_out_of_range) {
    throw OptionValueError{fmt::format("'{}' is out of the 64-bit integer range", text)};
  }
  return value;
}
std::string Traits<int64_t>::print(int64_t value) {
  return fmt::format("{}", value);
}

double Traits<double>::parse(const std::string& text) {
  double value = 0;
  const char* begin = text.data();
  if (!text.empty() && text[0] == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    throw OptionValueError{fmt::format("'{}' is not a number", text)};
  }
  return value;
}
std::string Traits<double>::print(double value) {
  return fmt::format("{}", value);
}

const std::string& scalarText(const OptionValue& value) {
  if (value.isList || value.items.size() != 1) {
    throw OptionValueError{"expected a single value, not a list"};
  }
  return value.items[0];
}

}  // namespace option_detail

OptionBase* OptionSet::findOption(std::string_view key) const {
  for (OptionBase* option : options_) {
    if (option->name() == key) return option;
  }
  return nullptr;
}

void OptionSet::failOption(std::string_view key, const std::string& reason) const {
  throw Error(ErrorKind::Usage, "", ownerName_, fmt::format("option '{}': {}", key, reason));
}

void OptionSet::setOption(std::string_view key, const OptionValue& value) {
  OptionBase* option = findOption(key);
  if (!option) {
    std::vector<std::string> keys;
    for (const OptionBase* o : options_) keys.push_back(o->name());
    std::string valid = keys.empty() ? "it takes no options"
                                     : fmt::format("valid options: {}", fmt::join(keys, ", "));
    throw Error(ErrorKind::Usage, "", ownerName_,
                fmt::format("unknown option '{}'{} ({})", key, didYouMean(key, keys), valid));
  }
  try {
    option->parse(value);
  } catch (const OptionValueError& e) {
    std::vector<std::string> choices = option->choices();
    std::string reason = e.reason;
    if (!choices.empty()) {
      if (!value.isList && value.items.size() == 1) reason += didYouMean(value.items[0], choices);
      reason += fmt::format(" (valid choices: {})", fmt::join(choices, ", "));
    }
    failOption(key, reason);
  }
}

namespace {

std::string unquote(std::string_view text) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::string(text);
  std::string out;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == '\\' && i + 2 < text.size()) {
      ++i;
      out += text[i] == 'n' ? '\n' : text[i];
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

void OptionSet::setOption(std::string_view key, std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    std::vector<std::string> items;
    std::string_view inner = text.substr(1, text.size() - 2);
    size_t start = 0;
    bool quoted = false;
    for (size_t i = 0; i <= inner.size(); ++i) {
      if (i < inner.size() && inner[i] == '"' && (i == 0 || inner[i - 1] != '\\')) quoted = !quoted;
      if (i == inner.size() || (inner[i] == ',' && !quoted)) {
        if (i > start || i < inner.size()) items.push_back(unquote(inner.substr(start, i - start)));
        start = i + 1;
      }
    }
    setOption(key, OptionValue::list(std::move(items)));
  } else {
    setOption(key, OptionValue::scalar(unquote(text)));
  }
}

std::string OptionSet::printOptions() const {
  std::string out;
  for (const OptionBase* option : options_) {
    if (!out.empty()) out += ' ';
    out += option->name() + "=" + formatOptionValue(option->value());
  }
  return out;
}

static std::string formatScalar(const std::string& text) {
  bool needsQuotes = text.empty();
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '=' || c == '{' ||
        c == '}' || c == '[' || c == ']' || c == '(' || c == ')' || c == '"' || c == '#' ||
        c == '\\') {
      needsQuotes = true;
      break;
    }
  }
  if (!needsQuotes) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string formatOptionValue(const OptionValue& value) {
  if (!value.isList) return value.items.empty() ? "\"\"" : formatScalar(value.items[0]);
  std::string out = "[";
  for (size_t i = 0; i < value.items.size(); ++i) {
    if (i) out += ',';
    out += formatScalar(value.items[i]);
  }
  return out + "]";
}

}  // namespace qopt
