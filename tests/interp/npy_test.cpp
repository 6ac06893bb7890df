// .npy reading and writing: dtypes, Fortran order, big-endian data, malformed files.
#include "qopt/interp/Npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

std::string header(const std::string& dict) {
  std::string h = dict;
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(h.size() & 0xFF));
  out.push_back(static_cast<char>(h.size() >> 8));
  return out + h;
}

TEST(Npy, RoundTripsEveryNumpyDtype) {
  for (DataType type : {DataType::Float, DataType::Double, DataType::Float16, DataType::Int8,
                        DataType::UInt8, DataType::Int16, DataType::UInt16, DataType::Int32,
                        DataType::UInt32, DataType::Int64, DataType::UInt64, DataType::Bool}) {
    Array a(type, {2, 3});
    for (size_t i = 0; i < a.byteSize(); ++i) a.bytes()[i] = static_cast<std::byte>(i % 2);
    Array b = parseNpy(serializeNpy(a), "mem.npy");
    EXPECT_EQ(b.dataType(), type) << dataTypeName(type);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(0, std::memcmp(a.bytes(), b.bytes(), a.byteSize())) << dataTypeName(type);
  }
  Array scalar = parseNpy(serializeNpy(Array::scalar(DataType::Float, 1.5f)), "s.npy");
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.getDouble(0), 1.5);
  std::string one = serializeNpy(floats({5}, {1, 2, 3, 4, 5}));
  EXPECT_NE(one.find("'shape': (5,)"), std::string::npos);
  EXPECT_EQ(one.find('\n') + 1, 128u);  // data starts on a 64-byte boundary
}

TEST(Npy, ReadsFortranOrderAndBigEndian) {
  std::string f = header("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }");
  for (int32_t v : {0, 3, 1, 4, 2, 5}) f.append(reinterpret_cast<const char*>(&v), 4);
  EXPECT_EQ(ints(parseNpy(f, "f.npy")), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  std::string be = header("{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }");
  be += std::string("\x01\x02\x00\x03", 4);
  EXPECT_EQ(ints(parseNpy(be, "be.npy")), (std::vector<int64_t>{0x0102, 3}));
}

TEST(Npy, BadFilesNameTheFile) {
  auto message = [](const std::string& bytes) {
    try {
      parseNpy(bytes, "broken.npy");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("hello").find("broken.npy"), std::string::npos);
  std::string truncated =
      header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }") + "abc";
  EXPECT_NE(message(truncated).find("broken.npy"), std::string::npos);
  EXPECT_NE(message(header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }")).find("c8"),
            std::string::npos);
  EXPECT_NE(message(header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"))
                .find("broken.npy"),
            std::string::npos);
  EXPECT_THROW(readNpy("/nonexistent/file.npy"), Error);
  EXPECT_THROW(serializeNpy(Array(DataType::BFloat16, {1})), Error);
}

TEST(Npy, WritesAndReadsFiles) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "qopt_npy_test";
  std::filesystem::create_directories(dir);
  Array a = floats({2, 2}, {1, 2, 3, 4});
  writeNpy(dir / "a.npy", a);
  EXPECT_EQ(doubles(readNpy(dir / "a.npy")), (std::vector<double>{1, 2, 3, 4}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qopt::interp
