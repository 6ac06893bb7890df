// The MatMul and Gemm nodes whose weight quantize-weights can quantize: a constant 2-D float
// matrix [K, N] (Gemm with transB=1 stores it as [N, K]) with K and N at least 16, as NVIDIA's
// Model Optimizer leaves smaller GEMMs alone (TensorRT gains nothing on them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qopt/dense/BlockQuant.h"
#include "qopt/ir/Graph.h"

namespace qopt::wq {

inline constexpr int64_t kMinGemmDim = 16;

struct WeightSite {
  Node* node = nullptr;         // MatMul or Gemm
  size_t weightIndex = 1;       // the input holding the weight
  Value* activation = nullptr;  // input 0
  bool transposed = false;      // stored N x K (Gemm transB=1)
  DataType floatType = DataType::Float;
  Matrix weight;  // K x N, as the product uses it
  std::vector<int64_t> storedDims;

  int64_t k() const { return weight.rows; }
  int64_t n() const { return weight.cols; }
};

/// The site `node` is, or nullopt with the reason in `why` (empty when the node is no MatMul or
/// Gemm at all, so nothing needs saying).
std::optional<WeightSite> matchWeightSite(Node* node, std::string& why);

}  // namespace qopt::wq
