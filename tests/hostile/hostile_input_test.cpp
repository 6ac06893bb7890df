// Limits on untrusted input: huge tensors, deep nesting, protobuf bombs, file size, and plugins
// named without a path. Each must end in a qopt::Error that says which limit, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "ErrorTestUtil.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/ir/TextFormat.h"
#include "qopt/pass/PassRegistry.h"
#include "qopt/pass/Pipeline.h"
#include "qopt/pass/PluginLoader.h"

namespace qopt {
namespace {

namespace fs = std::filesystem;

using testing::errorOf;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

std::string lengthDelimited(int field, const std::string& payload) {
  return varint(static_cast<uint64_t>(field) << 3 | 2) + varint(payload.size()) + payload;
}

// A folder of its own under the test's temporary folder, removed at the end.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "qopt-hostile-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// y = <op>(...shape...) with a shape of 1e12 elements.
std::string trillionElementModel(const std::string& call) {
  return fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "main (float[1,1] x) => (float[] y)\n"
      "<int64[2] shape = {{1000000, 1000000}}>\n"
      "{{\n  y = {}\n}}\n",
      call);
}

std::string runTrillionElementModel(const std::string& call) {
  std::unique_ptr<Model> model = parseModelText(trillionElementModel(call), "huge.onnxtxt");
  interp::Interpreter interpreter(model->graph());
  interp::Array x(DataType::Float, {1, 1});
  *x.data<float>() = 1;
  return errorOf([&] { interpreter.run({{"x", x}}); });
}

TEST(TensorLimit, DefaultIsBoundedAndCanBeSetForTheProcess) {
  uint64_t computed = interp::defaultMaxTensorBytes();
  EXPECT_GT(computed, 0u);
  EXPECT_LE(computed, uint64_t{16} << 30);
  interp::setDefaultMaxTensorBytes(4096);
  EXPECT_EQ(interp::RunOptions{}.maxTensorBytes, 4096u);
  interp::setDefaultMaxTensorBytes(0);
  EXPECT_EQ(interp::RunOptions{}.maxTensorBytes, computed);
}

TEST(TensorLimit, ConstantOfShapeOfATrillionElementsFails) {
  std::string message = runTrillionElementModel("ConstantOfShape(shape)");
  EXPECT_TRUE(contains(message, "ConstantOfShape")) << message;
  EXPECT_TRUE(contains(message, "over the limit")) << message;
}

TEST(TensorLimit, ExpandToATrillionElementsFails) {
  std::string message = runTrillionElementModel("Expand(x, shape)");
  EXPECT_TRUE(contains(message, "Expand")) << message;
  EXPECT_TRUE(contains(message, "over the limit")) << message;
}

TEST(TensorLimit, TileToATrillionElementsFails) {
  std::string message = runTrillionElementModel("Tile(x, shape)");
  EXPECT_TRUE(contains(message, "Tile")) << message;
  EXPECT_TRUE(contains(message, "over the limit")) << message;
}

TEST(TensorLimit, StringTensorsCountTowardsTheLimit) {
  std::unique_ptr<Model> model = parseModelText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "main (string[1] s) => (string[] y) <int64[2] shape = {1000000, 1000000}>\n"
      "{ y = Expand(s, shape) }\n",
      "strings.onnxtxt");
  interp::Interpreter interpreter(model->graph());
  interp::Array s(DataType::String, {1});
  std::string message = errorOf([&] { interpreter.run({{"s", s}}); });
  EXPECT_TRUE(contains(message, "tensor of type string and shape [1000000,1000000]")) << message;
  EXPECT_TRUE(contains(message, "over the limit")) << message;
}

TEST(TensorLimit, ReshapeToATrillionElementsIsRefused) {
  // Reshape allocates nothing: the element count must match, so it fails without the limit.
  std::string message = runTrillionElementModel("Reshape(x, shape)");
  EXPECT_TRUE(contains(message, "Reshape")) << message;
}

TEST(TensorLimit, InitializerDeclaringATrillionElementsWithoutDataFails) {
  std::string message = errorOf([] {
    parseModelText(
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "main (float[1] x) => (float[1] y) <float[1000000,1000000] w = {1}> { y = Add(x, w) }",
        "huge-initializer.onnxtxt");
  });
  EXPECT_TRUE(contains(message, "'w'")) << message;
}

TEST(TensorLimit, NpyHeaderDeclaringATrillionElementsFails) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }";
  header.resize(118, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) +
                      '\0' + header + std::string(16, '\0');
  std::string message = errorOf([&] { interp::parseNpy(bytes, "huge.npy"); });
  EXPECT_TRUE(contains(message, "huge.npy")) << message;
}

// Nested If bodies in ONNX text, `levels` deep (names are unique across subgraphs, as ONNX
// requires). Built as prefixes and suffixes, so 10,000 levels take linear time.
std::string nestedIfText(int levels) {
  std::string prefix, suffix;
  for (int level = 0; level < levels; ++level) {
    prefix += fmt::format("z{0} = If (c) <then_branch = g{0} () => (float[1] z{1}) {{ ", level,
                          level + 1);
    suffix = fmt::format(" }}, else_branch = e{0} () => (float[1] w{0}) {{ w{0} = Identity(x) }}>",
                         level) +
             suffix;
  }
  return fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\nmain (bool c, float[1] x) => (float[1] z0)\n"
      "{{\n  {}z{} = Identity(x){}\n}}\n",
      prefix, levels, suffix);
}

TEST(NestingLimit, DeepNestingIsRefusedAndTheLimitCanBeRaised) {
  std::string text = nestedIfText(70);
  std::string message = errorOf([&] { parseModelText(text, "nested.onnxtxt"); });
  EXPECT_TRUE(contains(message, "nest deeper than 64 levels")) << message;
  LoadOptions options;
  options.maxNestingDepth = 100;
  EXPECT_NO_THROW(parseModelText(text, "nested.onnxtxt", options));
}

