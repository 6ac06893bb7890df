// ThreadPool: every index exactly once, exceptions reach the caller, nested calls run inline.
#include "ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

namespace qopt::interp {
namespace {

TEST(ThreadPool, CoversTheRangeExactlyOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4);
  std::vector<std::atomic<int>> hits(10007);
  for (int round = 0; round < 20; ++round) {
    pool.parallelFor(10007, 7, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
  }
  for (const auto& h : hits) EXPECT_EQ(h.load(), 20);
}

TEST(ThreadPool, RethrowsTheFirstException) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallelFor(1000, 1,
                                [](int64_t b, int64_t) {
                                  if (b >= 500) throw std::runtime_error("boom");
                                }),
               std::runtime_error);
  // The pool is still usable afterwards.
  std::atomic<int64_t> sum{0};
  pool.parallelFor(100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> count{0};
  pool.parallelFor(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.parallelFor(10, 1, [&](int64_t b2, int64_t e2) { count += e2 - b2; });
    }
  });
  EXPECT_EQ(count.load(), 80);
}

TEST(ThreadPool, FreeFunctionRunsSmallWorkInline) {
  int64_t seen = -1;
  parallelFor(nullptr, 5, 1, [&](int64_t b, int64_t e) { seen = e - b; });
  EXPECT_EQ(seen, 5);
}

}  // namespace
}  // namespace qopt::interp
