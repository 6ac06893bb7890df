// Case changes of UTF-8 text under a named locale (StringNormalizer). The text is decoded to
// Unicode code points, each is mapped by the locale's std::ctype<wchar_t> (one code point to
// one, as towupper/towlower do), and the result is encoded again: what ONNX Runtime does on
// Linux, so that the same locale gives the same strings.
#pragma once

#include <locale>
#include <optional>
#include <string>
#include <string_view>

namespace qopt::interp {

enum class CaseChange { None, Lower, Upper };

class CaseMapper {
 public:
  /// The locale ONNX Runtime uses on Linux when a node names none.
  static constexpr const char* kDefaultLocale = "en_US.UTF-8";

  /// The installed locale `name`. An en_US locale that is not installed is replaced by
  /// C.UTF-8, whose case mappings are en_US's (see TextCase.cpp). Throws qopt::Error naming
  /// the locale when it cannot be had.
  explicit CaseMapper(const std::string& name);

  /// `text` with every code point changed; nullopt when `text` is not valid UTF-8.
  std::optional<std::string> apply(std::string_view text, CaseChange change) const;

  /// The name of the locale in use (differs from the requested one after the en_US fallback).
  const std::string& localeName() const { return localeName_; }

 private:
  // Declared first: the constructor's initializer of locale_ sets it.
  std::string localeName_;
  std::locale locale_;
  const std::ctype<wchar_t>* ctype_ = nullptr;
};

}  // namespace qopt::interp