TEST(NestingLimit, TenThousandLevelsOfTextFailBeforeOnnxsParserRecurses) {
  // ONNX's own parser overflows the stack on this (python3 -c "onnx.parser.parse_model(...)").
  std::string message = errorOf([] { parseModelText(nestedIfText(10000), "deep.onnxtxt"); });
  EXPECT_TRUE(contains(message, "deep.onnxtxt: line 4, column")) << message;
  EXPECT_TRUE(contains(message, "brackets nest deeper than 72 levels")) << message;
}

// GraphProto.node[0].attribute[0].g, `levels` times, in a ModelProto.
std::string nestedMessageBomb(int levels) {
  std::string graph;
  for (int level = 0; level < levels; ++level) {
    graph = lengthDelimited(1, lengthDelimited(5, lengthDelimited(6, graph)));
  }
  return std::string("\x08\x08", 2) + lengthDelimited(7, graph);
}

TEST(ProtobufLimit, NestedMessageBombStopsAtTheRecursionLimit) {
  // 500 levels are 1,500 nested messages.
  std::string bytes = nestedMessageBomb(500);
  std::string message =
      errorOf([&] { loadModelFromBytes(bytes, "bomb.onnx", fs::temp_directory_path()); });
  EXPECT_TRUE(contains(message,
                       "bomb.onnx: the protobuf messages nest deeper than the recursion "
                       "limit (256)"))
      << message;
  LoadOptions options;
  options.protobufRecursionLimit = 1024;
  message =
      errorOf([&] { loadModelFromBytes(bytes, "bomb.onnx", fs::temp_directory_path(), options); });
  EXPECT_TRUE(contains(message, "recursion limit (1024)")) << message;
  message = errorOf([&] {
    loadModelFromBytes(nestedMessageBomb(30000), "deep.onnx", fs::temp_directory_path());
  });
  EXPECT_TRUE(contains(message,
                       "deep.onnx: not an ONNX model: it holds malformed protobuf data, "
                       "or messages nested deeper than 4096 levels"))
      << message;
}

TEST(ProtobufLimit, RepeatedFieldBombFailsCleanly) {
  // A million empty NodeProtos from 2 MB.
  std::string nodes;
  for (int i = 0; i < 1000000; ++i) nodes += std::string("\x0a\x00", 2);
  std::string bytes = std::string("\x08\x08", 2) + lengthDelimited(7, nodes);
  std::string message =
      errorOf([&] { loadModelFromBytes(bytes, "bomb.onnx", fs::temp_directory_path()); });
  EXPECT_TRUE(contains(message, "bomb.onnx: node #0: the node has no op_type")) << message;
}

TEST(FileSizeLimit, LargerModelFilesAreNotRead) {
  TempFolder folder;
  fs::path file = folder.path() / "small.onnxtxt";
  std::ofstream(file) << "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                         "main (float[1] x) => (float[1] y) { y = Relu(x) }\n";
  LoadOptions options;
  options.maxFileBytes = 16;
  std::string message = errorOf([&] { loadModelAnyFormat(file, options); });
  EXPECT_TRUE(contains(message, "over the limit of 16")) << message;
  fs::path binary = folder.path() / "small.onnx";
  saveModel(*loadModelAnyFormat(file), binary);
  message = errorOf([&] { loadModel(binary, options); });
  EXPECT_TRUE(contains(message, "over the limit of 16")) << message;
  options.maxFileBytes = 1 << 20;
  EXPECT_NO_THROW(loadModel(binary, options));
}

class NothingPass : public Pass {
 public:
  NothingPass() : Pass("nothing", "Does nothing") {}
  PassResult run(Model&, PassContext&) override { return {}; }
};

TEST(PipelineLimit, DeepFixpointNestingIsRefused) {
  PassRegistry registry;
  registry.add<NothingPass>();
  auto nested = [](int levels) {
    std::string text;
    for (int i = 0; i < levels; ++i) text += "fixpoint(";
    text += "nothing";
    for (int i = 0; i < levels; ++i) text += ")";
    return text;
  };
  EXPECT_NO_THROW(parsePipeline(nested(32), registry));
  std::string message = errorOf([&] { parsePipeline(nested(100000), registry, "deep.qp"); });
  EXPECT_TRUE(contains(message, "deep.qp:1:289: fixpoint groups nest deeper than 32 levels"))
      << message;
}

// Restores the working folder on scope exit.
class WorkingFolder {
 public:
  explicit WorkingFolder(const fs::path& path) : previous_(fs::current_path()) {
    fs::current_path(path);
  }
  ~WorkingFolder() { fs::current_path(previous_); }

 private:
  fs::path previous_;
};

TEST(Plugins, ABareNameIsNotLoadedFromTheCurrentFolder) {
  TempFolder folder;
  fs::copy_file(fs::path(QOPT_TEST_PLUGIN_DIR) / "test-passes.so",
                folder.path() / "test-passes.so");
  WorkingFolder cwd(folder.path());
  PluginLoader loader;
  PassRegistry registry;
  std::string message = errorOf([&] { loader.loadFile("test-passes.so", registry); });
  EXPECT_TRUE(contains(message, "write './test-passes.so'")) << message;
  message = errorOf([&] { loader.loadSearchPath("test-passes.so", registry); });
  EXPECT_TRUE(contains(message, "write './test-passes.so'")) << message;
  EXPECT_TRUE(registry.empty());
  loader.loadFile("./test-passes.so", registry);
  EXPECT_NE(registry.find("test-countdown"), nullptr);
}

}  // namespace
}  // namespace qopt
