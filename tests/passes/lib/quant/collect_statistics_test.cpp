// collectStatistics on small models against ranges computed by hand; weight ranges; progress.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "qopt/ir/Error.h"
#include "qopt/ir/TextFormat.h"
#include "qopt/quant/Calibration.h"

namespace qopt::quant {
namespace {

constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y, int64[2, 3] n) <float two = {2.0}> {
  r = Relu(x)
  y = Mul(r, two)
  n = Cast <to = 7> (y)
}
)";

interp::Array floats(interp::Shape shape, const std::vector<float>& values) {
  interp::Array a(DataType::Float, std::move(shape));
  std::copy(values.begin(), values.end(), a.data<float>());
  return a;
}

std::vector<analysis::Sample> threeSamples() {
  std::vector<analysis::Sample> samples(3);
  samples[0].source = "s0.npy";
  samples[0].inputs.emplace("x", floats({2, 3}, {-1, 0, 1, 2, 3, 4}));
  samples[1].source = "s1.npy";
  samples[1].inputs.emplace("x", floats({2, 3}, {-6, -5, 0.5f, 0.25f, 1, 1.5f}));
  samples[2].source = "s2.npy";
  samples[2].inputs.emplace("x", floats({2, 3}, {0, 0, 0, 0, 0, 5}));
  return samples;
}

/// forEachSample over `samples`, counting how many were handed out.
auto feeding(std::vector<analysis::Sample>& samples, size_t* given = nullptr) {
  return [&samples, given](const std::function<bool(analysis::Sample&)>& fn) {
    for (analysis::Sample& sample : samples) {
      if (given) ++*given;
      if (!fn(sample)) return;
    }
  };
}

std::string errorOf(const Model& model, std::vector<std::string> names,
                    std::vector<analysis::Sample> samples) {
  try {
    collectStatistics(model, names, feeding(samples));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  return {};
}

TEST(CollectStatistics, RangesOfInputsAndNodeOutputs) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  std::vector<analysis::Sample> samples = threeSamples();
  std::vector<std::pair<size_t, size_t>> progress;
  size_t given = 0;
  const std::vector<std::string> names = {"x", "r", "y"};
  auto stats =
      collectStatistics(*model, names, feeding(samples, &given),
                        [&](size_t done, size_t total) { progress.emplace_back(done, total); });
  EXPECT_EQ(given, 3u);
  ASSERT_EQ(stats.size(), 3u);
  const TensorStatistics& x = stats.at("x");
  EXPECT_EQ(x.count(), 18u);
  EXPECT_EQ(x.min(), -6.0f);
  EXPECT_EQ(x.max(), 5.0f);
  const TensorStatistics& r = stats.at("r");
  EXPECT_EQ(r.count(), 18u);
  EXPECT_EQ(r.min(), 0.0f);
  EXPECT_EQ(r.max(), 5.0f);
  // Zeros of r: 0 (s0: -1, 0), s1: -6, -5, 0, s2: five zeros = 2 + 2 + 5.
  EXPECT_EQ(r.histogram()[0], 9u);
  const TensorStatistics& y = stats.at("y");
  EXPECT_EQ(y.min(), 0.0f);
  EXPECT_EQ(y.max(), 10.0f);
  EXPECT_EQ(y.binWidth(), 16.0 / kCalibrationBins);
  EXPECT_EQ(y.histogram()[0], 9u);
  EXPECT_EQ(y.histogram()[256], 2u);   // y = 2 in s0 and s1 (2 * 128 bins per unit)
  EXPECT_EQ(y.histogram()[1280], 1u);  // y = 10
  CalibratorSpec max;
  EXPECT_EQ(computeAmax(x, max), 6.0);
  EXPECT_EQ(computeAmax(y, max), 10.0);
  EXPECT_EQ(progress, (std::vector<std::pair<size_t, size_t>>{{1, 0}, {2, 0}, {3, 0}, {3, 3}}));
}

TEST(CollectStatistics, SameStatisticsWhateverTheSampleOrder) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  std::vector<analysis::Sample> forward = threeSamples();
  std::vector<analysis::Sample> backward = threeSamples();
  std::reverse(backward.begin(), backward.end());
  const std::vector<std::string> names = {"y"};
  auto a = collectStatistics(*model, names, feeding(forward));
  auto b = collectStatistics(*model, names, feeding(backward));
  EXPECT_TRUE(a.at("y").histogram() == b.at("y").histogram());
  EXPECT_EQ(a.at("y").binWidth(), b.at("y").binWidth());
}

