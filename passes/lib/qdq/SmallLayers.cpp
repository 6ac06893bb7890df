#include "qopt/qdq/SmallLayers.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "qopt/constants/ConstantValue.h"

namespace qopt::qdq {
namespace {

constexpr int64_t kUnknown = -1;
constexpr int kMaxWalk = 8;

// The dims of `value`, kUnknown where not known: a stored weight's (also behind the
// DequantizeLinear of a quantized weight, or a Transpose of it), else the declared shape.
std::optional<std::vector<int64_t>> knownDims(const Value* value, int depth = 0) {
  if (value == nullptr || depth > kMaxWalk) return std::nullopt;
  if (value->isInitializer() && value->initializer() != nullptr) {
    return value->initializer()->dims();
  }
  const ValueType& type = value->type();
  if (type.isTensor() && type.shape) {
    std::vector<int64_t> dims;
    for (const Dim& d : *type.shape) dims.push_back(d.value.value_or(kUnknown));
    return dims;
  }
  const Node* producer = value->producer();
  if (producer == nullptr) return std::nullopt;
  if (producer->is("DequantizeLinear") || producer->is("QuantizeLinear") ||
      producer->is("Identity") || producer->is("Cast")) {
    return knownDims(producer->input(0), depth + 1);
  }
  if (producer->is("Transpose")) {
    std::optional<std::vector<int64_t>> in = knownDims(producer->input(0), depth + 1);
    if (!in) return std::nullopt;
    std::vector<int64_t> perm = producer->attrInts("perm");
    if (perm.empty()) {
      return std::vector<int64_t>(in->rbegin(), in->rend());
    }
    if (perm.size() != in->size()) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t axis : perm) {
      if (axis < 0 || axis >= static_cast<int64_t>(in->size())) return std::nullopt;
      out.push_back((*in)[static_cast<size_t>(axis)]);
    }
    return out;
  }
  if (producer->is("Constant")) {
    if (std::optional<Tensor> t = fold::constantOf(value)) return t->dims();
  }
  return std::nullopt;
}

// dims[index], negative index from the end; kUnknown when absent.
int64_t dimAt(const std::optional<std::vector<int64_t>>& dims, int64_t index) {
  if (!dims) return kUnknown;
  const int64_t rank = static_cast<int64_t>(dims->size());
  const int64_t i = index < 0 ? index + rank : index;
  if (i < 0 || i >= rank) return kUnknown;
  return (*dims)[static_cast<size_t>(i)];
}

bool isSmall(int64_t dim, int64_t minimum) {
  return dim != kUnknown && dim < minimum;
}

// Whether `value` is a main-graph input, also behind the Q/DQ or Cast that quantization or FP16
// conversion put after it.
bool isModelInput(const Value* value, int depth = 0) {
  if (value == nullptr || depth > kMaxWalk) return false;
  if (value->isGraphInput() && !value->isInitializer())
    return value->graph()->parentNode() == nullptr;
  const Node* producer = value->producer();
  if (producer == nullptr) return false;
  if (producer->is("DequantizeLinear") || producer->is("QuantizeLinear") || producer->is("Cast") ||
      producer->is("Identity")) {
    return isModelInput(producer->input(0), depth + 1);
  }
  return false;
}

// INT8 convolution kernels that TensorRT has below the channel line (Model Optimizer's
// exceptions): a dense Conv with a square kernel and 8-aligned channels on one side, when the
// other side reaches the line or the Conv reads the model's input (the RGB stem); a grouped
// Conv with 8-aligned output channels and kernels of at least 3 on every side.
bool int8KernelBelowLine(const Node& conv, const std::vector<int64_t>& weight,
                         int64_t minChannels) {
  const int64_t out = weight[0];
  const int64_t in = weight[1];
  std::vector<int64_t> kernel(weight.begin() + 2, weight.end());
  if (std::find(kernel.begin(), kernel.end(), kUnknown) != kernel.end()) return false;
  constexpr int64_t kAlign = 8;
  if (conv.attrInt("group", 1) > 1) {
    return out % kAlign == 0 &&
           std::all_of(kernel.begin(), kernel.end(), [](int64_t k) { return k >= 3; });
  }
  const bool aligned =
      (out != kUnknown && out % kAlign == 0) || (in != kUnknown && in % kAlign == 0);
  const bool square =
      std::adjacent_find(kernel.begin(), kernel.end(), std::not_equal_to<>()) == kernel.end();
  const bool oneSideWide = out >= minChannels || in >= minChannels;
  return aligned && square && (oneSideWide || isModelInput(conv.input(0)));
}

std::optional<std::string> convReason(const Node& conv, const SmallLayerRule& rule) {
  std::optional<std::vector<int64_t>> weight = knownDims(conv.input(1));
  if (!weight || weight->size() < 3) return std::nullopt;
  // The channels a filter sees: a depthwise Conv's filters each see one (the grouped-kernel
  // exception below then decides).
  const int64_t out = (*weight)[0];
  const int64_t in = (*weight)[1];
  const bool grouped = conv.attrInt("group", 1) > 1;
  const char* inSide = grouped ? "input channels per group" : "input channels";
  if (rule.minChannels > 0) {
    const bool smallIn = isSmall(in, rule.minChannels);
    const bool smallOut = isSmall(out, rule.minChannels);
    if ((smallIn || smallOut) &&
        (rule.fp8 || !int8KernelBelowLine(conv, *weight, rule.minChannels))) {
      std::string sides =
          smallIn && smallOut
              ? fmt::format("{} {} and {} output channels", in, inSide, out)
              : fmt::format("{} {}", smallIn ? in : out, smallIn ? inSide : "output channels");
      std::string why = fmt::format("{} with {} (fewer than {})", grouped ? "grouped Conv" : "Conv",
                                    sides, rule.minChannels);
      if (!rule.fp8) {
        why += grouped ? "; no INT8 grouped kernel for it (8-aligned output channels and 3x3 or "
                         "larger kernels)"
                       : "; no INT8 kernel for it (square kernel, 8-aligned channels, and one side "
                         "at the line or the model's input)";
      }
      return why;
    }
  }
  if (rule.fp8) {
    int64_t filter = 1;
    std::vector<std::string> sides;
    for (size_t i = 2; i < weight->size(); ++i) {
      if ((*weight)[i] == kUnknown) return std::nullopt;
      filter *= (*weight)[i];
      sides.push_back(std::to_string((*weight)[i]));
    }
    if (filter > kFp8MaxFilterElements) {
      return fmt::format("FP8 Conv with a {} filter ({} elements; FP8 kernels take at most {})",
                         fmt::join(sides, "x"), filter, kFp8MaxFilterElements);
    }
    // FP8 kernels are slower than FP16 ones at the line itself, too.
    if (rule.minChannels > 0 && (in == rule.minChannels || out == rule.minChannels)) {
      return fmt::format("FP8 Conv with {} {} (FP8 needs more than {})",
                         in == rule.minChannels ? in : out,
                         in == rule.minChannels ? inSide : "output channels", rule.minChannels);
    }
  }
  return std::nullopt;
}

std::optional<std::string> matmulReason(const Node& node, const SmallLayerRule& rule) {
  if (rule.minChannels <= 0) return std::nullopt;
  std::optional<std::vector<int64_t>> a = knownDims(node.input(0));
  std::optional<std::vector<int64_t>> b = knownDims(node.input(1));
  std::optional<std::vector<int64_t>> y = knownDims(node.output(0));
  int64_t k = kUnknown;
  int64_t n = kUnknown;
  if (node.is("Gemm")) {
    const bool transA = node.attrInt("transA", 0) != 0;
    const bool transB = node.attrInt("transB", 0) != 0;
    if (b && b->size() == 2) {
      k = dimAt(b, transB ? 1 : 0);
      n = dimAt(b, transB ? 0 : 1);
    }
    if (k == kUnknown && a && a->size() == 2) k = dimAt(a, transA ? 0 : 1);
    if (n == kUnknown && y && y->size() == 2) n = dimAt(y, 1);
  } else {
    if (b && b->size() >= 2) {
      k = dimAt(b, -2);
      n = dimAt(b, -1);
    }
    if (k == kUnknown && a && !a->empty()) k = dimAt(a, -1);
    if (n == kUnknown && b && b->size() >= 2 && y && !y->empty()) n = dimAt(y, -1);
  }
  const bool smallK = isSmall(k, rule.minChannels);
  const bool smallN = isSmall(n, rule.minChannels);
  if (smallK && smallN) {
    return fmt::format("{} with K={} and N={} (below {})", node.opType(), k, n, rule.minChannels);
  }
  if (smallK || smallN) {
    return fmt::format("{} with {}={} (below {})", node.opType(), smallK ? "K" : "N",
                       smallK ? k : n, rule.minChannels);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> smallLayerReason(const Node& node, const SmallLayerRule& rule) {
  if (!node.domain().empty()) return std::nullopt;
  if (node.is("Conv")) return convReason(node, rule);
  if (node.is("Gemm") || node.is("MatMul")) return matmulReason(node, rule);
  return std::nullopt;
}

void noteSmallLayers(analysis::PrecisionReport& report, const SmallLayerRule& rule) {
  for (analysis::LayerInfo& layer : report.layers) {
    if (!analysis::isWeightedOp(*layer.node) || (layer.precision != analysis::Precision::Fp32 &&
                                                 layer.precision != analysis::Precision::Fp16)) {
      continue;
    }
    if (std::optional<std::string> why = smallLayerReason(*layer.node, rule)) {
      layer.notes.push_back(fmt::format(
          "TensorRT gains nothing from INT8 here: {} (insert-qdq's min-channels rule)", *why));
    }
  }
}

}  // namespace qopt::qdq
