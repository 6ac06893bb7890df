#include "FuzzSupport.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace qopt::fuzz {

const std::filesystem::path& emptyFolder() {
  static const std::filesystem::path folder = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "qopt-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("qopt fuzz: mkdtemp");
      std::abort();
    }
    return std::filesystem::path(pattern);
  }();
  return folder;
}

void propertyFailed(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "qopt fuzz: property failed: %.*s\n%.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace qopt::fuzz
