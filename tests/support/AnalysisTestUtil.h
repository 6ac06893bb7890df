// Helpers for the analysis tests: models from ONNX text, arrays from values.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/TextFormat.h"

namespace qopt::analysis::testing {

inline std::unique_ptr<Model> parse(std::string_view text) {
  return parseModelText(text, "test");
}

inline interp::Array floats(interp::Shape shape, const std::vector<float>& values) {
  interp::Array a(DataType::Float, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(a.numel()), values.size());
  std::copy(values.begin(), values.end(), a.data<float>());
  return a;
}

/// A fixture with an empty folder of its own per test (`dir_`, named after the test), removed
/// afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("qopt_") + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

/// How many times `what` occurs in `text` (overlaps counted).
inline size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

/// y = Relu(x), x and y float[1,2]: a model with one input.
inline constexpr const char* kReluModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2] x) => (float[1,2] y) { y = Relu(x) }
)";

/// The node whose first output is `name`.
inline Node* producerOf(const Graph& graph, std::string_view name) {
  Value* v = graph.findValue(name);
  return v ? v->producer() : nullptr;
}

}  // namespace qopt::analysis::testing
