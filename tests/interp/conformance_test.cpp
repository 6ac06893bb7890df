// Runs ONNX's backend node tests (ONNX 1.12's test data) whose ops all have built-in kernels and
// compares with the stored outputs at the backend runner's tolerances (rtol 1e-3, atol 1e-7;
// exact for integers, bools and strings). Prints passed/total. Tests known not to pass are
// listed in kExceptions with the reason.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "qopt/interp/Interpreter.h"
#include "qopt/interp/Kernel.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt::interp {
namespace {

namespace fs = std::filesystem;

// Node tests whose ops have kernels but that are not expected to pass, and why.
const std::map<std::string, std::string> kExceptions = {
    {"test_identity_sequence", "sequence values are not supported by the interpreter"},
    {"test_identity_opt", "optional values are not supported by the interpreter"},
    {"test_if_opt", "optional values are not supported by the interpreter"},
    {"test_loop16_seq_none", "optional/sequence values are not supported by the interpreter"},
    {"test_cast_FLOAT_to_BFLOAT16",
     "ONNX 1.12 made the expected bfloat16 values by truncation; qopt rounds to nearest even "
     "as the ONNX specification and ONNX Runtime do"},
    {"test_castlike_BFLOAT16_to_FLOAT",
     "the test data feeds 'like' with shape [1] where the model declares rank 2; the "
     "interpreter rejects inputs that contradict the declared shape"},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded", "as test_castlike_BFLOAT16_to_FLOAT"},
    {"test_castlike_FLOAT_to_BFLOAT16", "as test_castlike_BFLOAT16_to_FLOAT"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", "as test_castlike_BFLOAT16_to_FLOAT"},
    {"test_batchnorm_epsilon_training_mode",
     "BatchNormalization runs for inference only (training_mode=1 is a clear error)"},
    {"test_batchnorm_example_training_mode",
     "BatchNormalization runs for inference only (training_mode=1 is a clear error)"},
    {"test_training_dropout", "training-mode Dropout is random"},
    {"test_training_dropout_default", "training-mode Dropout is random"},
    {"test_training_dropout_default_mask", "training-mode Dropout is random"},
    {"test_training_dropout_mask", "training-mode Dropout is random"},
};

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

bool allOpsSupported(const Graph& graph, std::string& missing) {
  bool ok = true;
  graph.walk([&](const Node* node) {
    if (ok && !KernelRegistry::builtin().supports(node->domain(), node->opType())) {
      missing = node->domain().empty() ? node->opType() : node->domain() + "::" + node->opType();
      ok = false;
    }
  });
  return ok;
}

/// Empty when equal within tolerance, else a description of the first mismatch.
std::string compareArrays(const Array& actual, const Array& expected) {
  if (actual.dataType() != expected.dataType()) {
    return fmt::format("type {} but expected {}", dataTypeName(actual.dataType()),
                       dataTypeName(expected.dataType()));
  }
  if (actual.shape() != expected.shape()) {
    return fmt::format("shape [{}] but expected [{}]", fmt::join(actual.shape(), ","),
                       fmt::join(expected.shape(), ","));
  }
  if (actual.dataType() == DataType::String) {
    for (int64_t i = 0; i < actual.numel(); ++i) {
      const std::string& a = actual.strings()[static_cast<size_t>(i)];
      const std::string& e = expected.strings()[static_cast<size_t>(i)];
      if (a != e) return fmt::format("element {} is '{}' but expected '{}'", i, a, e);
    }
    return {};
  }
  bool exact = !isFloatingPoint(actual.dataType());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.getDouble(i);
    double e = expected.getDouble(i);
    if (exact) {
      if (actual.getInt64(i) != expected.getInt64(i)) {
        return fmt::format("element {} is {} but expected {}", i, actual.getInt64(i),
                           expected.getInt64(i));
      }
      continue;
    }
    if (std::isnan(a) && std::isnan(e)) continue;
    if (a == e) continue;  // infinities
    if (!(std::fabs(a - e) <= kAtol + kRtol * std::fabs(e))) {
      return fmt::format("element {} is {} but expected {}", i, a, e);
    }
  }
  return {};
}

/// Reads a test data tensor. ONNX 1.12 stored bfloat16 test data as UINT16 tensors holding the
/// bfloat16 bits; those are read back as the bfloat16 the model declares.
Array loadData(const fs::path& file, DataType declared) {
  Tensor tensor = loadTensorProtoFile(file);
  if (declared == DataType::BFloat16 && tensor.dataType() == DataType::UInt16) {
    tensor.setDataType(DataType::BFloat16);
  }
  return Array::fromTensor(tensor);
}

/// Runs every data set of one node test; empty on success, else the reason.
std::string runNodeTest(const fs::path& dir, const Model& model) {
  const Graph& graph = model.graph();
  std::vector<const Value*> inputs;
  for (const Value* v : graph.inputs()) {
    if (!v->isInitializer()) inputs.push_back(v);
  }
  Interpreter interpreter(graph);
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(entry.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test data sets";
  for (const fs::path& set : sets) {
    std::map<std::string, Array> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      fs::path file = set / fmt::format("input_{}.pb", i);
      if (!fs::exists(file)) continue;
      feeds.emplace(inputs[i]->name(), loadData(file, inputs[i]->type().elemType));
    }
    std::vector<Array> results = interpreter.run(feeds);
    for (size_t i = 0; i < results.size(); ++i) {
      fs::path file = set / fmt::format("output_{}.pb", i);
      if (!fs::exists(file)) continue;
      Array expected = loadData(file, graph.outputs()[i]->type().elemType);
      std::string diff = compareArrays(results[i], expected);
      if (!diff.empty()) {
        return fmt::format("{} output {} ('{}'): {}", set.filename().string(), i,
                           graph.outputs()[i]->name(), diff);
      }
    }
  }
  return {};
}

TEST(OnnxNodeConformance, SupportedOpsMatchStoredOutputs) {
  fs::path root = fs::path(QOPT_TESTDATA_DIR) / "node";
  if (!fs::exists(root)) GTEST_SKIP() << "ONNX test data not installed at " << root;
  const char* filter = std::getenv("QOPT_CONFORMANCE_FILTER");  // substring, for debugging
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());

  int total = 0, supported = 0, passed = 0, excepted = 0;
  std::map<std::string, int> unsupportedOps;
  for (const fs::path& dir : dirs) {
    std::string name = dir.filename().string();
    if (filter && name.find(filter) == std::string::npos) continue;
    ++total;
    std::unique_ptr<Model> model;
    try {
      model = loadModel(dir / "model.onnx");
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": cannot load the model: " << e.what();
      continue;
    }
    std::string missing;
    if (!allOpsSupported(model->graph(), missing)) {
      ++unsupportedOps[missing];
      continue;
    }
    if (kExceptions.contains(name)) {
      ++excepted;
      continue;
    }
    ++supported;
    std::string failure;
    try {
      failure = runNodeTest(dir, *model);
    } catch (const Error& e) {
      failure = e.what();
    }
    if (failure.empty()) {
      ++passed;
    } else {
      ADD_FAILURE() << name << ": " << failure;
    }
  }
  std::string skippedOps;
  for (const auto& [op, count] : unsupportedOps) skippedOps += fmt::format(" {}({})", op, count);
  std::printf(
      "ONNX node conformance: passed %d / %d supported tests (%d tests in all; %d listed "
      "exceptions; skipped for ops without kernels:%s)\n",
      passed, supported, total, excepted, skippedOps.c_str());
  EXPECT_EQ(passed, supported);
}

}  // namespace
}  // namespace qopt::interp
