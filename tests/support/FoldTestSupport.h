// Shared by the fold-bn and fold-constants tests: building small models, running a pipeline of
// the built-in passes (PipelineTestSupport.h), and comparing interpreter outputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "PipelineTestSupport.h"
#include "qopt/interp/Interpreter.h"

namespace qopt::testing {

inline Value* addInitializer(Graph& g, const std::string& name, DataType type,
                             std::vector<int64_t> dims, const std::vector<double>& values) {
  auto tensor = std::make_shared<Tensor>(Tensor::fromDoubles(type, std::move(dims), values));
  tensor->setName(name);
  return g.addInitializer(std::move(tensor));
}

inline std::vector<double> randomValues(size_t count, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 0.5);
  std::vector<double> values(count);
  for (double& v : values) v = normal(rng);
  return values;
}

inline int64_t countOps(const Model& model, std::string_view op) {
  int64_t count = 0;
  model.graph().walk([&](Node* node) { count += node->opType() == op ? 1 : 0; });
  return count;
}

/// Seeded normal inputs for every graph input (static shapes; the dims give the size).
inline std::map<std::string, interp::Array> randomInputs(const Model& model, uint32_t seed) {
  std::mt19937 rng(seed);
  std::map<std::string, interp::Array> inputs;
  for (const Value* input : model.graph().inputs()) {
    std::vector<int64_t> dims = input->type().staticShape().value();
    uint64_t count = 1;
    for (int64_t d : dims) count *= static_cast<uint64_t>(d);
    Tensor t = Tensor::fromDoubles(input->type().elemType, dims, randomValues(count, rng));
    inputs[input->name()] = interp::Array::fromTensor(t);
  }
  return inputs;
}

inline std::vector<interp::Array> runInterpreter(const Model& model,
                                                 const std::map<std::string, interp::Array>& in) {
  interp::Interpreter interpreter(model.graph());
  return interpreter.run(in);
}

/// Over all outputs: max|after - before| / max(max|before|, smallest normal float).
inline double maxRelativeError(const std::vector<interp::Array>& after,
                               const std::vector<interp::Array>& before) {
  EXPECT_EQ(after.size(), before.size());
  double worst = 0;
  for (size_t o = 0; o < std::min(after.size(), before.size()); ++o) {
    EXPECT_EQ(after[o].shape(), before[o].shape());
    if (after[o].shape() != before[o].shape()) return std::numeric_limits<double>::infinity();
    double diff = 0, scale = std::numeric_limits<float>::min();
    for (int64_t i = 0; i < before[o].numel(); ++i) {
      diff = std::max(diff, std::fabs(after[o].getDouble(i) - before[o].getDouble(i)));
      scale = std::max(scale, std::fabs(before[o].getDouble(i)));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace qopt::testing
