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

/// A fixture with an empty folder of its own per test (`dir_`), removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

/// The node whose first output is `name`.
inline Node* producerOf(const Graph& graph, std::string_view name) {
  Value* v = graph.findValue(name);
  return v ? v->producer() : nullptr;
}

}  // namespace qopt::analysis::testing
