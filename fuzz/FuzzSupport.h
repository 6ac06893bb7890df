// What every fuzz target shares: a folder with nothing in it (external data of fuzzed models
// resolves there and finds nothing), and how a broken property is reported.
#pragma once

#include <filesystem>
#include <string_view>

namespace qopt::fuzz {

/// An empty folder made once per process (under $TMPDIR); nothing is ever written to it.
const std::filesystem::path& emptyFolder();

/// Prints `what` and `detail` to stderr and aborts, which libFuzzer and the replay driver report
/// as a failure with the input that caused it.
[[noreturn]] void propertyFailed(std::string_view what, std::string_view detail);

}  // namespace qopt::fuzz
