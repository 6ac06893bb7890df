// What a call throws, for the tests of error messages.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "qopt/ir/Error.h"

namespace qopt::testing {

/// The message of the qopt::Error that `fn` throws, "" when it throws none; where `kind` is
/// given, the error must be of that kind.
template <typename Fn>
std::string errorOf(Fn&& fn, std::optional<ErrorKind> kind = std::nullopt) {
  try {
    std::forward<Fn>(fn)();
  } catch (const Error& e) {
    if (kind) {
      EXPECT_EQ(e.kind(), *kind) << e.what();
    }
    return e.what();
  }
  return {};
}

}  // namespace qopt::testing