TEST(CollectStatistics, SameStatisticsWhateverTheBatchSize) {
  auto model = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 5] x) => (float[N, 5] y) <float k = {-3.0}> {
  s = Sin(x)
  y = Mul(s, k)
}
)",
                              "batch.onnxtxt");
  // 96 rows; fed as 96 samples of one row, 4 samples of 24 rows, and one sample of all 96.
  std::vector<float> rows(96 * 5);
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i] = std::ldexp(static_cast<float>(i % 37), static_cast<int>(i % 11)) * 0.01f;
  auto batches = [&](int64_t batch) {
    std::vector<analysis::Sample> samples;
    for (int64_t start = 0; start < 96; start += batch) {
      analysis::Sample sample;
      sample.source = "rows " + std::to_string(start);
      auto first = rows.begin() + start * 5;
      sample.inputs.emplace("x", floats({batch, 5}, std::vector<float>(first, first + batch * 5)));
      samples.push_back(std::move(sample));
    }
    return samples;
  };
  const std::vector<std::string> names = {"x", "s", "y"};
  std::vector<std::map<std::string, TensorStatistics>> results;
  for (int64_t batch : {1, 24, 96}) {
    std::vector<analysis::Sample> samples = batches(batch);
    results.push_back(collectStatistics(*model, names, feeding(samples)));
  }
  for (const std::string& name : names) {
    for (size_t r = 1; r < results.size(); ++r) {
      const TensorStatistics& a = results[0].at(name);
      const TensorStatistics& b = results[r].at(name);
      EXPECT_EQ(a.count(), 480u) << name;
      EXPECT_EQ(a.count(), b.count()) << name;
      EXPECT_EQ(a.min(), b.min()) << name;
      EXPECT_EQ(a.max(), b.max()) << name;
      EXPECT_EQ(a.binWidth(), b.binWidth()) << name;
      EXPECT_TRUE(a.histogram() == b.histogram()) << name;
      for (CalibratorKind kind : {CalibratorKind::Max, CalibratorKind::Percentile,
                                  CalibratorKind::Entropy, CalibratorKind::Mse}) {
        CalibratorSpec spec;
        spec.kind = kind;
        EXPECT_EQ(computeAmax(a, spec), computeAmax(b, spec)) << name;
      }
    }
  }
}

TEST(CollectStatistics, UnknownTensorIsNamedWithASuggestion) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  std::string message = errorOf(*model, {"x", "yy"}, threeSamples());
  EXPECT_NE(message.find("tensor 'yy'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'y'"), std::string::npos) << message;
  EXPECT_NE(message.find("tiny.onnxtxt"), std::string::npos) << message;
}

TEST(CollectStatistics, RefusesConstantsAndIntegerTensors) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  std::string message = errorOf(*model, {"two"}, threeSamples());
  EXPECT_NE(message.find("tensor 'two'"), std::string::npos) << message;
  EXPECT_NE(message.find("constant"), std::string::npos) << message;
  message = errorOf(*model, {"n"}, threeSamples());
  EXPECT_NE(message.find("tensor 'n'"), std::string::npos) << message;
  EXPECT_NE(message.find("element type INT64"), std::string::npos) << message;
}

TEST(CollectStatistics, SampleThatDoesNotFitIsNamed) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  std::vector<analysis::Sample> samples = threeSamples();
  samples[1].inputs.clear();
  samples[1].inputs.emplace("z", floats({2, 3}, {0, 0, 0, 0, 0, 0}));
  std::string message = errorOf(*model, {"y"}, samples);
  EXPECT_NE(message.find("s1.npy"), std::string::npos) << message;
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
}

TEST(CollectStatistics, NoSamplesGiveEmptyStatistics) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  std::vector<analysis::Sample> none;
  const std::vector<std::string> names = {"y"};
  auto stats = collectStatistics(*model, names, feeding(none));
  EXPECT_EQ(stats.at("y").count(), 0u);
  EXPECT_EQ(computeAmax(stats.at("y"), CalibratorSpec()), 0.0);
}

// ---- weights ----

TEST(WeightAmax, PerTensorAndPerChannel) {
  Tensor w = Tensor::fromFloats({2, 3}, std::vector<float>{1, -4, 2, -0.5f, 0.25f, 3});
  EXPECT_EQ(weightAmax(w, -1, "w"), std::vector<double>{4.0});
  EXPECT_EQ(weightAmax(w, 0, "w"), (std::vector<double>{4.0, 3.0}));
  EXPECT_EQ(weightAmax(w, 1, "w"), (std::vector<double>{1.0, 4.0, 3.0}));
  // Conv weight [out=2, in=1, 2, 2]: axis 0 takes the max over each filter.
  Tensor conv =
      Tensor::fromFloats({2, 1, 2, 2}, std::vector<float>{1, 2, -3, 0, 0, 0, 0.5f, -0.25f});
  EXPECT_EQ(weightAmax(conv, 0, "conv.weight"), (std::vector<double>{3.0, 0.5}));
}

