// Reading a whole text file with errors that name it. Private to libqopt_quant.
#pragma once

#include <filesystem>
#include <string>

namespace qopt::quant::detail {

/// The file's bytes; throws qopt::Error (Input) naming the file when it cannot be read.
std::string readTextFile(const std::filesystem::path& path);

}  // namespace qopt::quant::detail
