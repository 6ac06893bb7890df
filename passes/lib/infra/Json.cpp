#include "qopt/pass/Json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/QuotedString.h"

namespace qopt {

namespace {

[[noreturn]] void typeMismatch(const char* wanted) {
  throw Error(fmt::format("JSON value is not {}", wanted), ErrorKind::Internal);
}

void appendEscaped(std::string& out, std::string_view text) {
  appendQuoted(out, text, /*backspaceAndFormFeed=*/true, [](std::string& o, unsigned char c) {
    if (c < 0x20) {
      o += fmt::format("\\u{:04x}", c);
    } else {
      o += static_cast<char>(c);
    }
  });
}

void newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent * depth), ' ');
}

// An array or object at `depth`: `open`, the `count` items (dumpItem(i) writes item i) comma
// separated, each on a line of its own when indenting, then `close`.
template <class DumpItem>
void dumpContainer(std::string& out, int indent, int depth, char open, char close, size_t count,
                   DumpItem dumpItem) {
  out += open;
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ',';
    newline(out, indent, depth + 1);
    dumpItem(i);
  }
  if (count != 0) newline(out, indent, depth);
  out += close;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  Json parseDocument() {
    Json value = parseValue(0);
    skipBlanks();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  static constexpr int kMaxDepth = 512;

  [[noreturn]] void fail(const std::string& message) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(ErrorKind::Input, fmt::format("{}:{}:{}", name_, line, col), "", message);
  }
  void skipBlanks() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool consume(char c) {
    skipBlanks();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(fmt::format("expected '{}'", c));
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  Json parseValue(int depth) {
    if (depth > kMaxDepth) fail("JSON nested too deeply");
    skipBlanks();
    if (pos_ >= text_.size()) fail("unexpected end of JSON");
    char c = text_[pos_];
    if (c == '{') return parseObject(depth);
    if (c == '[') return parseArray(depth);
    if (c == '"') return Json(parseString());
    if (consumeWord("true")) return Json(true);
    if (consumeWord("false")) return Json(false);
    if (consumeWord("null")) return Json();
    if (c == '-' || (c >= '0' && c <= '9')) return parseNumber();
    fail(fmt::format("unexpected character '{}'", c));
  }

  Json parseObject(int depth) {
    ++pos_;
    Json result = Json::object();
    if (consume('}')) return result;
    do {
      skipBlanks();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key");
      std::string key = parseString();
      expect(':');
      Json value = parseValue(depth + 1);
      if (result.find(key)) fail(fmt::format("duplicate key \"{}\"", key));
      result.append(std::move(key), std::move(value));
    } while (consume(','));
    expect('}');
    return result;
  }

  Json parseArray(int depth) {
    ++pos_;
    Json result = Json::array();
    if (consume(']')) return result;
    do {
      result.push(parseValue(depth + 1));
    } while (consume(','));
    expect(']');
    return result;
  }

  unsigned parseHex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      value <<= 4;
      if (h >= '0' && h <= '9')
        value |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        value |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        value |= static_cast<unsigned>(h - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return value;
  }

  static void appendUtf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string parseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated string");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = parseHex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!consumeWord("\\u")) fail("unpaired surrogate");
            unsigned low = parseHex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          appendUtf8(out, cp);
          break;
        }
        default:
          fail(fmt::format("bad escape '\\{}'", e));
      }
    }
  }

  Json parseNumber() {
    size_t start = pos_;
    bool isFloat = false;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      fail("bad number");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      isFloat = true;
      if (digits() == 0) fail("bad number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      isFloat = true;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("bad number");
    }
    std::string_view number = text_.substr(start, pos_ - start);
    if (!isFloat) {
      int64_t value = 0;
      auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
      if (ec == std::errc() && ptr == number.data() + number.size()) return Json(value);
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ptr != number.data() + number.size()) fail("bad number");
    if (ec == std::errc::result_out_of_range) {
      // from_chars leaves `value` untouched here; strtod gives what most JSON readers give: +-inf
      // for a too large magnitude (so callers that refuse non-finite numbers see one), 0 for a too
      // small one. JSON numbers have no locale-dependent characters.
      value = std::strtod(std::string(number).c_str(), nullptr);
    }
    return Json(value);
  }

  std::string_view text_;
  std::string_view name_;
  size_t pos_ = 0;
};

}  // namespace

