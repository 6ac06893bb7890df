#include "WeightSource.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "qopt/constants/ConstantValue.h"

namespace qopt::foldbn {
namespace {

// QuantizeLinear of one element as runtimes compute it: the division in the scale's precision
// (float for float, float16 and bfloat16 scales), rounding half to even, then the zero point and
// saturation.
int64_t quantizeOne(double x, double scale, int64_t zero, DataType scaleType,
                    std::pair<int64_t, int64_t> range) {
  double rounded;
  if (scaleType == DataType::Double) {
    rounded = std::nearbyint(x / scale);
  } else {
    rounded =
        std::nearbyint(static_cast<double>(static_cast<float>(x) / static_cast<float>(scale)));
  }
  double q = std::clamp(rounded + static_cast<double>(zero), static_cast<double>(range.first),
                        static_cast<double>(range.second));
  return static_cast<int64_t>(q);
}

// Reads a DequantizeLinear's (or QuantizeLinear's) scale and zero point.
std::optional<QuantParams> readQuantParams(const Node& node, size_t weightRank, Refusal& refusal) {
  auto refuse = [&](std::string counter, std::string message) -> std::optional<QuantParams> {
    refusal = {std::move(counter), std::move(message)};
    return std::nullopt;
  };
  if (node.attrInt("block_size", 0) != 0) {
    return refuse("missed-quantized-layout",
                  fmt::format("{} quantizes in blocks", node.describe()));
  }
  std::optional<Tensor> scale =
      node.input(1) ? fold::constantThroughCasts(node.input(1)) : std::nullopt;
  if (!scale || !isFloatingPoint(scale->dataType())) {
    return refuse("missed-non-constant-weight",
                  fmt::format("the scale of {} is not a floating point constant", node.describe()));
  }
  QuantParams params;
  params.scale = scale->toDoubles();
  params.scaleType = scale->dataType();
  params.scaleDims = scale->dims();
  if (params.scale.empty()) {
    return refuse("missed-malformed", fmt::format("the scale of {} is empty", node.describe()));
  }
  params.perChannel = params.scale.size() > 1;
  if (params.perChannel) {
    if (scale->dims().size() != 1) {
      return refuse("missed-quantized-layout", fmt::format("the scale of {} has rank {}",
                                                           node.describe(), scale->dims().size()));
    }
    int64_t axis = node.attrInt("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(weightRank);
    params.axis = axis;
  }
  params.zeroPoint.assign(params.scale.size(), 0);
  if (const Value* zp = node.input(2)) {
    std::optional<Tensor> zero = fold::constantThroughCasts(zp);
    if (!zero) {
      return refuse("missed-non-constant-weight",
                    fmt::format("the zero point of {} is not a constant", node.describe()));
    }
    params.integerType = zero->dataType();
    params.hasZeroPoint = true;
    if (!quantizedIntegerRange(params.integerType)) {
      return refuse("missed-quantized-layout", fmt::format("{} quantizes to {}", node.describe(),
                                                           dataTypeName(params.integerType)));
    }
    std::vector<int64_t> values = zero->toInt64s();
    if (values.size() == 1) {
      params.zeroPoint.assign(params.scale.size(), values[0]);
    } else if (values.size() == params.scale.size()) {
      params.zeroPoint = values;
    } else {
      return refuse("missed-malformed",
                    fmt::format("{} has {} scales and {} zero points", node.describe(),
                                params.scale.size(), values.size()));
    }
  } else if (node.is("QuantizeLinear")) {
    if (const Attribute* dtype = node.findAttr("output_dtype"); dtype && dtype->i != 0) {
      std::optional<DataType> type = dataTypeFromInt(dtype->i);
      if (!type || !quantizedIntegerRange(*type)) {
        return refuse("missed-quantized-layout",
                      fmt::format("{} quantizes to an unsupported type", node.describe()));
      }
      params.integerType = *type;
    }
  }
  return params;
}

bool sameQuantParams(const QuantParams& a, const QuantParams& b) {
  return a.scale == b.scale && a.zeroPoint == b.zeroPoint && a.integerType == b.integerType &&
         a.perChannel == b.perChannel && (!a.perChannel || a.axis == b.axis);
}

// Whether `reader` (at `index`) is the only node that reads the values of `value`; readers of
// only its shape and type do not count, since rescaling keeps both.
bool readOnlyBy(const Value* value, const Node* reader, size_t index) {
  size_t others = 0;
  bool found = false;
  for (const Use& use : value->uses()) {
    if (use == Use{const_cast<Node*>(reader), static_cast<uint32_t>(index)}) {
      found = true;
    } else if (!fold::readsOnlyShapeAndType(use)) {
      ++others;
    }
  }
  return found && others == 0;
}

}  // namespace

std::optional<WeightSource> resolveWeight(const Node& linear, size_t index, Refusal& refusal) {
  Value* input = linear.input(index);
  auto refuse = [&](std::string message) -> std::optional<WeightSource> {
    refusal = {"missed-non-constant-weight", std::move(message)};
    return std::nullopt;
  };
  if (input == nullptr) return refuse("it has no weight input");
  WeightSource source;
  if (std::optional<Tensor> values = fold::constantOf(input)) {
    if (!isFloatingPoint(values->dataType())) {
      return refuse(fmt::format("its weight '{}' is of type {}", input->name(),
                                dataTypeName(values->dataType())));
    }
    source.weight = input;
    source.values = std::move(*values);
    return source;
  }
  Node* dq = input->producer();
  if (dq == nullptr || !dq->is("DequantizeLinear") || dq->input(0) == nullptr) {
    return refuse(fmt::format("its weight '{}' is not a constant", input->name()));
  }
  source.dequantize = dq;
  Value* quantized = dq->input(0);
  if (std::optional<Tensor> integers = fold::constantOf(quantized)) {
    if (!quantizedIntegerRange(integers->dataType())) {
      return refuse(fmt::format("its weight '{}' is quantized to {}", quantized->name(),
                                dataTypeName(integers->dataType())));
    }
    source.kind = WeightSource::Kind::Dequantize;
    source.weight = quantized;
    source.values = std::move(*integers);
  } else {
    Node* q = quantized->producer();
    if (q == nullptr || !q->is("QuantizeLinear") || q->input(0) == nullptr) {
      return refuse(fmt::format("the input '{}' of {} is not a constant or a QuantizeLinear",
                                quantized->name(), dq->describe()));
    }
    std::optional<Tensor> floats = fold::constantOf(q->input(0));
    if (!floats || !isFloatingPoint(floats->dataType())) {
      return refuse(fmt::format("the input '{}' of {} is not a float constant", q->input(0)->name(),
                                q->describe()));
    }
    source.kind = WeightSource::Kind::QuantizeDequantize;
    source.quantize = q;
    source.weight = q->input(0);
    source.values = std::move(*floats);
  }
  size_t rank = source.values.dims().size();
  std::optional<QuantParams> params = readQuantParams(*dq, rank, refusal);
  if (!params) return std::nullopt;
  if (source.kind == WeightSource::Kind::Dequantize) {
    params->integerType = source.values.dataType();
  } else {
    std::optional<QuantParams> quantizeParams = readQuantParams(*source.quantize, rank, refusal);
    if (!quantizeParams) return std::nullopt;
    if (!sameQuantParams(*params, *quantizeParams)) {
      refusal = {"missed-quantized-layout",
                 fmt::format("{} and {} use different scales or zero points",
                             source.quantize->describe(), dq->describe())};
      return std::nullopt;
    }
  }
  source.quant = std::move(*params);
  return source;
}

const Node* sharedWith(const WeightSource& source, const Node& linear, bool* graphOutput) {
  *graphOutput = false;
  // Each link of the chain must be read exactly once, by the next link.
  std::vector<std::tuple<const Value*, const Node*, size_t>> links;
  const Value* linearInput = source.dequantize ? source.dequantize->output(0) : source.weight;
  for (size_t i = 0; i < linear.numInputs(); ++i) {
    if (linear.input(i) == linearInput) links.emplace_back(linearInput, &linear, i);
  }
  if (source.kind == WeightSource::Kind::QuantizeDequantize) {
    links.emplace_back(source.quantize->output(0), source.dequantize, 0);
    links.emplace_back(source.weight, source.quantize, 0);
  } else if (source.kind == WeightSource::Kind::Dequantize) {
    links.emplace_back(source.weight, source.dequantize, 0);
  }
  for (const auto& [value, reader, index] : links) {
    if (value->isGraphOutput()) {
      *graphOutput = true;
      return reader;
    }
    if (!readOnlyBy(value, reader, index)) {
      for (const Use& use : value->uses()) {
        if (use.user != reader && !fold::readsOnlyShapeAndType(use)) return use.user;
      }
      return reader;  // read twice by the same node
    }
  }
  return nullptr;
}

std::optional<RescaledWeight> rescaleWeight(const WeightSource& source, const WeightLayout& layout,
                                            std::span<const double> factor, int64_t opset,
                                            Refusal& refusal) {
  auto refuse = [&](std::string counter, std::string message) -> std::optional<RescaledWeight> {
    refusal = {std::move(counter), std::move(message)};
    return std::nullopt;
  };
  const std::vector<int64_t>& dims = source.values.dims();
  uint64_t count = source.values.numElements();
  RescaledWeight result;

  if (source.kind == WeightSource::Kind::Float) {
    std::vector<double> values = source.values.toDoubles();
    for (uint64_t i = 0; i < count; ++i) values[i] *= factor[layout.channelOf(i)];
    result.weight = Tensor::fromDoubles(source.values.dataType(), dims, values);
    result.weightChanged = true;
    return result;
  }

  const QuantParams& quant = source.quant;
  std::optional<int64_t> axis = layout.channelAxis();
  if (!axis) {
    return refuse("missed-quantized-layout",
                  "its weight is quantized, and a grouped ConvTranspose has no weight axis of "
                  "output channels to hold per-channel scales");
  }
  if (quant.perChannel && quant.axis != *axis) {
    return refuse("missed-quantized-layout",
                  fmt::format("its weight is quantized per channel along axis {}, but its output "
                              "channels are along axis {}",
                              quant.axis, *axis));
  }
  auto channels = static_cast<size_t>(layout.outputChannels());
  if (quant.perChannel && quant.scale.size() != channels) {
    return refuse("missed-malformed",
                  fmt::format("its weight has {} per-channel scales for {} output channels",
                              quant.scale.size(), channels));
  }
  auto range = *quantizedIntegerRange(quant.integerType);
  auto at = [&](const auto& values, size_t c) { return quant.perChannel ? values[c] : values[0]; };

  bool uniform = std::all_of(factor.begin(), factor.end(),
                             [&](double f) { return std::fabs(f) == std::fabs(factor[0]); });
  bool becomesPerChannel = !quant.perChannel && !uniform;
  if (becomesPerChannel && opset < 13) {
    return refuse("missed-quantized-per-tensor",
                  fmt::format("its weight scale is per tensor and the BatchNorm scales differ "
                              "between channels; per-channel scales need opset >= 13 (model: {})",
                              opset));
  }
  for (size_t c = 0; c < channels; ++c) {
    if (factor[c] >= 0) continue;
    if (at(quant.zeroPoint, c) != 0) {
      return refuse("missed-quantized-sign",
                    fmt::format("channel {} has a negative BatchNorm scale and zero point {}: its "
                                "integer weights cannot be negated",
                                c, at(quant.zeroPoint, c)));
    }
    if (range.first == 0) {
      return refuse("missed-quantized-sign",
                    fmt::format("channel {} has a negative BatchNorm scale and the weight is "
                                "quantized to unsigned {}",
                                c, dataTypeName(quant.integerType)));
    }
  }

  // New scales: s * |f|, rounded once to the scale's type. A channel with f = 0 keeps its scale
  // (a scale must stay positive); its integers become the zero point instead.
  size_t scaleCount = becomesPerChannel || quant.perChannel ? channels : 1;
  std::vector<double> newScale(scaleCount);
  for (size_t c = 0; c < scaleCount; ++c) {
    double f = std::fabs(factor[c]);
    newScale[c] = f == 0 ? at(quant.scale, c) : at(quant.scale, c) * f;
  }
  std::vector<int64_t> scaleDims = quant.scaleDims;  // a scalar or [1] stays so
  if (scaleCount > 1 || becomesPerChannel) scaleDims = {static_cast<int64_t>(scaleCount)};
  Tensor scaleTensor = Tensor::fromDoubles(quant.scaleType, scaleDims, newScale);
  std::vector<double> roundedScale = scaleTensor.toDoubles();
  for (size_t c = 0; c < roundedScale.size(); ++c) {
    if (!(roundedScale[c] > 0) || !std::isfinite(roundedScale[c])) {
      return refuse("missed-bad-statistics",
                    fmt::format("the rescaled weight scale of channel {} is {} in {}", c,
                                roundedScale[c], dataTypeName(quant.scaleType)));
    }
  }
  auto newScaleAt = [&](size_t c) {
    return roundedScale.size() == 1 ? roundedScale[0] : roundedScale[c];
  };

  // The integer each element must have after folding: q for f > 0, -q for f < 0 (zero point 0),
  // the zero point for f = 0.
  auto target = [&](int64_t q, size_t c) -> std::optional<int64_t> {
    int64_t zero = at(quant.zeroPoint, c);
    int64_t t = factor[c] > 0 ? q : factor[c] < 0 ? 2 * zero - q : zero;
    if (t < range.first || t > range.second) return std::nullopt;
    return t;
  };
  auto cannotNegate = [&](int64_t q, size_t c) {
    return refuse("missed-quantized-range",
                  fmt::format("channel {} has a negative BatchNorm scale, and its integer weight "
                              "{} has no negation in {}",
                              c, q, dataTypeName(quant.integerType)));
  };

  if (source.kind == WeightSource::Kind::Dequantize) {
    std::vector<int64_t> integers = source.values.toInt64s();
    for (uint64_t i = 0; i < count; ++i) {
      auto c = static_cast<size_t>(layout.channelOf(i));
      std::optional<int64_t> t = target(integers[i], c);
      if (!t) return cannotNegate(integers[i], c);
      if (*t != integers[i]) result.weightChanged = true;
      integers[i] = *t;
    }
    result.weight = result.weightChanged ? Tensor::fromInt64s(quant.integerType, dims, integers)
                                         : source.values;
  } else {
    // The float weight times f, rounded once; an element whose quantized integer would then
    // differ from the one it must have (division rounding at a .5 boundary) is moved to the
    // exact dequantized value of that integer, so the integers stay as they were.
    std::vector<double> original = source.values.toDoubles();
    std::vector<double> scaled(count);
    std::vector<int64_t> targets(count);
    for (uint64_t i = 0; i < count; ++i) {
      auto c = static_cast<size_t>(layout.channelOf(i));
      int64_t q = quantizeOne(original[i], at(quant.scale, c), at(quant.zeroPoint, c),
                              quant.scaleType, range);
      std::optional<int64_t> t = target(q, c);
      if (!t) return cannotNegate(q, c);
      targets[i] = *t;
      scaled[i] = factor[c] == 0 ? 0.0 : original[i] * factor[c];
    }
    DataType type = source.values.dataType();
    std::vector<double> rounded = Tensor::fromDoubles(type, dims, scaled).toDoubles();
    bool snappedAny = false;
    for (uint64_t i = 0; i < count; ++i) {
      auto c = static_cast<size_t>(layout.channelOf(i));
      int64_t zero = at(quant.zeroPoint, c);
      if (quantizeOne(rounded[i], newScaleAt(c), zero, quant.scaleType, range) == targets[i]) {
        continue;
      }
      double exact = static_cast<double>(targets[i] - zero) * newScaleAt(c);
      double value = Tensor::fromDoubles(type, {}, {&exact, 1}).toDoubles()[0];
      if (quantizeOne(value, newScaleAt(c), zero, quant.scaleType, range) != targets[i]) {
        return refuse("missed-quantized-range",
                      fmt::format("element {} of the weight cannot keep its integer {} after "
                                  "rescaling in {}",
                                  i, targets[i], dataTypeName(type)));
      }
      rounded[i] = value;
      snappedAny = true;
      ++result.snapped;
    }
    result.weight = snappedAny ? Tensor::fromDoubles(type, dims, rounded)
                               : Tensor::fromDoubles(type, dims, scaled);
    result.weightChanged = true;
  }

  result.scale = std::move(scaleTensor);
  if (becomesPerChannel) {
    result.newAxis = *axis;
    if (quant.hasZeroPoint) {
      std::vector<int64_t> zeros(channels, quant.zeroPoint[0]);
      result.zeroPoint =
          Tensor::fromInt64s(quant.integerType, {static_cast<int64_t>(channels)}, zeros);
    }
  }
  return result;
}

}  // namespace qopt::foldbn
