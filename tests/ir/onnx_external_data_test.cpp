// External data: read lazily through memory maps, written back with the same layout, copied
// next to a model saved elsewhere, or re-chunked into one file; models over 2 GiB; never a byte
// written outside the output's folder.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "OnnxTestModels.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt {
namespace {

namespace fs = std::filesystem;
using testing::addInput;
using testing::addNode;
using testing::addOutput;
using ::testing::HasSubstr;
using testing::parseModel;
using testing::readFile;
using testing::sameModel;
using testing::TempDir;
using testing::writeFile;

void addExternal(onnx::TensorProto* tensor, const std::string& location, uint64_t offset,
                 uint64_t length) {
  tensor->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& key, const std::string& value) {
    auto* entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

std::string pattern(size_t size, int seed) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<char>((i * 7 + static_cast<size_t>(seed)) % 251);
  return bytes;
}

// A model with two initializers in `location` (at 0 and at 4096), a small inline one, and an
// inline Constant of 8 KiB. Writes the data file next to it.
onnx::ModelProto externalModel(const TempDir& dir, const std::string& location = "weights.bin") {
  onnx::ModelProto proto = testing::simpleModel();
  onnx::GraphProto& graph = *proto.mutable_graph();
  auto addWeight = [&](const std::string& name, int64_t count, uint64_t offset) {
    onnx::TensorProto* t = graph.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(count);
    addExternal(t, location, offset, static_cast<uint64_t>(count) * 4);
  };
  addWeight("e1", 1000, 0);
  addWeight("e2", 500, 4096);
  auto* checksum = graph.mutable_initializer(2)->add_external_data();
  checksum->set_key("checksum");
  checksum->set_value("kept-as-is");
  onnx::NodeProto* constant = addNode(graph, "Constant", {}, {"c"}, "constant");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::UINT8);
  value->mutable_t()->add_dims(8192);
  value->mutable_t()->set_raw_data(pattern(8192, 3));
  onnx::AttributeProto* axis =
      addNode(graph, "Concat", {"e1", "e2"}, {"joined"}, "concat")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addOutput(graph, "joined", {1500});
  addOutput(graph, "c", {8192}, onnx::TensorProto::UINT8);
  fs::create_directories((dir / location).parent_path());
  std::string data = pattern(4096 + 2000, 1);
  writeFile(dir / location, data);
  return proto;
}

std::string bytesOf(const Model& model, const std::string& name) {
  auto span = model.graph().findValue(name)->initializer()->rawBytes();
  return std::string(reinterpret_cast<const char*>(span.data()), span.size());
}

TEST(OnnxExternalData, LoadsLazilyAndReadsTheRightBytes) {
  TempDir dir;
  writeFile(dir / "model.onnx", externalModel(dir).SerializeAsString());
  auto model = loadModel(dir / "model.onnx");
  const TensorPtr& e2 = model->graph().findValue("e2")->initializer();
  EXPECT_EQ(e2->encoding(), TensorEncoding::External);
  EXPECT_FALSE(e2->isLoaded());
  std::string data = readFile(dir / "weights.bin");
  EXPECT_EQ(bytesOf(*model, "e2"), data.substr(4096, 2000));
  EXPECT_TRUE(e2->isLoaded());
  EXPECT_EQ(bytesOf(*model, "e1"), data.substr(0, 4000));
}

TEST(OnnxExternalData, KeepLayoutInTheSameFolderWritesNoData) {
  TempDir dir;
  onnx::ModelProto proto = externalModel(dir);
  writeFile(dir / "model.onnx", proto.SerializeAsString());
  auto model = loadModel(dir / "model.onnx");
  saveModel(*model, dir / "copy.onnx");
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"copy.onnx", "model.onnx", "weights.bin"}));
  EXPECT_TRUE(sameModel(proto, parseModel(readFile(dir / "copy.onnx"))));
  auto again = loadModel(dir / "copy.onnx");
  EXPECT_EQ(bytesOf(*again, "e2"), bytesOf(*model, "e2"));
}

