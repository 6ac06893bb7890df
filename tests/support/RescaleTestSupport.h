// Shared by the equalize and smooth tests: small layers, calibration folders, running a
// pipeline with --calib-data, and reading weights back.
#pragma once

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "FoldTestSupport.h"
#include "qopt/interp/Npy.h"

namespace qopt::testing {

/// Runs `pipeline` with `calibData` as --calib-data (empty: none) and checks the IR after.
inline PassOutcome runWithData(Model& model, std::string_view pipeline,
                               const std::string& calibData) {
  return runPipeline(model, pipeline, calibData);
}

/// One map of graph inputs per sample.
using Samples = std::vector<std::map<std::string, interp::Array>>;

/// Max relative output error of `model` after `pipeline` (with `calib` as --calib-data) against
/// before, over `inputs`; the last pass's result goes to `result` where given.
inline double errorAfter(Model& model, std::string_view pipeline, const Samples& inputs,
                         const std::string& calib = {}, PassResult* result = nullptr) {
  std::vector<std::vector<interp::Array>> before;
  for (const auto& in : inputs) before.push_back(runInterpreter(model, in));
  PassOutcome outcome = runWithData(model, pipeline, calib);
  if (result) *result = outcome.result;
  double worst = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    worst = std::max(worst, maxRelativeError(runInterpreter(model, inputs[i]), before[i]));
  }
  return worst;
}

/// A fresh folder under the test temp dir holding one sample folder per entry of `samples`.
inline std::string writeSamples(const std::string& name,
                                const std::vector<std::map<std::string, interp::Array>>& samples) {
  std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / ("qopt_" + name);
  std::filesystem::remove_all(root);
  for (size_t i = 0; i < samples.size(); ++i) {
    std::filesystem::path folder = root / ("s" + std::to_string(100 + i));
    std::filesystem::create_directories(folder);
    for (const auto& [input, array] : samples[i])
      interp::writeNpy(folder / (input + ".npy"), array);
  }
  return root.string();
}

/// errorAfter with `samples` as the calibration data too, written to a folder named `name`.
inline double errorAfterCalibrating(Model& model, std::string_view pipeline, const Samples& samples,
                                    const std::string& name, PassResult* result = nullptr) {
  return errorAfter(model, pipeline, samples, writeSamples(name, samples), result);
}

inline std::vector<double> initializerValues(const Model& model, const std::string& name) {
  const Value* v = model.graph().findValue(name);
  EXPECT_NE(v, nullptr) << name;
  if (!v || !v->initializer()) return {};
  return v->initializer()->toDoubles();
}

/// Appends a node with one output named `name` of type `type`.
inline Value* addNode(Graph& g, const std::string& op, std::vector<Value*> inputs,
                      const std::string& name, ValueType type = {}) {
  Node* node = g.createNode(op, inputs, 1);
  node->output(0)->setName(name);
  if (type.isTensor()) node->output(0)->setType(std::move(type));
  return node->output(0);
}

/// Conv with weight `w` (dims `dims`), optional bias, `group`, `pad` on every side.
inline Value* addConv(Graph& g, Value* x, const std::string& name, std::vector<int64_t> dims,
                      const std::vector<double>& w, const std::vector<double>* bias,
                      int64_t group = 1, int64_t pad = 0) {
  std::vector<Value*> inputs{x, addInitializer(g, name + "_w", DataType::Float, dims, w)};
  if (bias) {
    inputs.push_back(addInitializer(g, name + "_b", DataType::Float, {dims[0]}, *bias));
  }
  Value* y = addNode(g, "Conv", inputs, name);
  Node* conv = y->producer();
  std::vector<int64_t> kernel(dims.begin() + 2, dims.end());
  conv->setAttr(Attribute::makeInts("kernel_shape", kernel));
  if (group != 1) conv->setAttr(Attribute::makeInt("group", group));
  if (pad != 0)
    conv->setAttr(Attribute::makeInts("pads", std::vector<int64_t>(2 * kernel.size(), pad)));
  return y;
}

/// Normal values whose blocks of `block` consecutive elements are scaled by 10^(k mod 5 - 2):
/// channel ranges over four orders of magnitude, what equalization is for.
inline std::vector<double> skewedValues(size_t count, size_t block, std::mt19937& rng) {
  std::vector<double> values = randomValues(count, rng);
  for (size_t i = 0; i < count; ++i)
    values[i] *= std::pow(10.0, static_cast<double>((i / block) % 5) - 2.0);
  return values;
}

inline std::vector<std::map<std::string, interp::Array>> randomSampleSet(const Model& model,
                                                                         size_t count,
                                                                         uint32_t seed) {
  std::vector<std::map<std::string, interp::Array>> samples;
  for (size_t i = 0; i < count; ++i)
    samples.push_back(randomInputs(model, seed + static_cast<uint32_t>(i)));
  return samples;
}

/// SQNR (dB) of `quantized`'s first output against `reference`'s over `samples`.
inline double outputSqnr(const Model& reference, const Model& quantized,
                         const std::vector<std::map<std::string, interp::Array>>& samples) {
  double signal = 0, noise = 0;
  for (const auto& sample : samples) {
    interp::Array want = runInterpreter(reference, sample)[0];
    interp::Array got = runInterpreter(quantized, sample)[0];
    for (int64_t i = 0; i < want.numel(); ++i) {
      signal += want.getDouble(i) * want.getDouble(i);
      noise += (got.getDouble(i) - want.getDouble(i)) * (got.getDouble(i) - want.getDouble(i));
    }
  }
  return 10 * std::log10(signal / noise);
}

}  // namespace qopt::testing
