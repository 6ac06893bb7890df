#include "SmallLayers.h"

#include <fmt/format.h>

#include <vector>

#include "../fold-constants/ConstantValue.h"

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

std::optional<std::string> convReason(const Node& conv, const SmallLayerRule& rule) {
  std::optional<std::vector<int64_t>> weight = knownDims(conv.input(1));
  if (!weight || weight->size() < 3) return std::nullopt;
  // The Conv's own channel counts, not the per-group ones: a depthwise Conv over 32 channels has
  // 32 input channels although each filter sees one.
  const int64_t out = (*weight)[0];
  const int64_t perGroup = (*weight)[1];
  const int64_t in = perGroup == kUnknown ? kUnknown : perGroup * conv.attrInt("group", 1);
  if (rule.minChannels > 0) {
    const bool smallIn = isSmall(in, rule.minChannels);
    const bool smallOut = isSmall(out, rule.minChannels);
    if (smallIn && smallOut) {
      return fmt::format("Conv with {} input and {} output channels (fewer than {})", in, out,
                         rule.minChannels);
    }
    if (smallIn || smallOut) {
      return fmt::format("Conv with {} {} channels (fewer than {})", smallIn ? in : out,
                         smallIn ? "input" : "output", rule.minChannels);
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

}  // namespace qopt::qdq
