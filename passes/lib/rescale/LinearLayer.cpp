#include "qopt/rescale/LinearLayer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "qopt/constants/ConstantValue.h"

namespace qopt::equalize {
namespace {

// Whether `node` (at `index`) is the only reader of the values of `value`; readers of only its
// shape and type do not count, since rescaling keeps both.
bool readOnlyBy(const Value* value, const Node* node, uint32_t index) {
  if (value->isGraphOutput()) return false;
  bool found = false;
  for (const Use& use : value->uses()) {
    if (use.user == node && use.index == index) {
      found = true;
    } else if (!fold::readsOnlyShapeAndType(use)) {
      return false;
    }
  }
  return found;
}

}  // namespace

std::optional<LayerKind> layerKindOf(const Node& node) {
  if (!node.domain().empty()) return std::nullopt;
  if (node.opType() == "Conv") return LayerKind::Conv;
  if (node.opType() == "ConvTranspose") return LayerKind::ConvTranspose;
  if (node.opType() == "Gemm") return LayerKind::Gemm;
  if (node.opType() == "MatMul") return LayerKind::MatMul;
  return std::nullopt;
}

std::optional<LinearLayer> LinearLayer::read(Node& node, std::string& why) {
  std::optional<LayerKind> kind = layerKindOf(node);
  if (!kind) {
    why = fmt::format("{} is not a Conv, ConvTranspose, Gemm or MatMul", node.describe());
    return std::nullopt;
  }
  LinearLayer layer;
  layer.node_ = &node;
  layer.kind_ = *kind;
  Value* w = node.input(1);
  std::optional<Tensor> weight = w ? fold::constantOf(w) : std::nullopt;
  if (!weight || !isFloatingPoint(weight->dataType())) {
    why = fmt::format("the weight of {} is not a float constant", node.describe());
    return std::nullopt;
  }
  if (!readOnlyBy(w, &node, 1)) {
    why = fmt::format("the weight '{}' of {} is also read elsewhere", w->name(), node.describe());
    return std::nullopt;
  }
  layer.weightValue_ = w;
  layer.weightType_ = weight->dataType();
  layer.weightDims_ = weight->dims();
  layer.weight_ = weight->toDoubles();
  const std::vector<int64_t>& dims = layer.weightDims_;
  for (int64_t d : dims) {
    if (d <= 0) {
      why = fmt::format("the weight of {} has an empty dimension", node.describe());
      return std::nullopt;
    }
  }
  switch (*kind) {
    case LayerKind::Conv:
    case LayerKind::ConvTranspose: {
      layer.groups_ = node.attrInt("group", 1);
      if (dims.size() < 3 || layer.groups_ < 1) {
        why = fmt::format("{} has a weight of rank {} and group {}", node.describe(), dims.size(),
                          layer.groups_);
        return std::nullopt;
      }
      for (size_t i = 2; i < dims.size(); ++i) layer.kernelSize_ *= static_cast<uint64_t>(dims[i]);
      if (dims[0] % layer.groups_ != 0) {
        why = fmt::format("the weight of {} has {} rows for {} groups", node.describe(), dims[0],
                          layer.groups_);
        return std::nullopt;
      }
      if (*kind == LayerKind::Conv) {
        layer.outputChannels_ = dims[0];
        layer.inputChannels_ = dims[1] * layer.groups_;
      } else {
        layer.inputChannels_ = dims[0];
        layer.outputChannels_ = dims[1] * layer.groups_;
      }
      break;
    }
    case LayerKind::Gemm:
    case LayerKind::MatMul:
      if (dims.size() != 2) {
        why = fmt::format("the weight of {} has rank {}, not 2", node.describe(), dims.size());
        return std::nullopt;
      }
      layer.transB_ = *kind == LayerKind::Gemm && node.attrInt("transB", 0) != 0;
      layer.outputChannels_ = layer.transB_ ? dims[0] : dims[1];
      layer.inputChannels_ = layer.transB_ ? dims[1] : dims[0];
      break;
  }

  const int64_t n = layer.outputChannels_;
  layer.bias_.assign(static_cast<size_t>(n), 0.0);
  layer.biasType_ = layer.weightType_;
  Value* b = *kind == LayerKind::MatMul ? nullptr : node.input(2);
  if (b == nullptr) return layer;
  std::optional<Tensor> bias = fold::constantThroughCasts(b);
  if (!bias || !isFloatingPoint(bias->dataType())) {
    why = fmt::format("the bias '{}' of {} is not a float constant", b->name(), node.describe());
    return std::nullopt;
  }
  layer.hasBias_ = true;
  layer.biasType_ = bias->dataType();
  std::vector<double> values = bias->toDoubles();
  const std::vector<int64_t>& bd = bias->dims();
  if (*kind != LayerKind::Gemm) {
    if (values.size() != static_cast<size_t>(n)) {
      why = fmt::format("the bias '{}' of {} has {} values for {} channels", b->name(),
                        node.describe(), values.size(), n);
      return std::nullopt;
    }
    layer.bias_ = std::move(values);
    return layer;
  }
  // Gemm: the layer adds beta * C, C broadcast to [M, N]; held as rows x N.
  if (bd.size() > 2) {
    why = fmt::format("the C input of {} has rank {}", node.describe(), bd.size());
    return std::nullopt;
  }
  int64_t rows = bd.size() == 2 ? bd[0] : 1;
  int64_t cols = bd.empty() ? 1 : bd.back();
  if (cols != 1 && cols != n) {
    why = fmt::format("the C input of {} has {} columns for {} channels", node.describe(), cols, n);
    return std::nullopt;
  }
  double beta = static_cast<double>(node.attrFloat("beta", 1.0f));
  layer.biasRows_ = rows;
  layer.bias_.assign(static_cast<size_t>(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      layer.bias_[static_cast<size_t>(r * n + c)] =
          beta * values[static_cast<size_t>(r * cols + (cols == 1 ? 0 : c))];
    }
  }
  return layer;
}

int64_t LinearLayer::outputChannelOf(uint64_t index) const {
  const auto& d = weightDims_;
  switch (kind_) {
    case LayerKind::Conv:
      return static_cast<int64_t>(index / (static_cast<uint64_t>(d[1]) * kernelSize_));
    case LayerKind::ConvTranspose: {
      auto perIn = static_cast<uint64_t>(d[1]) * kernelSize_;
      uint64_t in = index / perIn;
      uint64_t group = in / static_cast<uint64_t>(d[0] / groups_);
      return static_cast<int64_t>(group * static_cast<uint64_t>(d[1]) +
                                  (index / kernelSize_) % static_cast<uint64_t>(d[1]));
    }
    case LayerKind::Gemm:
    case LayerKind::MatMul:
      return static_cast<int64_t>(transB_ ? index / static_cast<uint64_t>(d[1])
                                          : index % static_cast<uint64_t>(d[1]));
  }
  return 0;
}

int64_t LinearLayer::inputChannelOf(uint64_t index) const {
  const auto& d = weightDims_;
  switch (kind_) {
    case LayerKind::Conv: {
      uint64_t out = index / (static_cast<uint64_t>(d[1]) * kernelSize_);
      uint64_t group = out / static_cast<uint64_t>(d[0] / groups_);
      return static_cast<int64_t>(group * static_cast<uint64_t>(d[1]) +
                                  (index / kernelSize_) % static_cast<uint64_t>(d[1]));
    }
    case LayerKind::ConvTranspose:
      return static_cast<int64_t>(index / (static_cast<uint64_t>(d[1]) * kernelSize_));
    case LayerKind::Gemm:
    case LayerKind::MatMul:
      return static_cast<int64_t>(transB_ ? index % static_cast<uint64_t>(d[1])
                                          : index / static_cast<uint64_t>(d[1]));
  }
  return 0;
}

std::vector<double> LinearLayer::channelAbsMax(int64_t channels, ChannelOf channelOf) const {
  std::vector<double> result(static_cast<size_t>(channels), 0.0);
  for (uint64_t i = 0; i < weight_.size(); ++i) {
    double& r = result[static_cast<size_t>((this->*channelOf)(i))];
    r = std::max(r, std::fabs(weight_[i]));
  }
  return result;
}

std::vector<double> LinearLayer::outputChannelAbsMax() const {
  return channelAbsMax(outputChannels_, &LinearLayer::outputChannelOf);
}

std::vector<double> LinearLayer::inputChannelAbsMax() const {
  return channelAbsMax(inputChannels_, &LinearLayer::inputChannelOf);
}

void LinearLayer::scaleOutputChannels(std::span<const double> factor) {
  for (uint64_t i = 0; i < weight_.size(); ++i) {
    weight_[i] *= factor[static_cast<size_t>(outputChannelOf(i))];
  }
  auto n = static_cast<size_t>(outputChannels_);
  for (size_t i = 0; i < bias_.size(); ++i) bias_[i] *= factor[i % n];
  weightChanged_ = true;
  biasChanged_ = biasChanged_ || hasBias_;
}

void LinearLayer::scaleInputChannels(std::span<const double> factor) {
  for (uint64_t i = 0; i < weight_.size(); ++i) {
    weight_[i] *= factor[static_cast<size_t>(inputChannelOf(i))];
  }
  weightChanged_ = true;
}

void LinearLayer::addToBias(std::span<const double> delta) {
  auto n = static_cast<size_t>(outputChannels_);
  for (size_t i = 0; i < bias_.size(); ++i) bias_[i] += delta[i % n];
  biasChanged_ = true;
}

std::vector<double> LinearLayer::outputForConstantInput(std::span<const double> shift) const {
  std::vector<double> result(static_cast<size_t>(outputChannels_), 0.0);
  for (uint64_t i = 0; i < weight_.size(); ++i) {
    result[static_cast<size_t>(outputChannelOf(i))] +=
        weight_[i] * shift[static_cast<size_t>(inputChannelOf(i))];
  }
  if (kind_ == LayerKind::Gemm) {
    double alpha = static_cast<double>(node_->attrFloat("alpha", 1.0f));
    for (double& r : result) r *= alpha;
  }
  return result;
}

void LinearLayer::writeBack() {
  if (weightChanged_) {
    std::string name = weightValue_->name();
    weightValue_ = fold::installConstant(
        {{node_, 1}}, Tensor::fromDoubles(weightType_, weightDims_, weight_), name);
    weightChanged_ = false;
  }
  if (!biasChanged_) return;
  Value* old = node_->input(2);
  std::string name = old ? old->name() : weightValue_->name() + "_bias";
  std::vector<int64_t> dims{outputChannels_};
  if (kind_ == LayerKind::Gemm) {
    std::optional<Tensor> c = old ? fold::constantThroughCasts(old) : std::nullopt;
    if (c && c->dims().size() == 2) dims = {biasRows_, outputChannels_};
    // The new C already holds beta * C.
    if (node_->attrFloat("beta", 1.0f) != 1.0f) node_->setAttr(Attribute::makeFloat("beta", 1.0f));
  }
  // A Gemm or Conv that had no bias: ONNX allows an absent optional input only at the end, and
  // the bias is the last input of both.
  fold::installConstant({{node_, 2}}, Tensor::fromDoubles(biasType_, dims, bias_), name);
  hasBias_ = true;
  biasChanged_ = false;
}

LinearLayer* LinearLayerCache::get(Node* node, std::string& why) {
  if (auto it = byNode_.find(node); it != byNode_.end()) return it->second;
  if (auto it = unreadable_.find(node); it != unreadable_.end()) {
    why = it->second;
    return nullptr;
  }
  std::optional<LinearLayer> layer = LinearLayer::read(*node, why);
  if (!layer) {
    unreadable_[node] = why;
    return nullptr;
  }
  owned_.push_back(std::make_unique<LinearLayer>(std::move(*layer)));
  return byNode_[node] = owned_.back().get();
}

}  // namespace qopt::equalize