TEST(OnnxExternalData, KeepLayoutElsewhereCopiesTheDataFiles) {
  TempDir dir;
  fs::create_directories(dir / "out");
  TempDir inDir;
  onnx::ModelProto proto = externalModel(inDir, "data/weights.bin");
  writeFile(inDir / "model.onnx", proto.SerializeAsString());
  auto model = loadModel(inDir / "model.onnx");
  saveModel(*model, dir / "out" / "model.onnx");
  EXPECT_EQ(readFile(dir / "out" / "data" / "weights.bin"),
            readFile(inDir / "data" / "weights.bin"));
  EXPECT_TRUE(sameModel(proto, parseModel(readFile(dir / "out" / "model.onnx"))));
  auto reloaded = loadModel(dir / "out" / "model.onnx");
  EXPECT_EQ(bytesOf(*reloaded, "e1"), bytesOf(*model, "e1"));
}

TEST(OnnxExternalData, SingleFileRechunksLargeTensors) {
  TempDir dir;
  writeFile(dir / "model.onnx", externalModel(dir).SerializeAsString());
  auto model = loadModel(dir / "model.onnx");
  fs::create_directories(dir / "out");
  SaveOptions options;
  options.layout = SaveOptions::ExternalLayout::SingleFile;
  options.externalThreshold = 1024;
  saveModel(*model, dir / "out" / "single.onnx", options);
  EXPECT_EQ(TempDir::filesOf(dir / "out"),
            (std::vector<std::string>{"single.onnx", "single.onnx.data"}));
  onnx::ModelProto saved = parseModel(readFile(dir / "out" / "single.onnx"));
  for (const auto& tensor : saved.graph().initializer()) {
    bool large = tensor.name() != "w";  // w has 8 bytes: stays inline
    EXPECT_EQ(tensor.data_location() == onnx::TensorProto::EXTERNAL, large) << tensor.name();
    if (!large) continue;
    EXPECT_EQ(tensor.external_data(0).value(), "single.onnx.data");
    EXPECT_EQ(std::stoull(tensor.external_data(1).value()) % 64, 0u) << "aligned offsets";
  }
  const auto& constant = saved.graph().node(2).attribute(0).t();
  EXPECT_EQ(constant.data_location(), onnx::TensorProto::EXTERNAL);  // attributes too
  auto reloaded = loadModel(dir / "out" / "single.onnx");
  for (const char* name : {"w", "e1", "e2"}) {
    EXPECT_EQ(bytesOf(*reloaded, name), bytesOf(*model, name)) << name;
  }
  auto span = reloaded->graph().findValue("c")->producer()->findAttr("value")->t->rawBytes();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(span.data()), span.size()), pattern(8192, 3));

  options.externalFileName = "weights/all.bin";
  fs::create_directories(dir / "out" / "weights");
  saveModel(*model, dir / "out" / "named.onnx", options);
  EXPECT_TRUE(fs::exists(dir / "out" / "weights" / "all.bin"));
}

TEST(OnnxExternalData, InlineLayoutEmbedsEverything) {
  TempDir dir;
  onnx::ModelProto proto = externalModel(dir);
  writeFile(dir / "model.onnx", proto.SerializeAsString());
  auto model = loadModel(dir / "model.onnx");
  fs::create_directories(dir / "out");
  SaveOptions options;
  options.layout = SaveOptions::ExternalLayout::Inline;
  saveModel(*model, dir / "out" / "inline.onnx", options);
  EXPECT_EQ(TempDir::filesOf(dir / "out"), (std::vector<std::string>{"inline.onnx"}));
  onnx::ModelProto saved = parseModel(readFile(dir / "out" / "inline.onnx"));
  EXPECT_EQ(saved.graph().initializer(1).raw_data(), bytesOf(*model, "e1"));
  EXPECT_EQ(saved.graph().initializer(2).data_location(), onnx::TensorProto::DEFAULT);
  EXPECT_EQ(readFile(dir / "out" / "inline.onnx"), serializeModel(*model));
}

