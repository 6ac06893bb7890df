#include "QuantRange.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>

#include <fmt/format.h>

#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Float8.h"

namespace qopt::stripqdq {

namespace {

// The integer type: the zero point's, else QuantizeLinear's output_dtype (opset 21), else the
// data type of DequantizeLinear's input, else uint8 (ONNX's default).
DataType quantizedType(const Node& node, const std::optional<Tensor>& zeroPoint) {
  if (zeroPoint) return zeroPoint->dataType();
  if (node.opType() == "QuantizeLinear") {
    const int64_t dtype = node.attrInt("output_dtype", 0);
    if (auto t = dataTypeFromInt(dtype); t && dtype != 0) return *t;
    return DataType::UInt8;
  }
  const Value* x = node.input(0);
  if (x != nullptr && x->type().isTensor() && x->type().elemType != DataType::Undefined) {
    return x->type().elemType;
  }
  return DataType::UInt8;
}

}  // namespace

std::optional<QuantParams> readQuantParams(const Node& node, std::string* why) {
  std::optional<Tensor> scale = fold::constantThroughCasts(node.input(1));
  if (!scale) {
    *why = "its scale is not a build-time constant";
    return std::nullopt;
  }
  std::optional<Tensor> zeroPoint;
  if (node.input(2) != nullptr) {
    zeroPoint = fold::constantThroughCasts(node.input(2));
    if (!zeroPoint) {
      *why = "its zero point is not a build-time constant";
      return std::nullopt;
    }
  }
  QuantParams p;
  p.type = quantizedType(node, zeroPoint);
  if (!quantizedIntegerRange(p.type) && !isFloat8(p.type)) {
    *why = fmt::format("its quantized type {} is not an integer or float8 type strip-qdq handles",
                       dataTypeName(p.type));
    return std::nullopt;
  }
  // A non-saturating float8 QuantizeLinear turns what lies beyond the range into inf or NaN:
  // there is no clamp to restore in its place.
  if (isFloat8(p.type) && node.opType() == "QuantizeLinear" && node.attrInt("saturate", 1) == 0) {
    *why = "it is a float8 QuantizeLinear with saturate=0 (no clamp to restore)";
    return std::nullopt;
  }
  if (node.hasAttr("block_size") && node.attrInt("block_size", 0) != 0) {
    *why = "blocked quantization is not handled";
    return std::nullopt;
  }
  p.scaleType = scale->dataType();
  p.scales = scale->toDoubles();
  if (p.scales.empty()) {
    *why = "its scale is empty";
    return std::nullopt;
  }
  for (double s : p.scales) {
    if (!(s > 0) || !std::isfinite(s)) {
      *why = fmt::format("its scale {} is not a positive finite number", s);
      return std::nullopt;
    }
  }
  if (zeroPoint && isFloat8(p.type)) {
    // ONNX leaves float8 zero points unused; only 0 means the same everywhere.
    for (double z : zeroPoint->toDoubles()) {
      if (z != 0) {
        *why = fmt::format("its {} zero point {} is not 0", dataTypeName(p.type), z);
        return std::nullopt;
      }
    }
    p.zeroPoints.assign(p.scales.size(), 0);
    if (zeroPoint->numElements() != p.scales.size()) {
      *why = "its zero point and scale have different sizes";
      return std::nullopt;
    }
  } else if (zeroPoint) {
    p.zeroPoints = zeroPoint->toInt64s();
    if (p.zeroPoints.size() != p.scales.size()) {
      *why = "its zero point and scale have different sizes";
      return std::nullopt;
    }
  } else {
    p.zeroPoints.assign(p.scales.size(), 0);
  }
  if (!scale->dims().empty() && scale->numElements() > 1) p.axis = node.attrInt("axis", 1);
  return p;
}

bool sameQuantization(const QuantParams& a, const QuantParams& b) {
  if (a.type != b.type || a.scales != b.scales || a.zeroPoints != b.zeroPoints) return false;
  return a.perTensor() || a.axis == b.axis;
}

FloatRange representableRange(const QuantParams& params, size_t k) {
  // Float8 (zero point 0): +-(largest finite value) * scale, where a saturating QuantizeLinear
  // clamps (448 for E4M3FN), not int8's [-128, 127].
  if (std::optional<Float8Format> f = float8Format(params.type)) {
    return {-f->maxFinite * params.scales[k], f->maxFinite * params.scales[k]};
  }
  const auto [qmin, qmax] = *quantizedIntegerRange(params.type);
  const double s = params.scales[k];
  const double zp = static_cast<double>(params.zeroPoints[k]);
  return {s * (static_cast<double>(qmin) - zp), s * (static_cast<double>(qmax) - zp)};
}

double cacheAmax(const QuantParams& params, size_t k) {
  if (params.type == DataType::Int8 && params.zeroPoints[k] == 0) return params.scales[k] * 127.0;
  const FloatRange r = representableRange(params, k);
  return std::max(std::abs(r.lo), std::abs(r.hi));
}

std::string typeWord(DataType type) {
  std::string word(dataTypeName(type));
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return word;
}

}  // namespace qopt::stripqdq
