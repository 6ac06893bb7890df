// SHA-256 against the FIPS 180-4 examples, across block boundaries and in chunks.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "Sha256.h"
#include "qopt/ir/Error.h"

namespace qopt {
namespace {

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ChunkingDoesNotMatter) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 7);
  std::string whole = sha256Hex(data);
  for (size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 hash;
    for (size_t pos = 0; pos < data.size(); pos += chunk) {
      hash.update(std::string_view(data).substr(pos, chunk));
    }
    EXPECT_EQ(hash.finishHex(), whole) << chunk;
  }
}

TEST(Sha256, HashesFiles) {
  auto file = std::filesystem::temp_directory_path() / "qopt_sha256_test.bin";
  {
    std::ofstream out(file, std::ios::binary);
    out << "abc";
  }
  EXPECT_EQ(sha256FileHex(file), sha256Hex("abc"));
  std::filesystem::remove(file);
  EXPECT_THROW(sha256FileHex(file), Error);
}

}  // namespace
}  // namespace qopt
