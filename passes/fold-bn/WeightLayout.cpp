#include "WeightLayout.h"

#include <fmt/format.h>

namespace qopt::foldbn {

std::optional<WeightLayout> WeightLayout::of(const Node& linear, LayerKind kind,
                                             const std::vector<int64_t>& dims, Refusal& refusal) {
  auto refuse = [&](std::string message) -> std::optional<WeightLayout> {
    refusal = {"missed-malformed", std::move(message)};
    return std::nullopt;
  };
  for (int64_t d : dims) {
    if (d <= 0) return refuse(fmt::format("its weight has an empty dimension"));
  }
  WeightLayout layout;
  switch (kind) {
    case LayerKind::Conv:
    case LayerKind::ConvTranspose: {
      if (dims.size() < 3) return refuse(fmt::format("its weight has rank {}", dims.size()));
      int64_t groups = linear.attrInt("group", 1);
      if (groups < 1) return refuse(fmt::format("group={} is not positive", groups));
      layout.axis_ = kind == LayerKind::Conv ? 0 : 1;
      break;
    }
    case LayerKind::Gemm:
      if (dims.size() != 2) return refuse(fmt::format("its B input has rank {}", dims.size()));
      layout.axis_ = linear.attrInt("transB", 0) != 0 ? 0 : 1;
      break;
    case LayerKind::MatMul:
      if (dims.size() != 2) {
        return refuse(fmt::format("its weight has rank {}, not 2", dims.size()));
      }
      layout.axis_ = 1;
      break;
  }
  layout.axisSize_ = dims[static_cast<size_t>(layout.axis_)];
  layout.stride_ = 1;
  for (size_t i = static_cast<size_t>(layout.axis_) + 1; i < dims.size(); ++i) {
    layout.stride_ *= static_cast<uint64_t>(dims[i]);
  }
  layout.outputChannels_ = layout.axisSize_;
  if (kind == LayerKind::ConvTranspose) {
    int64_t groups = linear.attrInt("group", 1);
    if (dims[0] % groups != 0) {
      return refuse(fmt::format("its weight's {} input channels do not split into {} groups",
                                dims[0], groups));
    }
    layout.groups_ = groups;
    layout.inputsPerGroup_ = dims[0] / groups;
    layout.outputChannels_ = layout.axisSize_ * groups;
  }
  return layout;
}

}  // namespace qopt::foldbn
