// Where insert-qdq puts Q/DQ, following what TensorRT fuses (docs/tensorrt.md):
//   - Conv, ConvTranspose, Gemm, MatMul: every input; constant weights per channel, activations
//     per tensor (MatMul of two activations quantizes both per tensor); their outputs never;
//   - residual Add: the skip input, i.e. the input not produced by a quantized Conv, Gemm or
//     MatMul (optionally through a bias Add) whose output could fuse into the Add;
//   - AveragePool, GlobalAveragePool: their input;
//   - Concat and everything else: nothing of its own (its consumers quantize);
//   - excluded nodes (by name or op type) stay float; graph outputs are never quantized;
//   - transformers (TransformerPatterns.h): the Q/K/V/output projections quantize as any MatMul
//     or Gemm with a constant weight, both inputs of the two attention MatMuls per tensor (as
//     TensorRT's MHA fusion expects; exclude-mha keeps those two float), and nothing inside the
//     Softmax chain (scale, mask, Softmax), a LayerNorm or a GELU, which TensorRT runs in float;
//   - for TensorRT, layers where it gains nothing (SmallLayers.h: Conv with fewer than 16 input
//     or output channels, Gemm/MatMul with K or N below 16, FP8 Convs with large filters) stay
//     float, so that the INT8 model is never slower than FP16 there.
// The plan is computed on the unchanged model, so calibration runs on exactly the tensors that
// get Q/DQ, before anything is inserted.
#pragma once

#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/Target.h"
#include "qopt/qdq/Sites.h"
#include "qopt/qdq/SmallLayers.h"

namespace qopt::qdq {

struct Placement {
  std::vector<ActivationSite> activations;  // in first-use order
  std::vector<WeightSite> weights;
  std::vector<BiasSite> biases;
  std::vector<Node*> quantizedNodes;
  std::vector<Node*> excludedNodes;
  /// The compute layers (Conv, ConvTranspose, Gemm, MatMul) left float, each with its reason in
  /// a few words (the remarks say more).
  std::vector<std::pair<const Node*, std::string>> floatLayers;
};

struct PlacementOptions {
  Target target;
  // Matched against the whole node name (an unnamed node's first output name).
  std::optional<std::regex> excludeNodes;
  std::set<std::string> excludeOps;
  bool quantizeBias = false;
  // FP8 (float8 E4M3FN): TensorRT's FP8 placement, inputs of Conv, Gemm, MatMul and residual
  // Adds (pooling and ConvTranspose stay float).
  bool fp8 = false;
  // The two MatMuls of each attention block stay float (the projections are still quantized).
  bool excludeMha = false;
  // TensorRT only: Conv, Gemm and MatMul with fewer channels (K, N) than this stay float; 0
  // disables the rule (the FP8 filter rule still applies).
  int64_t minChannels = kDefaultMinChannels;
};

/// The ops whose inputs insert-qdq quantizes (the residual Add included).
bool isPlacementCandidate(const Node& node);

/// Plans the Q/DQ of `graph` and of the If/Loop/Scan bodies inside it, each by the same rules
/// (a site's uses all lie in one graph); remarks say why inputs or nodes were left alone.
Placement planPlacement(Graph& graph, const PlacementOptions& options, PassResult& result);

/// The per-channel axis of a constant weight at input `input` of `node` for `target`, or -1
/// for per tensor.
int64_t weightAxis(const Node& node, size_t input, int64_t rank, const Target& target);

}  // namespace qopt::qdq
