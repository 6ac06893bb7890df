// Writing a string between double quotes, escaped, as qopt's text format and its JSON both do:
// the same named escapes for quote, backslash and the common control characters; each format
// then writes the other bytes its own way (the text format \xHH for every byte outside printable
// ASCII, JSON \u00HH for control characters only, and it also names \b and \f).
#pragma once

#include <string>
#include <string_view>

namespace qopt {

/// The two-character escape of `c` ("\\n", "\\\"", ...), or "" when it has none; \b and \f
/// only when `backspaceAndFormFeed`.
inline std::string_view namedEscape(unsigned char c, bool backspaceAndFormFeed) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return backspaceAndFormFeed ? "\\b" : "";
    case '\f':
      return backspaceAndFormFeed ? "\\f" : "";
    default:
      return "";
  }
}

/// Appends `text` quoted: each byte with a named escape as that, every other through
/// `other(out, byte)`.
template <class Other>
void appendQuoted(std::string& out, std::string_view text, bool backspaceAndFormFeed, Other other) {
  out += '"';
  for (unsigned char c : text) {
    std::string_view named = namedEscape(c, backspaceAndFormFeed);
    if (named.empty()) {
      other(out, c);
    } else {
      out += named;
    }
  }
  out += '"';
}

}  // namespace qopt
