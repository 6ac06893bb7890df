// An enum's spellings as one table of (value, name) pairs, read by one lookup, instead of a
// switch per enum that spells out the same case-return lines again; a parser can walk the same
// table, so the names it accepts are the names printed.
#pragma once

#include <cstddef>
#include <string_view>

namespace qopt {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

/// The name `names` gives `value`, or `fallback` when it gives none.
template <class E, std::size_t N>
constexpr std::string_view enumName(const EnumName<E> (&names)[N], E value,
                                    std::string_view fallback) {
  for (const EnumName<E>& entry : names) {
    if (entry.value == value) return entry.name;
  }
  return fallback;
}

}  // namespace qopt
