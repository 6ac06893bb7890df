#include "qopt/qdq/QuantNumbers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "qopt/ir/Error.h"
#include "qopt/ir/Float8.h"

namespace qopt::qdq {
namespace {

// std::nearbyint in the default rounding mode rounds half to even, as QuantizeLinear does.
double roundHalfEven(double x) {
  return std::nearbyint(x);
}

}  // namespace

quant::CalibratorSpec schemeSpec(const quant::TensorStatistics& stats,
                                 const quant::CalibratorSpec& spec, ActivationScheme scheme) {
  quant::CalibratorSpec out = spec;
  // Non-negative tensors (after ReLU) use all 255 levels on one side.
  if (scheme == ActivationScheme::UnsignedAsymmetric) out.levels = stats.min() >= 0 ? 255 : 127;
  return out;
}

ActivationParams activationParams(const quant::TensorStatistics& stats,
                                  const quant::CalibratorSpec& spec, ActivationScheme scheme) {
  return activationParamsForAmax(stats, quant::computeAmax(stats, schemeSpec(stats, spec, scheme)),
                                 scheme);
}

ActivationParams activationParamsForAmax(const quant::TensorStatistics& stats, double amax,
                                         ActivationScheme scheme) {
  ActivationParams params;
  params.isUnsigned = scheme == ActivationScheme::UnsignedAsymmetric;
  params.type = scheme == ActivationScheme::Float8 ? DataType::Float8E4M3FN
                : params.isUnsigned                ? DataType::UInt8
                                                   : DataType::Int8;
  params.amax = amax;
  if (!params.isUnsigned) {
    params.rangeMin = static_cast<float>(-params.amax);
    params.rangeMax = static_cast<float>(params.amax);
    const double levels = scheme == ActivationScheme::Float8 ? kFloat8E4M3Max : 127.0;
    if (!(params.amax > 0)) {
      params.zeroRange = true;
      params.scale = kZeroRangeScale;
    } else {
      params.scale = static_cast<float>(params.amax / levels);
    }
    return params;
  }
  double lo = std::min(0.0, std::max(static_cast<double>(stats.min()), -params.amax));
  double hi = std::max(0.0, std::min(static_cast<double>(stats.max()), params.amax));
  params.rangeMin = static_cast<float>(lo);
  params.rangeMax = static_cast<float>(hi);
  if (!(hi - lo > 0)) {
    params.zeroRange = true;
    params.scale = kZeroRangeScale;
    params.zeroPoint = 0;
    return params;
  }
  params.scale = static_cast<float>((hi - lo) / 255.0);
  params.zeroPoint = static_cast<int64_t>(
      std::clamp(roundHalfEven(-lo / static_cast<double>(params.scale)), 0.0, 255.0));
  return params;
}

QuantizedWeight quantizeWeight(const Tensor& weight, int64_t axis, const std::string& what,
                               DataType type) {
  const std::optional<Float8Format> float8 = float8Format(type);
  if (type != DataType::Int8 && type != DataType::Float8E4M3FN) {
    throw Error(
        ErrorKind::Internal, "", what,
        fmt::format("weights are quantized to INT8 or FLOAT8E4M3FN, not {}", dataTypeName(type)));
  }
  QuantizedWeight out;
  out.axis = axis;
  out.amax = quant::weightAmax(weight, axis, what);
  const double levels = float8 ? kFloat8E4M3Max : 127.0;
  for (double amax : out.amax) {
    if (amax > 0) {
      out.scales.push_back(static_cast<float>(amax / levels));
    } else {
      out.scales.push_back(kZeroRangeScale);
      ++out.zeroChannels;
    }
  }
  setWeightCodes(out, weight.dims(), weight.toDoubles(), type);
  return out;
}

double nearestOnGrid(double unit, DataType type) {
  if (const std::optional<Float8Format> float8 = float8Format(type)) {
    return float8ToDouble(doubleToFloat8(unit, *float8, /*saturate=*/true), *float8);
  }
  return std::clamp(roundHalfEven(unit), -127.0, 127.0);
}

void setWeightCodes(QuantizedWeight& weight, const std::vector<int64_t>& dims,
                    const std::vector<double>& w, DataType type) {
  const std::optional<Float8Format> float8 = float8Format(type);
  // Elements are laid out as [outer, channel, inner] around the quantized axis.
  const int64_t axis = weight.axis;
  int64_t channels = axis < 0 ? 1 : dims[static_cast<size_t>(axis)];
  int64_t inner = 1;
  if (axis >= 0) {
    for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  }
  auto channelOf = [&](size_t i) {
    return axis < 0 ? 0 : static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
  };
  if (float8) {
    // Saturating: a weight at amax lands on 448 exactly or, through the float scale's rounding,
    // a hair above it, which must not become NaN.
    std::vector<std::byte> codes(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const double scaled = w[i] / static_cast<double>(weight.scales[channelOf(i)]);
      codes[i] = static_cast<std::byte>(doubleToFloat8(scaled, *float8, /*saturate=*/true));
    }
    weight.values = Tensor(type, dims);
    weight.values.setRawBytes(std::move(codes));
    return;
  }
  std::vector<int8_t> q(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    double scaled = roundHalfEven(w[i] / static_cast<double>(weight.scales[channelOf(i)]));
    q[i] = static_cast<int8_t>(std::clamp(scaled, -127.0, 127.0));
  }
  weight.values = Tensor::fromPod<int8_t>(DataType::Int8, dims, q);
}

Tensor dequantizedWeight(const QuantizedWeight& weight, DataType type) {
  const std::vector<int64_t>& dims = weight.values.dims();
  const int64_t channels = weight.axis < 0 ? 1 : dims[static_cast<size_t>(weight.axis)];
  int64_t inner = 1;
  if (weight.axis >= 0) {
    for (size_t d = static_cast<size_t>(weight.axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  }
  std::vector<double> q = weight.values.toDoubles();
  std::vector<float> values(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const size_t channel =
        weight.axis < 0 ? 0 : static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
    values[i] = static_cast<float>(q[i]) * weight.scales[channel];
  }
  if (type == DataType::Float) return Tensor::fromFloats(dims, values);
  return Tensor::fromDoubles(type, dims, std::vector<double>(values.begin(), values.end()));
}

QuantizedBias quantizeBias(const Tensor& bias, float inputScale,
                           const std::vector<float>& weightScales, const std::string& what) {
  if (!isFloatingPoint(bias.dataType())) {
    throw Error(ErrorKind::Input, "", what, "the bias is not a floating point tensor");
  }
  std::vector<double> b = bias.toDoubles();
  if (weightScales.size() != 1 && weightScales.size() != b.size()) {
    throw Error(ErrorKind::Input, "", what,
                fmt::format("the bias has {} values but the weight {} scales", b.size(),
                            weightScales.size()));
  }
  QuantizedBias out;
  std::vector<int32_t> q(b.size());
  for (size_t c = 0; c < b.size(); ++c) {
    float scale = inputScale * weightScales[weightScales.size() == 1 ? 0 : c];
    out.scales.push_back(scale);
    double scaled = roundHalfEven(b[c] / static_cast<double>(scale));
    q[c] = static_cast<int32_t>(std::clamp(scaled, -2147483648.0, 2147483647.0));
  }
  out.values = Tensor::fromPod<int32_t>(DataType::Int32, bias.dims(), q);
  return out;
}

}  // namespace qopt::qdq
