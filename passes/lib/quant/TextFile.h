// Reading and writing a whole text file with errors that name it. Private to libqopt_quant.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace qopt::quant::detail {

/// The file's bytes; throws qopt::Error (Input) naming the file when it cannot be read.
std::string readTextFile(const std::filesystem::path& path);

/// Writes the text `format` returns to `path` atomically (nothing is written when it throws); a
/// qopt::Error from `format` is rethrown naming the file.
void writeTextFile(const std::filesystem::path& path, const std::function<std::string()>& format);

}  // namespace qopt::quant::detail
