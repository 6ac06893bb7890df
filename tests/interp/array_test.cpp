// Array: allocation, alignment, conversion to and from IR tensors (sharing when possible,
// 4-bit packing), element access.
#include <cmath>
#include <cstring>

#include "InterpTestUtil.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

TEST(Array, AllocationIsAlignedAndSized) {
  Array a(DataType::Float16, {3, 5});
  EXPECT_EQ(a.numel(), 15);
  EXPECT_EQ(a.elementSize(), 2u);
  EXPECT_EQ(a.byteSize(), 30u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.bytes()) % 64, 0u);
  Array z = Array::zeros(DataType::Int32, {4});
  EXPECT_EQ(ints(z), (std::vector<int64_t>{0, 0, 0, 0}));
  Array s = Array::scalar(DataType::Int64, int64_t{42});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.getInt64(0), 42);
  EXPECT_THROW(Array(DataType::Float, {-1}), Error);
  EXPECT_THROW(Array(DataType::Float, {INT64_MAX, 4}), Error);
}

TEST(Array, TensorRoundTripSharesAlignedBytes) {
  Tensor t = Tensor::fromFloats({2, 2}, std::vector<float>{1, 2, 3, 4});
  Array a = Array::fromTensor(t);
  EXPECT_EQ(a.shape(), (Shape{2, 2}));
  EXPECT_EQ(doubles(a), (std::vector<double>{1, 2, 3, 4}));
  Tensor back = a.toTensor("out");
  EXPECT_EQ(back.name(), "out");
  EXPECT_TRUE(back.sameContent(t));
  // toTensor lends the Array's storage to the tensor instead of copying it.
  EXPECT_EQ(back.rawBytes().data(), reinterpret_cast<const std::byte*>(a.bytes()));
}

TEST(Array, FourBitTypesAreUnpackedAndPackedAgain) {
  Tensor t = Tensor::fromInt64s(DataType::Int4, {3}, std::vector<int64_t>{-8, 7, -1});
  Array a = Array::fromTensor(t);
  EXPECT_EQ(a.elementSize(), 1u);
  EXPECT_EQ(ints(a), (std::vector<int64_t>{-8, 7, -1}));
  EXPECT_TRUE(a.toTensor().sameContent(t));
}

TEST(Array, StringsAndHalfValues) {
  Tensor t(DataType::String, {2});
  t.setStrings({"a", "bc"});
  Array a = Array::fromTensor(t);
  EXPECT_EQ(a.strings(), (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(a.toTensor().strings(), t.strings());
  Array h = halves({2}, {0.5f, -2.0f});
  EXPECT_EQ(h.toFloatVector(), (std::vector<float>{0.5f, -2.0f}));
}

TEST(Array, BoolBytesOtherThanZeroOrOneAreNormalised) {
  Tensor t(DataType::Bool, {3});
  t.setRawBytes(std::vector<std::byte>{std::byte{0}, std::byte{7}, std::byte{1}});
  Array a = Array::fromTensor(t);
  EXPECT_EQ(ints(a), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(a.data<uint8_t>()[1], 1);
}

TEST(Array, BadTensorDataIsAnError) {
  Tensor t(DataType::Float, {4});
  t.setRawBytes(std::vector<std::byte>(8));
  EXPECT_THROW(Array::fromTensor(t), Error);
}

TEST(Array, ReshapedSharesStorageAndChecksCount) {
  Array a = floats({6}, {0, 1, 2, 3, 4, 5});
  Array b = a.reshaped({2, 3});
  EXPECT_EQ(b.bytes(), a.bytes());
  EXPECT_THROW(a.reshaped({4}), Error);
}

}  // namespace
}  // namespace qopt::interp
