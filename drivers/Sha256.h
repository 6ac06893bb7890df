// SHA-256 (FIPS 180-4), for the input and output hashes in --report.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace qopt {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  std::array<uint8_t, 32> finish();
  /// Lower-case hex of finish().
  std::string finishHex();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

std::string sha256Hex(std::string_view data);
/// Hashes a file in chunks; throws qopt::Error (Input) naming the file when it cannot be read.
std::string sha256FileHex(const std::filesystem::path& file);

}  // namespace qopt
