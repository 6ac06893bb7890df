#include "qopt/analysis/DataSet.h"

#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>

#include "AnalysisTestUtil.h"
#include "ErrorTestUtil.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt::analysis {
namespace {

namespace fs = std::filesystem;
using testing::floats;
using testing::kReluModel;
using testing::parse;

constexpr const char* kTwoInputs = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,2] a, float[N,2] b) => (float[N,2] y) { y = Add(a, b) }
)";

using DataSetTest = testing::TempDirTest;

using qopt::testing::errorOf;

TEST_F(DataSetTest, InputSpecsFromTheModelAndInputShapes) {
  auto model = parse(kTwoInputs);
  std::vector<InputSpec> specs = inputSpecs(model->graph());
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "a");
  EXPECT_TRUE(specs[0].rankKnown);
  EXPECT_FALSE(specs[0].dims[0].has_value());
  EXPECT_EQ(specs[0].dims[1], 2);
  std::vector<InputShape> shapes = {{"a", {3, 2}}};
  specs = inputSpecs(model->graph(), shapes);
  EXPECT_EQ(specs[0].dims[0], 3);
  std::vector<InputShape> wrongRank = {{"a", {3}}};
  EXPECT_NE(errorOf([&] { inputSpecs(model->graph(), wrongRank); }).find("rank 1"),
            std::string::npos);
  std::vector<InputShape> wrongDim = {{"a", {3, 5}}};
  EXPECT_NE(errorOf([&] { inputSpecs(model->graph(), wrongDim); }).find("fixes it to 2"),
            std::string::npos);
  std::vector<InputShape> unknown = {{"c", {1}}};
  EXPECT_NE(errorOf([&] { inputSpecs(model->graph(), unknown); }).find("inputs: a, b"),
            std::string::npos);
}

TEST_F(DataSetTest, FolderOfFilesIsOneSamplePerFileInNameOrder) {
  auto model = parse(kReluModel);
  interp::writeNpy(dir_ / "b.npy", floats({1, 2}, {3, 4}));
  interp::writeNpy(dir_ / "a.npy", floats({1, 2}, {1, 2}));
  saveTensorProtoFile(floats({1, 2}, {5, 6}).toTensor("x"), dir_ / "c.pb");
  std::vector<Sample> samples = DataSet::open(dir_, inputSpecs(model->graph())).read();
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].inputs.at("x").data<float>()[0], 1.0f);
  EXPECT_EQ(samples[1].inputs.at("x").data<float>()[0], 3.0f);
  EXPECT_EQ(samples[2].inputs.at("x").data<float>()[1], 6.0f);
  EXPECT_EQ(DataSet::open(dir_, inputSpecs(model->graph())).read(2).size(), 2u);
}

TEST_F(DataSetTest, StackedFileSplitsAlongTheBatch) {
  auto model = parse(kReluModel);
  interp::writeNpy(dir_ / "all.npy", floats({3, 2}, {1, 2, 3, 4, 5, 6}));
  std::vector<Sample> samples = DataSet::open(dir_ / "all.npy", inputSpecs(model->graph())).read();
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[2].inputs.at("x").shape(), (interp::Shape{1, 2}));
  EXPECT_EQ(samples[2].inputs.at("x").data<float>()[0], 5.0f);
  EXPECT_NE(samples[1].source.find("all.npy[1]"), std::string::npos);
}

TEST_F(DataSetTest, StackedFileIsReadASampleAtATime) {
  auto model = parse(kReluModel);
  interp::writeNpy(dir_ / "all.npy", floats({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  DataSet set = DataSet::open(dir_ / "all.npy", inputSpecs(model->graph()));
  ASSERT_EQ(set.entryCount(), 4u);  // one entry per sample: nothing else is loaded with it
  EXPECT_EQ(set.sampleCount(), 4u);
  std::vector<Sample> third = set.loadEntry(2);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].inputs.at("x").shape(), (interp::Shape{1, 2}));
  EXPECT_EQ(third[0].inputs.at("x").data<float>()[1], 6.0f);
  // Cut short after it was opened: the missing rows are an error naming the file.
  const std::string bytes = interp::serializeNpy(floats({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  std::ofstream(dir_ / "all.npy", std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 4));
  EXPECT_NE(errorOf([&] { set.loadEntry(3); }).find("all.npy"), std::string::npos);
}

TEST_F(DataSetTest, InputFolderAndSampleFolders) {
  auto model = parse(kTwoInputs);
  interp::writeNpy(dir_ / "a.npy", floats({1, 2}, {1, 2}));
  interp::writeNpy(dir_ / "b.npy", floats({1, 2}, {3, 4}));
  std::vector<Sample> one = DataSet::open(dir_, inputSpecs(model->graph())).read();
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].inputs.size(), 2u);

  fs::path samples = dir_ / "samples";
  for (int i = 0; i < 2; ++i) {
    fs::create_directories(samples / std::to_string(i));
    interp::writeNpy(samples / std::to_string(i) / "a.npy", floats({1, 2}, {float(i), 0}));
    interp::writeNpy(samples / std::to_string(i) / "b.npy", floats({1, 2}, {0, float(i)}));
  }
  std::vector<Sample> two = DataSet::open(samples, inputSpecs(model->graph())).read();
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].inputs.at("a").data<float>()[0], 1.0f);
}

