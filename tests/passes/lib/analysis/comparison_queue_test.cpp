// ComparisonQueue: pairs compared on the worker thread give bitwise the metrics and histograms
// of comparing in line, with a memory bound small enough that push() has to wait; a failing
// comparison surfaces in the thread that pushes or drains.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "qopt/analysis/ComparisonQueue.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {
namespace {

interp::Array randomArray(interp::Shape shape, uint32_t seed, float spread) {
  interp::Array a(DataType::Float, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = dist(rng);
  return a;
}

TEST(ComparisonQueue, BackgroundComparisonsEqualInlineOnes) {
  constexpr int kTensors = 6;
  std::vector<ErrorAccumulator> inline_(kTensors, ErrorAccumulator(128));
  std::vector<ErrorAccumulator> queued(kTensors, ErrorAccumulator(128));
  {
    ComparisonQueue queue(64 * 1024);  // less than two pairs: push() waits for the worker
    for (uint32_t sample = 0; sample < 5; ++sample) {
      for (int t = 0; t < kTensors; ++t) {
        const uint32_t seed = sample * 100 + static_cast<uint32_t>(t);
        // Later samples spread wider, so the histograms' bins widen on the way.
        interp::Array r = randomArray({4, 1000 + t}, seed, 1.0f + static_cast<float>(sample));
        interp::Array a = randomArray({4, 1000 + t}, seed + 50, 0.1f);
        for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] += r.data<float>()[i];
        inline_[static_cast<size_t>(t)].add(r, a, "tensor");
        queue.push(queued[static_cast<size_t>(t)], r, a, "tensor");
      }
    }
    queue.drain();
  }
  for (int t = 0; t < kTensors; ++t) {
    const ErrorMetrics x = inline_[static_cast<size_t>(t)].result();
    const ErrorMetrics y = queued[static_cast<size_t>(t)].result();
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.mse, y.mse);
    EXPECT_EQ(x.sqnrDb, y.sqnrDb);
    EXPECT_EQ(x.cosine, y.cosine);
    EXPECT_EQ(x.klDivergence, y.klDivergence);
    EXPECT_EQ(inline_[static_cast<size_t>(t)].histogram().reference(),
              queued[static_cast<size_t>(t)].histogram().reference());
    EXPECT_EQ(inline_[static_cast<size_t>(t)].histogram().actual(),
              queued[static_cast<size_t>(t)].histogram().actual());
  }
}

TEST(ComparisonQueue, AFailedComparisonIsRethrownWithItsLabel) {
  for (bool background : {true, false}) {
    ErrorAccumulator acc;
    ComparisonQueue queue(1 << 20, background);
    try {
      queue.push(acc, randomArray({2, 3}, 1, 1.0f), randomArray({3, 2}, 2, 1.0f), "tensor 'x'");
      queue.drain();
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.subject(), "tensor 'x'");
      EXPECT_NE(e.cause().find("differs from the reference shape"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace qopt::analysis
