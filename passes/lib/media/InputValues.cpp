// From preprocessed values to the model input's array: normalization, the element types a file
// can feed, and the checks that the result fits the input's static shape.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media::detail {

namespace {

std::string formatShape(const interp::Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

std::string formatDims(const std::vector<std::optional<int64_t>>& dims) {
  std::string text;
  for (const auto& dim : dims) {
    text += (text.empty() ? "" : ",") + (dim ? std::to_string(*dim) : std::string("?"));
  }
  return "[" + text + "]";
}

std::vector<double> perChannel(const std::vector<double>& values, double fallback, int64_t channels,
                               const char* key) {
  if (values.empty()) return std::vector<double>(static_cast<size_t>(channels), fallback);
  if (values.size() == 1) return std::vector<double>(static_cast<size_t>(channels), values[0]);
  if (static_cast<int64_t>(values.size()) != channels) {
    throw usageError(fmt::format("{} gives {} values, the data has {} channel{}", key,
                                 values.size(), channels, channels == 1 ? "" : "s"));
  }
  return values;
}

bool isIntegerInput(DataType type) {
  return type == DataType::UInt8 || type == DataType::Int8;
}

}  // namespace

Normalizer::Normalizer(const PreprocessSpec& spec, int64_t channels)
    : scale_(spec.scale.value_or(1)),
      mean_(perChannel(spec.mean, 0, channels, "mean")),
      std_(perChannel(spec.std, 1, channels, "std")) {}

void checkElementType(const PreprocessSpec& spec, const InputShapeInfo& input,
                      const std::string& file) {
  switch (input.type) {
    case DataType::Undefined:
    case DataType::Float:
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Double:
      return;
    case DataType::UInt8:
    case DataType::Int8:
      if (spec.scale || !spec.mean.empty() || !spec.std.empty()) {
        throw usageError(fmt::format(
            "scale, mean and std give real numbers, but input '{}' is {}: leave them out to feed "
            "the raw values",
            input.name, dataTypeName(input.type)));
      }
      return;
    default:
      throw inputError(file, fmt::format("input '{}' is {}: images and audio feed float, float16, "
                                         "bfloat16, double, uint8 or int8 inputs",
                                         input.name, dataTypeName(input.type)));
  }
}

void checkBatchOfOne(const InputShapeInfo& input, const std::string& file, const char* what) {
  if (!input.rankKnown || input.dims.empty() || !input.dims[0] || *input.dims[0] == 1) return;
  throw inputError(file, fmt::format("input '{}' takes a batch of {}: one {} file is one sample "
                                     "of batch 1 (export the model with a batch of 1 or an open "
                                     "batch dim)",
                                     input.name, *input.dims[0], what));
}

std::optional<int64_t> staticDim(const InputShapeInfo& input, size_t rank, size_t axis) {
  if (!input.rankKnown || input.dims.size() != rank) return std::nullopt;
  return input.dims[axis];
}

void checkShapeFits(const interp::Shape& shape, const InputShapeInfo& input,
                    const std::string& file, const char* what) {
  if (!input.rankKnown) return;
  bool fits = shape.size() == input.dims.size();
  for (size_t i = 0; fits && i < shape.size(); ++i) {
    fits = !input.dims[i] || *input.dims[i] == shape[i];
  }
  if (!fits) {
    throw inputError(file, fmt::format("the {} gives {} but input '{}' is {}", what,
                                       formatShape(shape), input.name, formatDims(input.dims)));
  }
}

interp::Array makeArray(const InputShapeInfo& input, interp::Shape shape,
                        std::span<const double> values, const std::string& file) {
  DataType type = input.type == DataType::Undefined ? DataType::Float : input.type;
  if (type == DataType::Float) {
    interp::Array array(type, std::move(shape));
    std::transform(values.begin(), values.end(), array.data<float>(),
                   [](double v) { return static_cast<float>(v); });
    return array;
  }
  if (type == DataType::Double) {
    interp::Array array(type, std::move(shape));
    std::copy(values.begin(), values.end(), array.data<double>());
    return array;
  }
  if (isIntegerInput(type)) {
    double low = type == DataType::UInt8 ? 0 : -128, high = type == DataType::UInt8 ? 255 : 127;
    for (double value : values) {
      if (std::nearbyint(value) < low || std::nearbyint(value) > high) {
        throw inputError(file, fmt::format("the value {} does not fit input '{}' ({})", value,
                                           input.name, dataTypeName(type)));
      }
    }
  }
  // Float16 and bfloat16 round to nearest even from the double; integers round to nearest even.
  return interp::Array::fromTensor(Tensor::fromDoubles(type, std::move(shape), values));
}

}  // namespace qopt::media::detail
