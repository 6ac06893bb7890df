#include "WeightSites.h"

#include <fmt/format.h>

#include "qopt/constants/ConstantValue.h"

namespace qopt::wq {
namespace {

bool isFloatWeightType(DataType type) {
  return type == DataType::Float || type == DataType::Float16 || type == DataType::BFloat16;
}

}  // namespace

std::optional<WeightSite> matchWeightSite(Node* node, std::string& why) {
  why.clear();
  const bool gemm = node->is("Gemm");
  if (!node->is("MatMul") && !gemm) return std::nullopt;
  WeightSite site;
  site.node = node;
  site.activation = node->input(0);
  if (site.activation == nullptr || node->input(1) == nullptr) {
    why = "left alone: an input is missing";
    return std::nullopt;
  }
  if (gemm) {
    if (node->attrInt("transA", 0) != 0) {
      why = "left alone: Gemm with transA=1 (its activation is transposed)";
      return std::nullopt;
    }
    site.transposed = node->attrInt("transB", 0) != 0;
  }
  std::optional<Tensor> weight = fold::constantOf(node->input(1));
  if (!weight) {
    why = fmt::format("left alone: its weight {} is not a constant",
                      fold::describeValue(node->input(1)));
    return std::nullopt;
  }
  if (!isFloatWeightType(weight->dataType())) {
    why = fmt::format("left alone: its weight is {}, not float, float16 or bfloat16",
                      dataTypeName(weight->dataType()));
    return std::nullopt;
  }
  if (weight->dims().size() != 2) {
    why = fmt::format("left alone: its weight has rank {}, not 2", weight->dims().size());
    return std::nullopt;
  }
  site.floatType = weight->dataType();
  site.storedDims = weight->dims();
  const int64_t k = site.transposed ? site.storedDims[1] : site.storedDims[0];
  const int64_t n = site.transposed ? site.storedDims[0] : site.storedDims[1];
  if (k < kMinGemmDim || n < kMinGemmDim) {
    why = fmt::format(
        "left alone: K={} N={}; GEMMs with K or N below {} gain nothing from INT4 weights", k, n,
        kMinGemmDim);
    return std::nullopt;
  }
  const ValueType& actType = site.activation->type();
  if (actType.isTensor() && actType.elemType != DataType::Undefined &&
      actType.elemType != site.floatType) {
    why = fmt::format("left alone: its input is {}, its weight {}", dataTypeName(actType.elemType),
                      dataTypeName(site.floatType));
    return std::nullopt;
  }
  const std::vector<double> values = weight->toDoubles();
  site.weight = Matrix{k, n, std::vector<double>(values.size())};
  for (int64_t r = 0; r < site.storedDims[0]; ++r) {
    for (int64_t c = 0; c < site.storedDims[1]; ++c) {
      const double v = values[static_cast<size_t>(r * site.storedDims[1] + c)];
      if (site.transposed) {
        site.weight.at(c, r) = v;
      } else {
        site.weight.at(r, c) = v;
      }
    }
  }
  return site;
}

}  // namespace qopt::wq
