// Helpers for interpreter tests: build small graphs by hand and run them.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"

namespace qopt::interp::testing {

/// Same type, shape and bytes.
inline bool bitwiseEqual(const Array& a, const Array& b) {
  return a.dataType() == b.dataType() && a.shape() == b.shape() &&
         std::memcmp(a.bytes(), b.bytes(), a.byteSize()) == 0;
}

// One graph run fused and unfused on the same inputs.
struct BothWays {
  std::vector<Array> fused, unfused;
  uint64_t fusedPeak = 0, unfusedPeak = 0;

  // Every output bitwise the same.
  bool same() const {
    if (fused.size() != unfused.size()) return false;
    for (size_t i = 0; i < fused.size(); ++i) {
      if (!bitwiseEqual(fused[i], unfused[i])) return false;
    }
    return true;
  }
};

inline BothWays runBothWays(const Graph& graph, const std::map<std::string, Array>& feeds,
                            int threads = 1) {
  BothWays result;
  for (bool fuse : {true, false}) {
    RunOptions options;
    options.fuse = fuse;
    options.threads = threads;
    Interpreter interpreter(graph, options);
    (fuse ? result.fused : result.unfused) = interpreter.run(feeds);
    (fuse ? result.fusedPeak : result.unfusedPeak) = interpreter.lastPeakBytes();
  }
  return result;
}

/// Keeps every tensor a run reports for the values in `values`, by name.
class Recorder : public CaptureObserver {
 public:
  std::unordered_set<const Value*> values;
  std::map<std::string, Array> seen;
  const std::unordered_set<const Value*>& wanted() const override { return values; }
  void captured(const Value& value, const Array& array) override { seen[value.name()] = array; }
};

template <class T>
Array makeArray(DataType type, Shape shape, const std::vector<T>& values) {
  Array a(type, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(a.numel()), values.size());
  std::copy(values.begin(), values.end(), a.data<T>());
  return a;
}

inline Array floats(Shape shape, const std::vector<float>& values) {
  return makeArray(DataType::Float, std::move(shape), values);
}
/// Uniform values in [lo, hi) from a fixed seed.
inline Array randomFloats(Shape shape, uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  Array a(DataType::Float, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = dist(rng);
  return a;
}
inline Array int64s(Shape shape, const std::vector<int64_t>& values) {
  return makeArray(DataType::Int64, std::move(shape), values);
}
inline Array int32s(Shape shape, const std::vector<int32_t>& values) {
  return makeArray(DataType::Int32, std::move(shape), values);
}
inline Array bools(Shape shape, const std::vector<bool>& values) {
  Array a(DataType::Bool, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) a.data<bool>()[i] = values[i];
  return a;
}
inline Array halves(Shape shape, const std::vector<float>& values) {
  Array a(DataType::Float16, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) a.data<uint16_t>()[i] = floatToHalfBits(values[i]);
  return a;
}

/// 0, 1, 2, ... in a float array of `shape`.
inline Array iota(Shape shape) {
  Array a(DataType::Float, shape);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = static_cast<float>(i);
  return a;
}

/// The message of the qopt::Error `fn` throws, or "no error".
inline std::string errorMessage(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

inline std::vector<double> doubles(const Array& a) {
  std::vector<double> out;
  for (int64_t i = 0; i < a.numel(); ++i) out.push_back(a.getDouble(i));
  return out;
}
inline std::vector<int64_t> ints(const Array& a) {
  return a.toInt64Vector();
}

/// A model with one graph, built node by node.
class GraphBuilder {
 public:
  explicit GraphBuilder(int64_t opset = 17) { model_.setOpsetVersion("", opset); }
  Model& model() { return model_; }
  Graph& graph() { return model_.graph(); }

  Value* input(const std::string& name, DataType type = DataType::Undefined) {
    return graph().addInput(name,
                            type == DataType::Undefined ? ValueType{} : ValueType::tensor(type));
  }
  Value* input(const std::string& name, DataType type, const std::vector<int64_t>& dims) {
    return graph().addInput(name, ValueType::tensor(type, dims));
  }
  Value* constant(const std::string& name, const Array& value) {
    auto tensor = std::make_shared<Tensor>(value.toTensor(name));
    return graph().addInitializer(tensor);
  }
  Node* node(const std::string& op, std::vector<Value*> inputs, size_t outputs = 1,
             Graph* into = nullptr) {
    Graph& g = into ? *into : graph();
    return g.createNode(op, std::span<Value* const>(inputs.data(), inputs.size()), outputs);
  }
  void output(Value* v) { graph().addOutput(v); }

 private:
  Model model_;
};

/// Runs a single node whose inputs are graph inputs (invalid arrays stand for omitted
/// optional inputs); `configure` sets attributes.
inline std::vector<Array> runOp(const std::string& op, const std::vector<Array>& inputs,
                                const std::function<void(Node&)>& configure = {},
                                int64_t opset = 17, size_t numOutputs = 1, int threads = 1) {
  GraphBuilder b(opset);
  std::vector<Value*> values;
  std::map<std::string, Array> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      values.push_back(nullptr);
      continue;
    }
    std::string name = "in" + std::to_string(i);
    values.push_back(b.input(name));
    feeds[name] = inputs[i];
  }
  Node* n = b.node(op, values, numOutputs);
  if (configure) configure(*n);
  for (Value* out : n->outputs()) b.output(out);
  RunOptions options;
  options.threads = threads;
  Interpreter interpreter(b.graph(), options);
  return interpreter.run(feeds);
}

inline Array runOne(const std::string& op, const std::vector<Array>& inputs,
                    const std::function<void(Node&)>& configure = {}, int64_t opset = 17) {
  return runOp(op, inputs, configure, opset).at(0);
}

inline std::function<void(Node&)> attrs(std::function<void(Node&)> fn) {
  return fn;
}

}  // namespace qopt::interp::testing
