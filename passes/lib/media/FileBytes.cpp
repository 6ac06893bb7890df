// Reading a data file whole, and the two kinds of error every part of the library raises.
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media::detail {

Error inputError(const std::string& file, std::string cause) {
  return Error(ErrorKind::Input, file, "", std::move(cause));
}

Error usageError(std::string cause) {
  return Error(ErrorKind::Usage, "", "--preprocess", std::move(cause));
}

std::vector<uint8_t> readFileBytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw inputError(file.string(), fmt::format("cannot open: {}", std::strerror(errno)));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0 || !in) throw inputError(file.string(), "cannot read the file (not seekable)");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (in.gcount() != size) throw inputError(file.string(), "cannot read the whole file");
  return bytes;
}

}  // namespace qopt::media::detail
