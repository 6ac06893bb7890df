#include "TextFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt::quant::detail {

std::string readTextFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorKind::Input, path.string(), {}, "is a folder, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::Input, path.string(), {},
                std::string("cannot open the file: ") + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::Input, path.string(), {}, "cannot read the file");
  return std::move(text).str();
}

void writeTextFile(const std::filesystem::path& path, const std::function<std::string()>& format) {
  std::string text;
  try {
    text = format();
  } catch (const Error& e) {
    throw e.withFile(path.string());
  }
  writeFileAtomically(path, text);
}

}  // namespace qopt::quant::detail
