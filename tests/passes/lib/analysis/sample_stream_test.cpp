// The streaming engine every data pass runs on: results folded in sample order whatever the
// thread count, a bounded number of samples in flight, the earliest failing sample's error,
// a clear error when one sample does not fit the memory budget; and SpillStore's round trip.
#include "qopt/analysis/SampleStream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "qopt/analysis/SpillStore.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {
namespace {

std::vector<Sample> numbered(size_t count, int64_t width = 16) {
  std::vector<Sample> samples;
  for (size_t i = 0; i < count; ++i) {
    interp::Array x(DataType::Float, {width});
    for (int64_t j = 0; j < width; ++j) x.data<float>()[j] = static_cast<float>(i) + 0.25f * j;
    samples.push_back({"sample " + std::to_string(i), {{"x", x}}, ""});
  }
  return samples;
}

// Raises `most` to `value` when it is larger (from any thread).
void raiseTo(std::atomic<size_t>& most, size_t value) {
  size_t seen = most.load();
  while (value > seen && !most.compare_exchange_weak(seen, value)) {
  }
}

struct Counter {
  size_t runs = 0;
};

// A sum whose value depends on the order of the terms (floats of very different sizes).
double orderedSum(size_t threads, size_t count) {
  SampleWorkers workers(threads, uint64_t{1} << 30);
  SampleSource source(numbered(count), "held");
  double total = 0;
  std::vector<size_t> order;
  size_t n = streamSamples<Counter>(
      workers, source, "summing", [] { return std::make_unique<Counter>(); },
      [](Counter& c, Sample& s, size_t i) {
        ++c.runs;
        const float first = s.inputs.at("x").data<float>()[0];
        return (i % 2 ? 1e16 : 1.0) * (first + 0.1);
      },
      [&](double v, size_t i) {
        order.push_back(i);
        total += v;
      });
  EXPECT_EQ(n, count);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
  return total;
}

TEST(SampleStreamTest, FoldsInSampleOrderWhateverTheThreadCount) {
  const double one = orderedSum(1, 57);
  for (size_t threads : {2u, 3u, 8u}) {
    const double many = orderedSum(threads, 57);
    EXPECT_EQ(std::memcmp(&one, &many, sizeof one), 0) << threads << " threads";
  }
}

TEST(SampleStreamTest, KeepsAtMostTwoSamplesPerWorkerInFlight) {
  for (size_t threads : {1u, 2u, 4u}) {
    SampleWorkers workers(threads, uint64_t{1} << 30);
    SampleSource source(numbered(200), "held");
    std::atomic<size_t> folded{0};
    std::atomic<size_t> widest{0};
    streamSamples<Counter>(
        workers, source, "window", [] { return std::make_unique<Counter>(); },
        [&](Counter&, Sample&, size_t i) {
          raiseTo(widest, i - folded.load());
          return i;
        },
        [&](size_t, size_t) { ++folded; });
    EXPECT_EQ(folded.load(), 200u);
    EXPECT_LT(widest.load(), 2 * threads + 1) << threads << " threads";
  }
}

TEST(SampleStreamTest, RethrowsTheEarliestFailingSample) {
  for (size_t threads : {1u, 3u}) {
    SampleWorkers workers(threads, uint64_t{1} << 30);
    SampleSource source(numbered(40), "held");
    size_t foldedPast = 0;
    try {
      streamSamples<Counter>(
          workers, source, "failing", [] { return std::make_unique<Counter>(); },
          [](Counter&, Sample&, size_t i) {
            if (i == 9 || i == 13) throw Error("bad sample " + std::to_string(i));
            return i;
          },
          [&](size_t, size_t i) { foldedPast = i; });
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad sample 9"), std::string::npos) << e.what();
    }
    EXPECT_LT(foldedPast, 9u);  // nothing after the failure is folded
  }
}

TEST(SampleStreamTest, AFoldThatFailsStopsTheStream) {
  for (size_t threads : {1u, 4u}) {
    SampleWorkers workers(threads, uint64_t{1} << 30);
    SampleSource source(numbered(64), "held");
    std::vector<size_t> folded;
    try {
      streamSamples<Counter>(
          workers, source, "folding", [] { return std::make_unique<Counter>(); },
          [](Counter&, Sample&, size_t i) { return i; },
          [&](size_t, size_t i) {
            if (i == 5) throw Error("fold failed at 5");
            folded.push_back(i);
          });
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fold failed at 5"), std::string::npos) << e.what();
    }
    EXPECT_EQ(folded, (std::vector<size_t>{0, 1, 2, 3, 4})) << threads << " threads";
  }
}

struct Hungry {
  uint64_t lastPeakBytes() const { return uint64_t{64} << 20; }
};

TEST(SampleStreamTest, NamesTheWorkWhenOneSampleDoesNotFit) {
  SampleWorkers workers(2, uint64_t{16} << 20);
  SampleSource source(numbered(4), "held");
  try {
    streamSamples<Hungry>(
        workers, source, "bias-correct: measuring", [] { return std::make_unique<Hungry>(); },
        [](Hungry&, Sample&, size_t i) { return i; }, [](size_t, size_t) {});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("bias-correct: measuring"), std::string::npos) << text;
    EXPECT_NE(text.find("--max-memory"), std::string::npos) << text;
  }
}

