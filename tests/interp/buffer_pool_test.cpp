// BufferPool: freed blocks come back for requests of their size class, the retention cap holds,
// blocks outlive the pool's owner, and the interpreter's repeated runs reuse their storage.
#include "BufferPool.h"

#include <cstdint>
#include <thread>

#include "InterpTestUtil.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

TEST(BufferPool, ReusesAFreedBlockOfTheSameSizeClass) {
  auto pool = BufferPool::create(size_t{1} << 20);
  void* first = nullptr;
  {
    std::shared_ptr<void> a = pool->allocate(100000);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_GE(pool->retainedBytes(), 100000u);
  std::shared_ptr<void> b = pool->allocate(99000);  // same class (12.5% steps above 64 KiB)
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(pool->retainedBytes(), 0u);
  std::shared_ptr<void> c = pool->allocate(200000);  // another class: a new block
  EXPECT_NE(c.get(), first);
}

TEST(BufferPool, RetainsNoMoreThanItsCap) {
  auto pool = BufferPool::create(150000);
  {
    std::shared_ptr<void> a = pool->allocate(100000);
    std::shared_ptr<void> b = pool->allocate(100000);
  }
  EXPECT_LE(pool->retainedBytes(), 150000u);
  EXPECT_GT(pool->retainedBytes(), 0u);
  pool->release();
  EXPECT_EQ(pool->retainedBytes(), 0u);
  { std::shared_ptr<void> d = pool->allocate(1000); }
  EXPECT_EQ(pool->retainedBytes(), 0u);  // after release() nothing is kept
}

TEST(BufferPool, BlocksOutliveTheOwnersReferenceAndReturnFromOtherThreads) {
  std::shared_ptr<void> block;
  {
    auto pool = BufferPool::create(size_t{1} << 20);
    block = pool->allocate(4096);
    static_cast<char*>(block.get())[4095] = 1;
  }
  std::thread([moved = std::move(block)]() mutable { moved.reset(); }).join();
  SUCCEED();
}

TEST(BufferPool, ArraysUseThePoolOnlyInsideAScope) {
  auto pool = BufferPool::create(size_t{1} << 20);
  const void* pooled = nullptr;
  {
    BufferPoolScope scope(pool.get());
    Array a(DataType::Float, {1000});
    pooled = a.bytes();
  }
  EXPECT_GE(pool->retainedBytes(), 4000u);
  {
    BufferPoolScope scope(pool.get());
    Array b(DataType::Float, {1000});
    EXPECT_EQ(b.bytes(), pooled);
  }
  Array c(DataType::Float, {1000});  // outside any scope: the system allocator
  EXPECT_GE(pool->retainedBytes(), 4000u);
}

TEST(BufferPool, InterpreterOutputsSurviveTheInterpreter) {
  GraphBuilder b;
  Value* x = b.input("x", DataType::Float);
  Node* relu = b.node("Relu", {x});
  Node* neg = b.node("Neg", {relu->output(0)});
  b.output(neg->output(0));
  std::vector<Array> out;
  {
    Interpreter interp(b.graph());
    for (int i = 0; i < 3; ++i) out = interp.run({{"x", floats({3}, {-1, 2, -3})}});
  }
  EXPECT_EQ(doubles(out.at(0)), (std::vector<double>{0, -2, 0}));
}

}  // namespace
}  // namespace qopt::interp
