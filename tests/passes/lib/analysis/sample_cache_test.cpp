// The run's shared sample cache: a data path is read and decoded once per pass context, whatever
// the number of passes reading it; past its byte budget samples stream from disk again.
#include "qopt/analysis/SampleCache.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "AnalysisTestUtil.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {
namespace {

namespace fs = std::filesystem;
using testing::floats;
using testing::kReluModel;
using testing::parse;

// Three one-value samples 0.npy, 1.npy, 2.npy in the test's folder.
class SampleCacheTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    for (int i = 0; i < 3; ++i) {
      interp::writeNpy(dir_ / (std::to_string(i) + ".npy"), floats({1, 2}, {float(i), -1}));
    }
  }
};

float firstValue(const Sample& sample) {
  return sample.inputs.at("x").data<float>()[0];
}

TEST_F(SampleCacheTest, ReadsADataPathOncePerRun) {
  auto model = parse(kReluModel);
  PassContext context;
  std::vector<InputSpec> specs = inputSpecs(model->graph());
  SampleCache& first = sampleCache(context, dir_, specs);
  EXPECT_EQ(readSamples(first, 2).size(), 2u);
  EXPECT_EQ(readSamples(first, 0).size(), 3u);
  // Every later reader gets the same cache: with the files gone, the samples are still there.
  fs::remove_all(dir_);
  SampleCache& again = sampleCache(context, dir_, specs);
  EXPECT_EQ(&again, &first);
  std::vector<Sample> samples = readSamples(again, 0);
  ASSERT_EQ(samples.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(firstValue(samples[static_cast<size_t>(i)]), float(i));
  // forEach stops where asked, from the cache too.
  int seen = 0;
  again.forEach([&](Sample&) { return ++seen < 2; });
  EXPECT_EQ(seen, 2);
}

TEST_F(SampleCacheTest, PastItsBudgetSamplesAreReadAgain) {
  auto model = parse(kReluModel);
  // One sample is 8 bytes: a budget of 16 keeps the first two.
  SampleCache cache(DataSet::open(dir_, inputSpecs(model->graph())), 16);
  EXPECT_EQ(readSamples(cache, 0).size(), 3u);
  fs::remove(dir_ / "2.npy");
  EXPECT_EQ(readSamples(cache, 2).size(), 2u);  // kept
  EXPECT_THROW(readSamples(cache, 0), Error);   // the third is read from disk again: gone
}

TEST_F(SampleCacheTest, ADifferentReadingOfTheInputsIsADifferentCache) {
  auto model = parse(kReluModel);
  PassContext context;
  std::vector<InputSpec> specs = inputSpecs(model->graph());
  std::vector<InputSpec> other = specs;
  other[0].dims[0] = 2;  // as --input-shapes would fix it
  EXPECT_NE(&sampleCache(context, dir_, specs), &sampleCache(context, dir_, other));
}

}  // namespace
}  // namespace qopt::analysis
