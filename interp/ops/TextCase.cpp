#include "TextCase.h"

#include <fmt/format.h>

#include <stdexcept>

#include "qopt/ir/Error.h"

namespace qopt::interp {

namespace {

// en_US in any spelling glibc accepts ("en_US", "en_US.UTF-8", "en_US.utf8", "en_US.ISO-8859-1"):
// ONNX's default. Every codeset shares the same wide-character case tables.
bool isEnUs(const std::string& name) {
  return name == "en_US" || name.starts_with("en_US.");
}

std::locale openLocale(const std::string& name, std::string& used) {
  if (name.empty()) {
    // std::locale("") is the environment's locale: the output would depend on the machine.
    throw Error("locale must not be empty (an empty name selects the environment's locale)");
  }
  try {
    used = name;
    return std::locale(name);
  } catch (const std::runtime_error& e) {
    if (isEnUs(name)) {
      // Debian machines often have no en_US locale generated. glibc's C.UTF-8 copies its
      // LC_CTYPE from the same i18n_ctype table that en_US uses, so its towupper/towlower are
      // en_US's for every code point.
      try {
        used = "C.UTF-8";
        return std::locale(used);
      } catch (const std::runtime_error&) {
      }
    }
    throw Error(fmt::format(
        "locale '{}' is not available on this machine ({}); generate it (locale-gen) or name "
        "an installed locale",
        name, e.what()));
  }
}

/// The code point at text[i], advancing i; -1 when the bytes there are not valid UTF-8
/// (overlong forms, surrogates and values above U+10FFFF included, as iconv rejects them).
int32_t decodeOne(std::string_view text, size_t& i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  uint8_t lead = byte(i);
  if (lead < 0x80) {
    ++i;
    return lead;
  }
  int length;
  int32_t cp;
  int32_t min;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (i + static_cast<size_t>(length) > text.size()) return -1;
  for (int k = 1; k < length; ++k) {
    uint8_t b = byte(i + static_cast<size_t>(k));
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  i += static_cast<size_t>(length);
  return cp;
}

void encodeOne(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

CaseMapper::CaseMapper(const std::string& name) : locale_(openLocale(name, localeName_)) {
  ctype_ = &std::use_facet<std::ctype<wchar_t>>(locale_);
}

std::optional<std::string> CaseMapper::apply(std::string_view text, CaseChange change) const {
  static_assert(sizeof(wchar_t) == 4, "code points are mapped as one wchar_t each");
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    int32_t cp = decodeOne(text, i);
    if (cp < 0) return std::nullopt;
    auto wide = static_cast<wchar_t>(cp);
    if (change == CaseChange::Lower) wide = ctype_->tolower(wide);
    if (change == CaseChange::Upper) wide = ctype_->toupper(wide);
    auto mapped = static_cast<uint32_t>(wide);
    // A locale maps valid code points to valid ones; keep the original if one ever did not.
    if (mapped > 0x10FFFF || (mapped >= 0xD800 && mapped <= 0xDFFF)) {
      mapped = static_cast<uint32_t>(cp);
    }
    encodeOne(mapped, out);
  }
  return out;
}

}  // namespace qopt::interp
