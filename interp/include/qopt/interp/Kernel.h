// Kernels: one function per (domain, op type, since-version) that computes a node's outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/ir/Graph.h"

namespace qopt::interp {

class Interpreter;
class ThreadPool;

struct KernelContext {
  const Node& node;
  /// Inputs in node order; nullptr for omitted optional inputs.
  std::span<const Array* const> inputs;
  /// One slot per node output, filled by the kernel (absent outputs may be left invalid).
  std::vector<Array>& outputs;
  /// The opset of the node's domain imported by the model.
  int64_t opset;
  /// Threads available to the kernel (1 = run on the calling thread only).
  int threads;
  ThreadPool* pool;
  /// Runs subgraphs (If/Loop/Scan): the interpreter executing this node.
  Interpreter& interpreter;
  /// Values visible to subgraphs: outer-scope lookups go through this.
  const std::function<const Array*(const Value*)>& outerLookup;

  const Array& in(size_t i) const;  // throws qopt::Error naming the node when absent
  const Array* optIn(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  size_t numInputs() const { return inputs.size(); }
  /// Throws qopt::Error naming the node, op, domain and opset.
  [[noreturn]] void fail(const std::string& cause) const;
};

using KernelFn = std::function<void(KernelContext&)>;

/// A row of a kernel group's table: an ai.onnx op (domain "") from `sinceVersion` on.
struct OnnxKernel {
  std::string_view op;
  int sinceVersion;
  KernelFn fn;
};

class KernelRegistry {
 public:
  /// `sinceVersion`: the first opset this kernel implements; the newest one <= the model's opset
  /// is chosen. Domain "" is ai.onnx.
  void add(std::string_view domain, std::string_view op, int sinceVersion, KernelFn fn);
  /// A group's table of ai.onnx kernels.
  void add(std::initializer_list<OnnxKernel> kernels);
  const KernelFn* find(std::string_view domain, std::string_view op, int64_t opset) const;
  bool supports(std::string_view domain, std::string_view op) const;
  std::vector<std::string> opNames() const;

  /// The registry with every built-in kernel.
  static const KernelRegistry& builtin();

 private:
  std::map<std::tuple<std::string, std::string, int>, KernelFn, std::less<>> kernels_;
};

// Each file under interp/ops registers its group of kernels.
void registerElementwiseKernels(KernelRegistry& registry);
void registerUnaryKernels(KernelRegistry& registry);
void registerShapeKernels(KernelRegistry& registry);
void registerReductionKernels(KernelRegistry& registry);
void registerMiscKernels(KernelRegistry& registry);
void registerControlFlowKernels(KernelRegistry& registry);
void registerConvKernels(KernelRegistry& registry);
void registerGemmKernels(KernelRegistry& registry);
void registerPoolKernels(KernelRegistry& registry);
void registerNormalizationKernels(KernelRegistry& registry);
void registerQuantKernels(KernelRegistry& registry);
void registerResizeKernels(KernelRegistry& registry);
void registerRecurrentKernels(KernelRegistry& registry);
void registerSignalKernels(KernelRegistry& registry);
void registerMatMulNBitsKernels(KernelRegistry& registry);  // com.microsoft MatMulNBits
void registerSequenceKernels(KernelRegistry& registry);     // sequence and optional values
void registerTextKernels(KernelRegistry& registry);         // StringNormalizer, TfIdfVectorizer
void registerSetOpsKernels(KernelRegistry& registry);       // Unique
void registerRandomKernels(KernelRegistry& registry);       // seeded, deterministic random ops
void registerSamplingKernels(KernelRegistry& registry);     // GridSample, RoiAlign, MaxUnpool
void registerStatisticsKernels(KernelRegistry& registry);   // LRN, MeanVarianceNormalization, Det

}  // namespace qopt::interp