TEST(WeightAmax, Float16Weights) {
  std::vector<double> values = {0.5, -1.5, 2.0, 0.25};
  Tensor w = Tensor::fromDoubles(DataType::Float16, {2, 2}, values);
  EXPECT_EQ(weightAmax(w, 0, "w"), (std::vector<double>{1.5, 2.0}));
}

TEST(WeightAmax, ErrorsNameTheWeight) {
  auto messageOf = [](const Tensor& w, int64_t axis) {
    try {
      weightAmax(w, axis, "initializer 'conv.weight'");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::vector<int64_t> ints = {1, 2};
  std::string message = messageOf(Tensor::fromInt64s(DataType::Int8, {2}, ints), -1);
  EXPECT_NE(message.find("initializer 'conv.weight'"), std::string::npos) << message;
  EXPECT_NE(message.find("element type INT8"), std::string::npos) << message;
  Tensor w = Tensor::fromFloats({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  message = messageOf(w, 2);
  EXPECT_NE(message.find("axis 2"), std::string::npos) << message;
  Tensor nan =
      Tensor::fromFloats({2}, std::vector<float>{1, std::numeric_limits<float>::quiet_NaN()});
  message = messageOf(nan, 0);
  EXPECT_NE(message.find("nan"), std::string::npos) << message;
}

// ---- progress ----

TEST(TerminalProgress, SilentWhenStderrIsNotATerminal) {
  if (isatty(STDERR_FILENO)) GTEST_SKIP() << "stderr is a terminal";
  ::testing::internal::CaptureStderr();
  ProgressFn progress = terminalProgress("calibrating");
  EXPECT_FALSE(progress);  // no bar at all: callers skip the calls
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

std::vector<analysis::Sample> manySamples(size_t count) {
  std::vector<analysis::Sample> samples(count);
  uint32_t state = 12345;
  for (size_t i = 0; i < count; ++i) {
    std::vector<float> values(6);
    for (float& v : values) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(static_cast<int32_t>(state >> 8) % 20001) / 1000.0f - 10.0f;
    }
    samples[i].source = "s" + std::to_string(i) + ".npy";
    samples[i].inputs.emplace("x", floats({2, 3}, values));
  }
  return samples;
}

TEST(CollectStatistics, EveryThreadCountGivesTheSameStatistics) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  const std::vector<std::string> names = {"x", "r", "y"};
  std::map<std::string, TensorStatistics> one;
  for (int threads : {1, 2, 3, 8}) {
    std::vector<analysis::Sample> samples = manySamples(61);
    std::vector<size_t> reported;
    auto stats = collectStatistics(
        *model, names, feeding(samples), [&](size_t done, size_t) { reported.push_back(done); },
        CollectOptions{threads});
    // Progress counts up one sample at a time, then reports the end once more.
    ASSERT_EQ(reported.size(), 62u) << threads << " threads";
    for (size_t i = 0; i < 61; ++i) EXPECT_EQ(reported[i], i + 1);
    if (threads == 1) {
      one = stats;
      continue;
    }
    for (const std::string& name : names) {
      const TensorStatistics& a = one.at(name);
      const TensorStatistics& b = stats.at(name);
      EXPECT_EQ(a.count(), b.count()) << name << ", " << threads << " threads";
      EXPECT_EQ(a.zeros(), b.zeros()) << name;
      EXPECT_EQ(a.min(), b.min()) << name;
      EXPECT_EQ(a.max(), b.max()) << name;
      EXPECT_EQ(a.binWidth(), b.binWidth()) << name;
      EXPECT_EQ(a.histogram(), b.histogram()) << name << ", " << threads << " threads";
    }
  }
}

TEST(CollectStatistics, AFailingSampleOnAWorkerIsNamedAndStopsTheRun) {
  auto model = parseModelText(kModel, "tiny.onnxtxt");
  std::vector<analysis::Sample> samples = manySamples(40);
  samples[17].inputs.at("x") = floats({3, 3}, std::vector<float>(9, 1.0f));
  const std::vector<std::string> names = {"y"};
  try {
    collectStatistics(*model, names, feeding(samples), {}, CollectOptions{4});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("s17.npy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qopt::quant