TEST(SampleStreamTest, SmallBudgetRunsFewerSamplesAtOnce) {
  // A run takes 40 MiB and the budget 100 MiB: two runs fit, not four.
  struct Big {
    uint64_t lastPeakBytes() const { return uint64_t{40} << 20; }
  };
  SampleWorkers workers(4, uint64_t{100} << 20);
  SampleSource source(numbered(40), "held");
  std::atomic<size_t> running{0};
  std::atomic<size_t> most{0};
  streamSamples<Big>(
      workers, source, "big", [] { return std::make_unique<Big>(); },
      [&](Big&, Sample&, size_t i) {
        raiseTo(most, ++running);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        --running;
        return i;
      },
      [](size_t, size_t) {});
  EXPECT_LE(most.load(), 2u);
}

TEST(SpillStoreTest, ReadsBackWhatItSpilled) {
  SpillStore store(0);  // everything that can go to the file goes there
  interp::Array f(DataType::Float, {2, 3});
  for (int i = 0; i < 6; ++i) f.data<float>()[i] = 0.5f * static_cast<float>(i) - 1;
  interp::Array ids(DataType::Int64, {4});
  for (int i = 0; i < 4; ++i) ids.data<int64_t>()[i] = int64_t{1} << (10 * i);
  interp::Array flags = interp::Array::zeros(DataType::Bool, {3});
  flags.data<bool>()[1] = true;
  store.push({f, ids});
  store.push({flags});
  EXPECT_GT(store.spilledBytes(), 0u);
  ASSERT_EQ(store.size(), 2u);
  std::vector<interp::Array> first = store.get(0);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].shape(), (interp::Shape{2, 3}));
  EXPECT_EQ(first[0].toFloatVector(), f.toFloatVector());
  EXPECT_EQ(first[1].toInt64Vector(), ids.toInt64Vector());
  std::vector<interp::Array> second = store.get(1);
  EXPECT_EQ(second[0].dataType(), DataType::Bool);
  EXPECT_EQ(second[0].toInt64Vector(), (std::vector<int64_t>{0, 1, 0}));
}

TEST(SpillStoreTest, HoldsWithinItsBudget) {
  SpillStore store(uint64_t{1} << 20);
  store.push({interp::Array(DataType::Float, {16})});
  EXPECT_EQ(store.spilledBytes(), 0u);
  EXPECT_EQ(store.get(0)[0].numel(), 16);
}

}  // namespace
}  // namespace qopt::analysis
