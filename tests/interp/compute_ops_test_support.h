// Test support for the compute-heavy kernel tests (conv, gemm, pool, normalization, quant,
// resize): a one-node model built in memory and run through the interpreter, plus array helpers
// beyond InterpTestUtil.h's.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "InterpTestUtil.h"
#include "qopt/interp/Array.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Attribute.h"
#include "qopt/ir/Graph.h"

namespace qopt::interp::testing {

template <class T>
Array randomIntegers(DataType type, Shape shape, uint32_t seed, int lo, int hi) {
  Array a(type, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<T>()[i] = static_cast<T>(dist(rng));
  return a;
}

template <class T>
std::vector<T> values(const Array& a) {
  return std::vector<T>(a.data<T>(), a.data<T>() + a.numel());
}

/// One node with graph inputs for every given input, run by the interpreter.
class SingleOp {
 public:
  explicit SingleOp(std::string op, int64_t opset = 21, std::string domain = "")
      : op_(std::move(op)), domain_(std::move(domain)), opset_(opset) {}

  SingleOp& input(Array a) {
    inputs_.push_back(std::move(a));
    return *this;
  }
  /// An omitted optional input ("").
  SingleOp& absent() {
    inputs_.emplace_back();
    return *this;
  }
  SingleOp& attr(Attribute a) {
    attrs_.push_back(std::move(a));
    return *this;
  }
  SingleOp& attr(const std::string& name, int64_t v) { return attr(Attribute::makeInt(name, v)); }
  SingleOp& attr(const std::string& name, float v) { return attr(Attribute::makeFloat(name, v)); }
  SingleOp& attr(const std::string& name, const char* v) {
    return attr(Attribute::makeString(name, v));
  }
  SingleOp& attr(const std::string& name, std::vector<int64_t> v) {
    return attr(Attribute::makeInts(name, std::move(v)));
  }
  SingleOp& attrFloats(const std::string& name, std::vector<float> v) {
    return attr(Attribute::makeFloats(name, std::move(v)));
  }
  /// Node outputs: true = used (a graph output), false = omitted ("").
  SingleOp& outputs(std::vector<bool> used) {
    outputs_ = std::move(used);
    return *this;
  }

  std::vector<Array> run(int threads = 1) {
    model_ = std::make_unique<Model>();
    model_->setOpsetVersion(domain_, opset_);
    if (!domain_.empty()) model_->setOpsetVersion("", 21);
    Graph& g = model_->graph();
    Node* node = g.createEmptyNode(op_, domain_);
    std::map<std::string, Array> feeds;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!inputs_[i].valid()) {
        node->addInput(nullptr);
        continue;
      }
      std::string name = "in" + std::to_string(i);
      Value* v = g.addInput(name, ValueType::tensor(inputs_[i].dataType(), inputs_[i].shape()));
      node->addInput(v);
      feeds.emplace(name, inputs_[i]);
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      Value* out =
          node->addOutput(outputs_[i] ? "out" + std::to_string(i) : std::string(), !outputs_[i]);
      if (outputs_[i]) g.addOutput(out);
    }
    for (Attribute& a : attrs_) node->setAttr(std::move(a));
    attrs_.clear();
    RunOptions options;
    options.threads = threads;
    Interpreter interpreter(g, options);
    return interpreter.run(feeds);
  }

  Array run1(int threads = 1) {
    std::vector<Array> r = run(threads);
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? Array() : r[0];
  }

 private:
  std::string op_;
  std::string domain_;
  int64_t opset_;
  std::vector<Array> inputs_;
  std::vector<Attribute> attrs_;
  std::vector<bool> outputs_{true};
  std::unique_ptr<Model> model_;
};

/// Max |a - e| / (|e| + mean |e|): relative error, with the tensor's mean magnitude keeping
/// near-zero references (sums that cancel) from dominating.
inline double maxRelativeError(const Array& actual, const std::vector<double>& expected) {
  double mean = 0;
  for (double e : expected) mean += std::fabs(e);
  mean = expected.empty() ? 0 : mean / static_cast<double>(expected.size());
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double a = actual.getDouble(static_cast<int64_t>(i));
    worst = std::max(worst, std::fabs(a - expected[i]) / (std::fabs(expected[i]) + mean + 1e-30));
  }
  return worst;
}

#define QOPT_EXPECT_CLOSE(actual, expected, tol)                                           \
  do {                                                                                     \
    const auto& qoptActual = (actual);                                                     \
    const auto& qoptExpected = (expected);                                                 \
    ASSERT_EQ(qoptActual.numel(), static_cast<int64_t>(qoptExpected.size()));              \
    EXPECT_LE(::qopt::interp::testing::maxRelativeError(qoptActual, qoptExpected), (tol)); \
  } while (0)

}  // namespace qopt::interp::testing
