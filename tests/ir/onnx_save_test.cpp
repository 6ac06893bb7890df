// Saving: atomic (a temporary file in the target folder, synced, renamed), deterministic, never
// over the model's own source unless asked; TensorProto files read and written back.
#include <cstdio>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "OnnxTestModels.h"
#include "ProtoConvert.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::parseModel;
using testing::readFile;
using testing::sameModel;
using testing::simpleModel;
using testing::TempDir;
using testing::writeFile;

TEST(OnnxSave, RefusesToOverwriteTheSourceUnlessAllowed) {
  TempDir dir;
  std::string original = simpleModel().SerializeAsString();
  writeFile(dir / "model.onnx", original);
  auto model = loadModel(dir / "model.onnx");
  model->graph().name = "changed";
  try {
    saveModel(*model, dir / "model.onnx");
    ADD_FAILURE() << "the source was overwritten";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), (dir / "model.onnx").string());
    EXPECT_THAT(e.cause(), HasSubstr("refusing to overwrite the file the model was read from"));
  }
  EXPECT_EQ(readFile(dir / "model.onnx"), original);
  // Another spelling of the same path is the same file.
  EXPECT_THROW(saveModel(*model, dir.path() / "." / "model.onnx"), Error);

  SaveOptions options;
  options.allowOverwriteSource = true;
  saveModel(*model, dir / "model.onnx", options);
  EXPECT_EQ(parseModel(readFile(dir / "model.onnx")).graph().name(), "changed");
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"model.onnx"}));
}

TEST(OnnxSave, WritesAtomicallyAndLeavesNoTemporaryFiles) {
  TempDir dir;
  auto model = loadModelFromBytes(simpleModel().SerializeAsString(), "memory", dir.path());
  writeFile(dir / "out.onnx", "old contents");
  saveModel(*model, dir / "out.onnx");
  EXPECT_EQ(readFile(dir / "out.onnx"), serializeModel(*model));
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"out.onnx"}));

  writeFileAtomically(dir / "bytes.bin", "first");
  writeFileAtomically(dir / "bytes.bin", "second");
  EXPECT_EQ(readFile(dir / "bytes.bin"), "second");
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"bytes.bin", "out.onnx"}));
}

TEST(OnnxSave, FailuresWriteNothing) {
  TempDir dir;
  auto model = loadModelFromBytes(simpleModel().SerializeAsString(), "memory", dir.path());
  try {
    saveModel(*model, dir / "missing" / "out.onnx");
    ADD_FAILURE() << "saved into a folder that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), (dir / "missing" / "out.onnx").string());
    EXPECT_THAT(e.cause(), HasSubstr("does not exist"));
  }
  EXPECT_THROW(writeFileAtomically(dir / "missing" / "x.bin", "x"), Error);
  fs::create_directories(dir / "folder.onnx");
  EXPECT_THROW(saveModel(*model, dir / "folder.onnx"), Error);

  // An initializer whose bytes cannot be exported (its external file vanished) fails the save
  // before anything is written.
  auto tensor = std::make_shared<Tensor>(DataType::Float, std::vector<int64_t>{2});
  ExternalData ext;
  ext.location = "vanished.bin";
  ext.baseDir = dir.path();
  tensor->setExternalData(ext);
  tensor->setName("gone");
  model->graph().addInitializer(tensor);
  SaveOptions inlineOptions;
  inlineOptions.layout = SaveOptions::ExternalLayout::Inline;
  EXPECT_THROW(saveModel(*model, dir / "inline.onnx", inlineOptions), Error);
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"folder.onnx"}));
}

TEST(OnnxSave, SavedBytesAreDeterministic) {
  TempDir dir;
  auto model = loadModelFromBytes(simpleModel().SerializeAsString(), "memory", dir.path());
  Graph& graph = model->graph();
  Node* neg = graph.createNode("Neg", {graph.findValue("y")}, 1);
  graph.addOutput(neg->output(0));
  saveModel(*model, dir / "a.onnx");
  saveModel(*model, dir / "b.onnx");
  EXPECT_EQ(readFile(dir / "a.onnx"), readFile(dir / "b.onnx"));
  EXPECT_EQ(readFile(dir / "a.onnx"), serializeModel(*model));
  auto reloaded = loadModel(dir / "a.onnx");
  saveModel(*reloaded, dir / "c.onnx");
  EXPECT_EQ(readFile(dir / "c.onnx"), readFile(dir / "a.onnx"));
  auto clone = model->clone();
  EXPECT_EQ(serializeModel(*clone), serializeModel(*model));
}

TEST(OnnxSave, TensorProtoFilesRoundTrip) {
  TempDir dir;
  Tensor tensor = Tensor::fromFloats({2, 2}, std::vector<float>{1, 2, 3, 4});
  tensor.setName("t");
  saveTensorProtoFile(tensor, dir / "t.pb");
  Tensor back = loadTensorProtoFile(dir / "t.pb");
  EXPECT_EQ(back.name(), "t");
  EXPECT_TRUE(back.sameContent(tensor));
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"t.pb"}));
}

// The inputs and outputs of ONNX's node tests are TensorProto files, where the model's input or
// output is a tensor (sequences, optionals and maps use other messages).
TEST(OnnxSave, TestDataTensorFilesRoundTrip) {
  size_t compared = 0;
  TempDir dir;
  fs::path root = fs::path(QOPT_TESTDATA_DIR) / "node";
  ASSERT_TRUE(fs::is_directory(root));
  for (const auto& test : fs::directory_iterator(root)) {
    onnx::ModelProto model;
    if (!model.ParseFromString(readFile(test.path() / "model.onnx"))) continue;
    std::vector<bool> inputIsTensor, outputIsTensor;
    for (const auto& input : model.graph().input()) {
      bool isInitializer = false;
      for (const auto& init : model.graph().initializer())
        isInitializer |= init.name() == input.name();
      if (!isInitializer) inputIsTensor.push_back(input.type().has_tensor_type());
    }
    for (const auto& output : model.graph().output()) {
      outputIsTensor.push_back(output.type().has_tensor_type());
    }
    for (const auto& entry : fs::recursive_directory_iterator(test.path())) {
      std::string name = entry.path().filename().string();
      bool isInput = name.rfind("input_", 0) == 0;
      if (entry.path().extension() != ".pb" || (!isInput && name.rfind("output_", 0) != 0))
        continue;
      size_t index = std::stoul(name.substr(isInput ? 6 : 7));
      const std::vector<bool>& tensors = isInput ? inputIsTensor : outputIsTensor;
      if (index >= tensors.size() || !tensors[index]) continue;
      SCOPED_TRACE(entry.path().string());
      onnx::TensorProto original;
      ASSERT_TRUE(original.ParseFromString(readFile(entry.path())));
      Tensor tensor = loadTensorProtoFile(entry.path());
      onnx::TensorProto copy;
      // Every file goes through export; some through the (fsync'ing) file writer too.
      if (compared % 64 == 0) {
        saveTensorProtoFile(tensor, dir / "copy.pb");
        ASSERT_TRUE(copy.ParseFromString(readFile(dir / "copy.pb")));
      } else {
        detail::exportTensorProto(tensor, copy);
      }
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(original, copy));
      ++compared;
    }
  }
  std::printf("[ tensor files ] %zu TensorProto files read and written back equal\n", compared);
  EXPECT_GT(compared, 1000u);
}

}  // namespace
}  // namespace qopt
