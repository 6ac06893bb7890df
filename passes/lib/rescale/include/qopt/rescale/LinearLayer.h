// A Conv, ConvTranspose, Gemm or MatMul with a constant float weight, held in double so that
// passes rescaling its channels (equalize, smooth) can apply several factors and round once to
// the weight's type when they write it back.
//
// Which output and input channel each weight element belongs to:
//   Conv           W[M, C/g, k...]   out = axis 0;  in = group(out) * C/g + axis 1
//   ConvTranspose  W[C, M/g, k...]   in = axis 0;   out = group(in) * M/g + axis 1
//   Gemm           B[K, N] (transB=0) or B[N, K] (transB=1): out = the N axis, in = the K axis
//   MatMul         W[K, N] (constant second input): out = axis 1, in = axis 0
// The bias is held as the layer adds it: Conv's B, Gemm's beta * C (broadcast to rows x N).
// Activations carry their channels on axis 1 for Conv and ConvTranspose, on the last axis for
// Gemm and MatMul.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::equalize {

enum class LayerKind { Conv, ConvTranspose, Gemm, MatMul };

/// The kind of `node` when it is one of the linear ops (default domain), else nullopt.
std::optional<LayerKind> layerKindOf(const Node& node);

class LinearLayer {
 public:
  /// Reads `node`'s weight and bias. nullopt, with the reason in `why`, when the weight is not a
  /// float constant that only `node` reads, the bias is not such a constant, or the shapes do
  /// not fit the op.
  static std::optional<LinearLayer> read(Node& node, std::string& why);

  Node& node() const { return *node_; }
  LayerKind kind() const { return kind_; }
  int64_t outputChannels() const { return outputChannels_; }
  int64_t inputChannels() const { return inputChannels_; }
  /// The activation axis that holds the channels (1, or -1 for the last axis).
  int64_t channelAxis() const {
    return kind_ == LayerKind::Conv || kind_ == LayerKind::ConvTranspose ? 1 : -1;
  }

  std::span<const double> weight() const { return weight_; }
  const std::vector<int64_t>& weightDims() const { return weightDims_; }
  DataType weightType() const { return weightType_; }
  int64_t outputChannelOf(uint64_t index) const;
  int64_t inputChannelOf(uint64_t index) const;

  /// Whether the layer can hold a bias (MatMul cannot).
  bool canHoldBias() const { return kind_ != LayerKind::MatMul; }
  /// The bias as added to the output, rows x outputChannels (rows is 1 except for a Gemm C of
  /// [M, N]); zeros when the layer has none.
  std::span<const double> bias() const { return bias_; }
  int64_t biasRows() const { return biasRows_; }

  /// max |w| over each output channel's elements / each input channel's elements.
  std::vector<double> outputChannelAbsMax() const;
  std::vector<double> inputChannelAbsMax() const;

  /// Output channel c (its weights and bias) times factor[c].
  void scaleOutputChannels(std::span<const double> factor);
  /// The weights reading input channel c times factor[c].
  void scaleInputChannels(std::span<const double> factor);
  /// Adds `delta` (one per output channel) to the bias, creating one when there is none.
  /// Only for layers that canHoldBias().
  void addToBias(std::span<const double> delta);
  /// What the layer adds to output channel o when every input of channel i is shift[i]:
  /// sum over the elements of o of w * shift[in]; exact for Conv only when every output sees
  /// every kernel tap (no padding), which callers check. Gemm's alpha is applied.
  std::vector<double> outputForConstantInput(std::span<const double> shift) const;

  /// Writes weight and bias back into the graph, each rounded once to its type.
  void writeBack();

 private:
  using ChannelOf = int64_t (LinearLayer::*)(uint64_t) const;
  /// max |w| over the elements of each of `channels` channels, as `channelOf` assigns them.
  std::vector<double> channelAbsMax(int64_t channels, ChannelOf channelOf) const;

  Node* node_ = nullptr;
  LayerKind kind_ = LayerKind::Conv;
  Value* weightValue_ = nullptr;
  DataType weightType_ = DataType::Float;
  std::vector<int64_t> weightDims_;
  std::vector<double> weight_;
  int64_t outputChannels_ = 0;
  int64_t inputChannels_ = 0;
  int64_t groups_ = 1;
  uint64_t kernelSize_ = 1;  // Conv, ConvTranspose: elements per (axis 0, axis 1) pair
  bool transB_ = false;
  std::vector<double> bias_;
  int64_t biasRows_ = 1;
  DataType biasType_ = DataType::Float;
  bool hasBias_ = false;
  bool weightChanged_ = false;
  bool biasChanged_ = false;
};

/// Reads each node's LinearLayer once and keeps it, and why a node has none, so that a layer
/// two passes of a search reach is one object (its rescalings add up).
class LinearLayerCache {
 public:
  /// The node's layer, or nullptr with `why` set.
  LinearLayer* get(Node* node, std::string& why);
  /// Every layer read, in the order first read.
  const std::vector<std::unique_ptr<LinearLayer>>& layers() const { return owned_; }

 private:
  std::map<Node*, LinearLayer*> byNode_;
  std::map<Node*, std::string> unreadable_;
  std::vector<std::unique_ptr<LinearLayer>> owned_;
};

}  // namespace qopt::equalize
