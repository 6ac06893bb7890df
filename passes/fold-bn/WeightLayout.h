// The linear ops BatchNormalization folds into, and where the output channel of each of their
// weight elements is:
//   Conv           W[M, C/group, k...]          channel = axis 0
//   ConvTranspose  W[C, M/group, k...]          channel = group of the input channel * M/group
//                                                         + axis 1
//   Gemm           B[K, N] (transB=0) or B[N, K] (transB=1)   channel = the N axis
//   MatMul         W[K, N] (2-D input)          channel = axis 1
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "Refusal.h"
#include "qopt/ir/Graph.h"
#include "qopt/rescale/LinearLayer.h"

namespace qopt::foldbn {

// BatchNormalization folds into the linear ops the rescaling library reads (layerKindOf's
// nullopt: it cannot fold into the node).
using equalize::LayerKind;
using equalize::layerKindOf;

class WeightLayout {
 public:
  /// Checks `dims` against the op (rank, group divisibility) and computes the layout.
  static std::optional<WeightLayout> of(const Node& linear, LayerKind kind,
                                        const std::vector<int64_t>& dims, Refusal& refusal);

  int64_t outputChannels() const { return outputChannels_; }
  /// The output channel that weight element `index` (row-major) contributes to.
  int64_t channelOf(uint64_t index) const {
    uint64_t position = (index / stride_) % static_cast<uint64_t>(axisSize_);
    if (groups_ == 1) return static_cast<int64_t>(position);
    uint64_t inputChannel = index / (stride_ * static_cast<uint64_t>(axisSize_));
    uint64_t group = inputChannel / static_cast<uint64_t>(inputsPerGroup_);
    return static_cast<int64_t>(group * static_cast<uint64_t>(axisSize_) + position);
  }
  /// The weight axis whose index is the output channel, one to one (what per-channel
  /// quantization must use); nullopt for a grouped ConvTranspose, where no axis is.
  std::optional<int64_t> channelAxis() const {
    return groups_ == 1 ? std::optional<int64_t>(axis_) : std::nullopt;
  }

 private:
  int64_t axis_ = 0;
  int64_t axisSize_ = 1;
  uint64_t stride_ = 1;  // elements between consecutive indices of `axis_`
  int64_t groups_ = 1;   // > 1 only for grouped ConvTranspose
  int64_t inputsPerGroup_ = 1;
  int64_t outputChannels_ = 0;
};

}  // namespace qopt::foldbn