bool Json::asBool() const {
  if (!isBool()) typeMismatch("a boolean");
  return std::get<bool>(value_);
}
int64_t Json::asInt() const {
  if (!isInt()) typeMismatch("an integer");
  return std::get<int64_t>(value_);
}
double Json::asDouble() const {
  if (isInt()) return static_cast<double>(std::get<int64_t>(value_));
  if (!std::holds_alternative<double>(value_)) typeMismatch("a number");
  return std::get<double>(value_);
}
const std::string& Json::asString() const {
  if (!isString()) typeMismatch("a string");
  return std::get<std::string>(value_);
}
const Json::Array& Json::asArray() const {
  if (!isArray()) typeMismatch("an array");
  return std::get<Array>(value_);
}
// The mutable asArray and asObject are the const ones (the same checks) on a non-const value.
Json::Array& Json::asArray() {
  return const_cast<Array&>(std::as_const(*this).asArray());
}
const Json::Object& Json::asObject() const {
  if (!isObject()) typeMismatch("an object");
  return std::get<Object>(value_);
}
Json::Object& Json::asObject() {
  return const_cast<Object&>(std::as_const(*this).asObject());
}

Json& Json::operator[](std::string_view key) {
  if (isNull()) value_ = Object{};
  Object& object = asObject();
  for (auto& [k, v] : object) {
    if (k == key) return v;
  }
  object.emplace_back(std::string(key), Json());
  return object.back().second;
}

const Json& Json::operator[](std::string_view key) const {
  static const Json kNull;
  const Json* member = find(key);
  return member ? *member : kNull;
}

const Json* Json::find(std::string_view key) const {
  if (!isObject()) return nullptr;
  for (const auto& [k, v] : std::get<Object>(value_)) {
    if (k == key) return &v;
  }
  return nullptr;
}

Json* Json::find(std::string_view key) {
  return const_cast<Json*>(static_cast<const Json*>(this)->find(key));
}

void Json::push(Json value) {
  if (isNull()) value_ = Array{};
  asArray().push_back(std::move(value));
}

void Json::append(std::string key, Json value) {
  if (isNull()) value_ = Object{};
  asObject().emplace_back(std::move(key), std::move(value));
}

size_t Json::size() const {
  if (isArray()) return std::get<Array>(value_).size();
  if (isObject()) return std::get<Object>(value_).size();
  return 0;
}

std::string Json::dump(int indent) const {
  std::string out;
  dumpTo(out, indent, 0);
  return out;
}

void Json::dumpTo(std::string& out, int indent, int depth) const {
  switch (value_.index()) {
    case 0:
      out += "null";
      return;
    case 1:
      out += std::get<bool>(value_) ? "true" : "false";
      return;
    case 2:
      out += fmt::format("{}", std::get<int64_t>(value_));
      return;
    case 3: {
      double d = std::get<double>(value_);
      if (!std::isfinite(d)) {
        out += "null";
      } else {
        std::string text = fmt::format("{}", d);
        // Keep the value a float when read back ("2" would read as an integer).
        if (text.find_first_of(".eE") == std::string::npos) text += ".0";
        out += text;
      }
      return;
    }
    case 4:
      appendEscaped(out, std::get<std::string>(value_));
      return;
    case 5: {
      const Array& array = std::get<Array>(value_);
      dumpContainer(out, indent, depth, '[', ']', array.size(),
                    [&](size_t i) { array[i].dumpTo(out, indent, depth + 1); });
      return;
    }
    case 6: {
      const Object& object = std::get<Object>(value_);
      dumpContainer(out, indent, depth, '{', '}', object.size(), [&](size_t i) {
        appendEscaped(out, object[i].first);
        out += indent < 0 ? ":" : ": ";
        object[i].second.dumpTo(out, indent, depth + 1);
      });
      return;
    }
  }
}

Json Json::parse(std::string_view text, std::string_view displayName) {
  return Parser(text, displayName).parseDocument();
}

}  // namespace qopt