TEST(OnnxExternalData, ModelsOver2GiB) {
  TempDir dir;
  const uint64_t perTensor = (uint64_t{1} << 30) + 4096;  // two of them pass 2 GiB
  {
    // A sparse file: the test needs its size, not its bytes on disk.
    int fd = ::open((dir / "big.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(2 * perTensor)), 0);
    ::close(fd);
  }
  onnx::ModelProto proto = testing::simpleModel();
  for (int i = 0; i < 2; ++i) {
    onnx::TensorProto* t = proto.mutable_graph()->add_initializer();
    t->set_name("big" + std::to_string(i));
    t->set_data_type(onnx::TensorProto::UINT8);
    t->add_dims(static_cast<int64_t>(perTensor));
    addExternal(t, "big.bin", perTensor * static_cast<uint64_t>(i), perTensor);
  }
  writeFile(dir / "model.onnx", proto.SerializeAsString());
  auto model = loadModel(dir / "model.onnx");
  EXPECT_EQ(model->graph().findValue("big1")->initializer()->rawBytes().size(), perTensor);

  saveModel(*model, dir / "kept.onnx");  // same folder: the data stays where it is
  EXPECT_TRUE(sameModel(proto, parseModel(readFile(dir / "kept.onnx"))));

  SaveOptions inlineOptions;
  inlineOptions.layout = SaveOptions::ExternalLayout::Inline;
  try {
    saveModel(*model, dir / "inline.onnx", inlineOptions);
    ADD_FAILURE() << "an inline model over 2 GiB was saved";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), (dir / "inline.onnx").string());
    EXPECT_THAT(e.cause(), HasSubstr("over protobuf's 2 GiB limit"));
  }
  EXPECT_FALSE(fs::exists(dir / "inline.onnx"));
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"big.bin", "kept.onnx", "model.onnx"}));
  EXPECT_THROW(serializeModel(*model), Error);
}

TEST(OnnxExternalData, SavingNeverWritesOutsideTheOutputFolder) {
  TempDir dir;
  fs::create_directories(dir / "out");
  Model model;
  model.setOpsetVersion("", 17);
  auto tensor = std::make_shared<Tensor>(DataType::Float, std::vector<int64_t>{4});
  writeFile(dir / "source.bin", std::string(16, 'x'));
  ExternalData ext;
  ext.location = "../escape.bin";
  ext.baseDir = dir.path();
  tensor->setExternalData(ext);
  tensor->setName("t");
  Value* t = model.graph().addInitializer(tensor);
  model.graph().addOutput(t);
  try {
    saveModel(model, dir / "out" / "model.onnx");
    ADD_FAILURE() << "a data file outside the output folder was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), "initializer 't'");
    EXPECT_THAT(e.cause(), HasSubstr("path traversal"));
  }
  SaveOptions single;
  single.layout = SaveOptions::ExternalLayout::SingleFile;
  single.externalFileName = "../data.bin";
  EXPECT_THROW(saveModel(model, dir / "out" / "model.onnx", single), Error);
  single.externalFileName = "/tmp/data.bin";
  EXPECT_THROW(saveModel(model, dir / "out" / "model.onnx", single), Error);
  EXPECT_TRUE(TempDir::filesOf(dir / "out").empty());
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"out", "source.bin"}));
}

TEST(OnnxExternalData, DataFilesTheModelReadsAreProtected) {
  TempDir dir;
  writeFile(dir / "model.onnx", externalModel(dir).SerializeAsString());
  std::string data = readFile(dir / "weights.bin");
  auto model = loadModel(dir / "model.onnx");

  // The model file itself must not replace a data file it refers to.
  EXPECT_THROW(saveModel(*model, dir / "weights.bin"), Error);
  EXPECT_EQ(readFile(dir / "weights.bin"), data);

  // Re-chunking into the file the tensors are read from needs allowOverwriteSource.
  SaveOptions options;
  options.layout = SaveOptions::ExternalLayout::SingleFile;
  options.externalFileName = "weights.bin";
  try {
    saveModel(*model, dir / "other.onnx", options);
    ADD_FAILURE() << "the source data file was overwritten";
  } catch (const Error& e) {
    EXPECT_THAT(e.cause(), HasSubstr("refusing to overwrite external data file 'weights.bin'"));
  }
  EXPECT_EQ(readFile(dir / "weights.bin"), data);
  EXPECT_FALSE(fs::exists(dir / "other.onnx"));
  options.allowOverwriteSource = true;
  std::string e1 = bytesOf(*model, "e1");
  saveModel(*model, dir / "other.onnx", options);
  auto reloaded = loadModel(dir / "other.onnx");
  EXPECT_EQ(bytesOf(*reloaded, "e1"), e1);
}

}  // namespace
}  // namespace qopt