TEST_F(DataSetTest, MismatchedDataIsAnInputError) {
  auto model = parse(kReluModel);
  std::vector<InputSpec> specs = inputSpecs(model->graph());
  interp::writeNpy(dir_ / "shape.npy", floats({1, 3}, {1, 2, 3}));
  EXPECT_NE(errorOf([&] {
              DataSet::open(dir_ / "shape.npy", specs).read();
            }).find("the data has shape [1,3] but the model input is [1,2]"),
            std::string::npos);
  interp::Array ints(DataType::Int32, {1, 2});
  interp::writeNpy(dir_ / "type.npy", ints);
  EXPECT_NE(errorOf([&] {
              DataSet::open(dir_ / "type.npy", specs).read();
            }).find("the data is INT32 but the model input is FLOAT"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { DataSet::open(dir_ / "missing", specs); }).find("no such file"),
            std::string::npos);
  fs::create_directories(dir_ / "empty");
  auto two = parse(kTwoInputs);
  EXPECT_NE(errorOf([&] {
              DataSet::open(dir_ / "empty", inputSpecs(two->graph()));
            }).find("expected a.npy, b.npy"),
            std::string::npos);
}

TEST_F(DataSetTest, FloatDataConvertsToTheInputsFloatType) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float16[2] x) => (float16[2] y) { y = Relu(x) }
)");
  interp::writeNpy(dir_ / "x.npy", floats({2}, {0.5f, -1.0f}));
  std::vector<Sample> samples = DataSet::open(dir_, inputSpecs(model->graph())).read();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].inputs.at("x").dataType(), DataType::Float16);
  EXPECT_EQ(samples[0].inputs.at("x").getDouble(1), -1.0);
}

TEST_F(DataSetTest, RandomSamplesAreReproducibleAndWarnAboutOpenDims) {
  auto model = parse(kTwoInputs);
  std::vector<InputSpec> specs = inputSpecs(model->graph());
  std::vector<std::string> warnings;
  std::vector<Sample> a = randomSamples(specs, 3, 42, &warnings);
  std::vector<Sample> b = randomSamples(specs, 3, 42);
  std::vector<Sample> c = randomSamples(specs, 3, 43);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].inputs.at("a").shape(), (interp::Shape{1, 2}));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("--input-shapes"), std::string::npos);
  for (size_t s = 0; s < 3; ++s) {
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(a[s].inputs.at("b").data<float>()[i], b[s].inputs.at("b").data<float>()[i]);
    }
  }
  EXPECT_NE(a[0].inputs.at("a").data<float>()[0], c[0].inputs.at("a").data<float>()[0]);
  EXPECT_NE(a[0].inputs.at("a").data<float>()[0], a[1].inputs.at("a").data<float>()[0]);
}

TEST_F(DataSetTest, RandomIntegersAreZeroOrOne) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (int64[64] ids) => (int64[64] y) { y = Identity(ids) }
)");
  std::vector<Sample> s = randomSamples(inputSpecs(model->graph()), 1, 0);
  const interp::Array& ids = s[0].inputs.at("ids");
  EXPECT_EQ(ids.dataType(), DataType::Int64);
  bool sawZero = false, sawOne = false;
  for (int64_t i = 0; i < ids.numel(); ++i) {
    EXPECT_TRUE(ids.getInt64(i) == 0 || ids.getInt64(i) == 1);
    sawZero |= ids.getInt64(i) == 0;
    sawOne |= ids.getInt64(i) == 1;
  }
  EXPECT_TRUE(sawZero && sawOne);
}

TEST_F(DataSetTest, FileStem) {
  EXPECT_EQ(fileStem("input:0/a b"), "input_0_a_b");
  EXPECT_EQ(fileStem("x.y-z_1"), "x.y-z_1");
}

}  // namespace
}  // namespace qopt::analysis
