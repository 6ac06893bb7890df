// Bad input gives one clear qopt::Error: it names the file, the node or tensor where that
// applies, and the cause. Each case below is one way a file can be wrong.
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
using ::testing::_;
using testing::addFloatInitializer;
using testing::addGraphAttribute;
using testing::addInput;
using testing::addNode;
using testing::addOutput;
using ::testing::HasSubstr;
using testing::simpleModel;
using testing::TempDir;

Error loadError(const fs::path& path, const LoadOptions& options = {}) {
  try {
    loadModel(path, options);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "loading " << path << " succeeded";
  return Error("no error");
}

// Writes `proto` as model.onnx in `dir` and returns the error loading it gives.
Error loadError(const TempDir& dir, const onnx::ModelProto& proto,
                const LoadOptions& options = {}) {
  testing::writeFile(dir / "model.onnx", proto.SerializeAsString());
  return loadError(dir / "model.onnx", options);
}

void expectOneLine(const Error& e) {
  EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  EXPECT_EQ(e.kind(), ErrorKind::Input);
}

// Each case starts from a valid model (`proto`) and a folder to write it in (`dir`).
class OnnxBadInput : public ::testing::Test {
 protected:
  // Writes `bytes` as `name` and expects loading it to fail with a one-line input error that
  // names the file and whose cause holds `cause`.
  void expectFileError(const std::string& name, const std::string& bytes,
                       const std::string& cause) {
    testing::writeFile(dir / name, bytes);
    Error e = loadError(dir / name);
    EXPECT_EQ(e.where(), (dir / name).string());
    EXPECT_THAT(e.cause(), HasSubstr(cause));
    expectOneLine(e);
  }

  TempDir dir;
  onnx::ModelProto proto = simpleModel();
};

// Expects the one-line input error of loading `dir`'s model.onnx: `subject` and `cause` are
// strings or matchers.
template <typename Subject, typename Cause>
void expectModelError(const Error& e, const TempDir& dir, Subject subject, Cause cause) {
  EXPECT_EQ(e.where(), (dir / "model.onnx").string());
  EXPECT_THAT(e.subject(), subject);
  EXPECT_THAT(e.cause(), cause);
  expectOneLine(e);
}

// simpleModel() with `levels` If nodes if0, if1, ... each nested in the previous one's
// then_branch.
onnx::ModelProto nestedIfModel(int levels) {
  onnx::ModelProto proto = simpleModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  addInput(*graph, "cond", {}, onnx::TensorProto::BOOL);
  for (int level = 0; level < levels; ++level) {
    onnx::NodeProto* node = addNode(*graph, "If", {"cond"}, {"out" + std::to_string(level)},
                                    "if" + std::to_string(level));
    graph = addGraphAttribute(node, "then_branch");
  }
  return proto;
}

// ---------------------------------------------------------------------------------------------
// Not a readable model at all

TEST_F(OnnxBadInput, EmptyFile) {
  expectFileError("empty.onnx", "", "the file is empty");
}

TEST_F(OnnxBadInput, TruncatedFile) {
  std::string bytes = simpleModel().SerializeAsString();
  expectFileError("cut.onnx", bytes.substr(0, bytes.size() / 2), "the file is truncated");
}

TEST_F(OnnxBadInput, NotAnOnnxFile) {
  expectFileError("text.onnx", "hello, this is a text file\n", "not an ONNX model");

  testing::writeFile(dir / "png.onnx", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  EXPECT_THAT(loadError(dir / "png.onnx").cause(), HasSubstr("not an ONNX model"));

  // Valid protobuf, but another message.
  onnx::TensorProto tensor;
  tensor.add_dims(3);
  tensor.add_dims(4);
  testing::writeFile(dir / "tensor.onnx", tensor.SerializeAsString());
  EXPECT_THAT(loadError(dir / "tensor.onnx").cause(), HasSubstr("not an ONNX model"));
}

TEST_F(OnnxBadInput, MissingFileAndFolder) {
  Error missing = loadError(dir / "absent.onnx");
  EXPECT_EQ(missing.where(), (dir / "absent.onnx").string());
  EXPECT_THAT(missing.cause(), HasSubstr("No such file"));
  EXPECT_THAT(loadError(dir.path()).cause(), HasSubstr("is a folder"));
}

TEST_F(OnnxBadInput, ProtobufRecursionLimit) {
  // Ten nested If bodies need about 30 levels of protobuf messages.
  proto = nestedIfModel(10);
  LoadOptions options;
  options.protobufRecursionLimit = 20;
  Error e = loadError(dir, proto, options);
  expectModelError(e, dir, _, HasSubstr("nest deeper than the recursion limit (20)"));
}

// ---------------------------------------------------------------------------------------------
// Tensors

TEST_F(OnnxBadInput, DimsWhoseProductOverflows) {
  onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  for (int i = 0; i < 3; ++i) w->add_dims(int64_t{1} << 30);
  Error e = loadError(dir, proto);
  expectModelError(e, dir, "initializer 'w'", HasSubstr("overflows"));
}

TEST_F(OnnxBadInput, NegativeDims) {
  proto.mutable_graph()->mutable_initializer(0)->set_dims(0, -2);
  Error e = loadError(dir, proto);
  EXPECT_EQ(e.subject(), "initializer 'w'");
  EXPECT_THAT(e.cause(), HasSubstr("negative dimension -2"));
}

TEST_F(OnnxBadInput, RawDataLengthDisagreesWithShape) {
  proto.mutable_graph()->mutable_initializer(0)->set_dims(0, 3);  // 12 bytes needed, 8 given
  Error e = loadError(dir, proto);
  expectModelError(e, dir, "initializer 'w'",
                   HasSubstr("raw_data holds 8 bytes, but its shape [3] of FLOAT needs 12"));
}

TEST_F(OnnxBadInput, TypedFieldDisagreesWithShapeOrType) {
  onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->add_float_data(1.0f);
  EXPECT_THAT(loadError(dir, proto).cause(), HasSubstr("float_data holds 1 values"));
  w->clear_float_data();
  w->add_int64_data(1);
  w->add_int64_data(2);
  EXPECT_THAT(loadError(dir, proto).cause(),
              HasSubstr("int64_data cannot hold values of type FLOAT"));
}

TEST_F(OnnxBadInput, UnknownDataType) {
  proto.mutable_graph()->mutable_initializer(0)->set_data_type(99);
  Error e = loadError(dir, proto);
  EXPECT_EQ(e.subject(), "initializer 'w'");
  EXPECT_THAT(e.cause(), HasSubstr("unknown data type 99"));
  expectOneLine(e);

  onnx::ModelProto typed = simpleModel();
  typed.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(42);
  Error valueError = loadError(dir, typed);
  EXPECT_EQ(valueError.subject(), "graph input 'x'");
  EXPECT_THAT(valueError.cause(), HasSubstr("unknown element type 42"));
}

// ---------------------------------------------------------------------------------------------
// Graph structure

TEST_F(OnnxBadInput, GraphCycle) {
  onnx::GraphProto& graph = *proto.mutable_graph();
  graph.mutable_node(0)->set_input(0, "y");  // add(y, w) -> s -> relu -> y
  Error e = loadError(dir, proto);
  expectModelError(e, dir, HasSubstr("node '"), HasSubstr("cycle"));
}

TEST_F(OnnxBadInput, UndefinedNodeInput) {
  proto.mutable_graph()->mutable_node(0)->set_input(1, "nowhere");
  Error e = loadError(dir, proto);
  expectModelError(e, dir, "node 'add' (Add)", "input 1 'nowhere' is not defined");
}

TEST_F(OnnxBadInput, UndefinedGraphOutput) {
  proto.mutable_graph()->mutable_output(0)->set_name("ghost");
  Error e = loadError(dir, proto);
  EXPECT_EQ(e.subject(), "graph output 'ghost'");
  EXPECT_THAT(e.cause(), HasSubstr("not defined"));
}

TEST_F(OnnxBadInput, DuplicateValueNames) {
  addNode(*proto.mutable_graph(), "Neg", {"x"}, {"s"}, "again");
  Error e = loadError(dir, proto);
  expectModelError(e, dir, "node 'again' (Neg)", HasSubstr("'s' is defined more than once"));

  onnx::ModelProto initializerTwice = simpleModel();
  addFloatInitializer(*initializerTwice.mutable_graph(), "w", {0.0f, 0.0f});
  EXPECT_THAT(loadError(dir, initializerTwice).cause(), HasSubstr("defined more than once"));

  // A subgraph must not redefine a name of its enclosing graph.
  onnx::ModelProto shadowing = simpleModel();
  onnx::GraphProto& graph = *shadowing.mutable_graph();
  addInput(graph, "cond", {}, onnx::TensorProto::BOOL);
  onnx::GraphProto* branch =
      addGraphAttribute(addNode(graph, "If", {"cond"}, {"r"}, "if"), "then_branch");
  addNode(*branch, "Neg", {"x"}, {"y"}, "inner");
  addOutput(*branch, "y");
  Error shadow = loadError(dir, shadowing);
  EXPECT_EQ(shadow.subject(), "node 'inner' (Neg)");
  EXPECT_THAT(shadow.cause(), HasSubstr("'y' is defined more than once"));
}

TEST_F(OnnxBadInput, SubgraphsNestedTooDeep) {
  proto = nestedIfModel(6);
  LoadOptions options;
  options.maxNestingDepth = 4;
  Error e = loadError(dir, proto, options);
  expectModelError(e, dir, "node 'if4' (If)",
                   "attribute 'then_branch': subgraphs nest deeper than 4 levels");
  options.maxNestingDepth = 6;
  EXPECT_NO_THROW(loadModel(dir / "model.onnx", options));
}

// ---------------------------------------------------------------------------------------------
// External data

onnx::ModelProto externalModel(const std::string& location, uint64_t offset = 0) {
  onnx::ModelProto proto = simpleModel();
  onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  auto* at = w->add_external_data();
  at->set_key("offset");
  at->set_value(std::to_string(offset));
  return proto;
}

TEST_F(OnnxBadInput, MissingExternalDataFile) {
  Error e = loadError(dir, externalModel("weights.bin"));
  expectModelError(e, dir, "initializer 'w'", "external data file 'weights.bin' does not exist");
}

TEST_F(OnnxBadInput, ExternalDataFileTooShort) {
  testing::writeFile(dir / "weights.bin", std::string(10, 'x'));
  Error e = loadError(dir, externalModel("weights.bin", 4));
  EXPECT_EQ(e.subject(), "initializer 'w'");
  EXPECT_THAT(e.cause(), HasSubstr("external data file 'weights.bin' is too short: the tensor "
                                   "needs 8 bytes at offset 4, the file has 10 bytes"));
  expectOneLine(e);
}

TEST_F(OnnxBadInput, ExternalDataPathTraversal) {
  fs::create_directories(dir / "model");
  testing::writeFile(dir / "outside.bin", std::string(64, 'x'));
  auto load = [&](const std::string& location) {
    testing::writeFile(dir / "model" / "model.onnx", externalModel(location).SerializeAsString());
    return loadError(dir / "model" / "model.onnx");
  };
  Error absolute = load((dir / "outside.bin").string());
  EXPECT_EQ(absolute.where(), (dir / "model" / "model.onnx").string());
  EXPECT_EQ(absolute.subject(), "initializer 'w'");
  EXPECT_THAT(absolute.cause(), HasSubstr("path traversal"));
  EXPECT_THAT(absolute.cause(), HasSubstr("absolute"));
  expectOneLine(absolute);

  Error dotDot = load("../outside.bin");
  EXPECT_THAT(dotDot.cause(), HasSubstr("path traversal"));
  EXPECT_THAT(load("sub/../../outside.bin").cause(), HasSubstr("path traversal"));

  // Symbolic links inside the folder that lead out of it: a file and a folder.
  fs::create_symlink(dir / "outside.bin", dir / "model" / "link.bin");
  Error fileLink = load("link.bin");
  EXPECT_THAT(fileLink.cause(), HasSubstr("path traversal"));
  EXPECT_THAT(fileLink.cause(), HasSubstr("symbolic link"));
  fs::create_directory_symlink(dir.path(), dir / "model" / "up");
  EXPECT_THAT(load("up/outside.bin").cause(), HasSubstr("path traversal"));

  // A link that stays inside is fine.
  testing::writeFile(dir / "model" / "real.bin", std::string(64, 'x'));
  fs::create_symlink("real.bin", dir / "model" / "alias.bin");
  testing::writeFile(dir / "model" / "model.onnx", externalModel("alias.bin").SerializeAsString());
  EXPECT_NO_THROW(loadModel(dir / "model" / "model.onnx"));
}

TEST_F(OnnxBadInput, ExternalDataEntriesMalformed) {
  testing::writeFile(dir / "weights.bin", std::string(64, 'x'));
  proto = externalModel("weights.bin");
  proto.mutable_graph()->mutable_initializer(0)->mutable_external_data(1)->set_value("12abc");
  EXPECT_THAT(loadError(dir, proto).cause(), HasSubstr("offset '12abc' is not a non-negative"));
  onnx::ModelProto wrongLength = externalModel("weights.bin");
  auto* length = wrongLength.mutable_graph()->mutable_initializer(0)->add_external_data();
  length->set_key("length");
  length->set_value("4");
  EXPECT_THAT(loadError(dir, wrongLength).cause(), HasSubstr("length 4 disagrees with its shape"));
  onnx::ModelProto noLocation = externalModel("weights.bin");
  noLocation.mutable_graph()->mutable_initializer(0)->mutable_external_data()->DeleteSubrange(0, 1);
  EXPECT_THAT(loadError(dir, noLocation).cause(), HasSubstr("no location"));
}

// ---------------------------------------------------------------------------------------------
// TensorProto files

TEST_F(OnnxBadInput, TensorProtoFiles) {
  testing::writeFile(dir / "empty.pb", "");
  try {
    loadTensorProtoFile(dir / "empty.pb");
    ADD_FAILURE() << "an empty tensor file loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), (dir / "empty.pb").string());
    EXPECT_THAT(e.cause(), HasSubstr("empty"));
  }
  onnx::TensorProto tensor;
  tensor.set_name("t");
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.add_dims(2);
  tensor.set_raw_data("abc");
  testing::writeFile(dir / "short.pb", tensor.SerializeAsString());
  try {
    loadTensorProtoFile(dir / "short.pb");
    ADD_FAILURE() << "a tensor with too few bytes loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), "tensor 't'");
    EXPECT_THAT(e.cause(), HasSubstr("raw_data holds 3 bytes"));
  }
}

}  // namespace
}  // namespace qopt
