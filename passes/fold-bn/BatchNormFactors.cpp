#include "BatchNormFactors.h"

#include <fmt/format.h>

#include <cmath>

#include "qopt/constants/ConstantValue.h"

namespace qopt::foldbn {
namespace {

constexpr const char* kParamNames[] = {"scale", "bias", "mean", "variance"};

std::optional<BatchNormFactors> refuse(Refusal& refusal, std::string counter, std::string message) {
  refusal = {std::move(counter), std::move(message)};
  return std::nullopt;
}

}  // namespace

std::optional<BatchNormFactors> readBatchNorm(const Node& bn, Refusal& refusal) {
  std::optional<int64_t> opset = bn.graph()->model().opsetVersion("");
  if (!opset) return refuse(refusal, "missed-no-opset", "the model imports no default opset");
  if (*opset < 7 && bn.attrInt("is_test", 0) == 0) {
    return refuse(refusal, "missed-training-mode", "is_test=0: it runs in training mode");
  }
  if (*opset >= 7 && *opset < 9 && bn.attrInt("spatial", 1) == 0) {
    return refuse(refusal, "missed-per-activation",
                  "spatial=0: its statistics are per activation, not per channel");
  }
  if (bn.attrInt("training_mode", 0) != 0) {
    return refuse(refusal, "missed-training-mode", "training_mode=1: it runs in training mode");
  }
  for (size_t i = 1; i < bn.numOutputs(); ++i) {
    const Value* out = bn.output(i);
    if (!out->isAbsent() && (out->hasUses() || out->isGraphOutput())) {
      return refuse(refusal, "missed-training-mode",
                    fmt::format("its statistics output '{}' is read (training mode)", out->name()));
    }
  }
  if (bn.numInputs() < 5 || bn.input(0) == nullptr) {
    return refuse(refusal, "missed-malformed", "it does not have five inputs");
  }

  std::vector<double> params[4];
  for (size_t i = 0; i < 4; ++i) {
    const Value* v = bn.input(i + 1);
    std::optional<Tensor> t = v ? fold::constantThroughCasts(v) : std::nullopt;
    if (!t) {
      return refuse(refusal, "missed-non-constant-params",
                    fmt::format("its {} '{}' is not a constant", kParamNames[i],
                                v ? v->name() : std::string()));
    }
    if (!isFloatingPoint(t->dataType())) {
      return refuse(refusal, "missed-malformed",
                    fmt::format("its {} '{}' is of type {}", kParamNames[i], v->name(),
                                dataTypeName(t->dataType())));
    }
    params[i] = t->toDoubles();
  }
  size_t channels = params[0].size();
  if (channels == 0) return refuse(refusal, "missed-malformed", "its scale is empty");
  for (size_t i = 1; i < 4; ++i) {
    if (params[i].size() != channels) {
      return refuse(refusal, "missed-malformed",
                    fmt::format("its {} has {} values but its scale has {}", kParamNames[i],
                                params[i].size(), channels));
    }
  }

  // The attribute is a float: the runtime adds exactly this float to the variance.
  double epsilon = static_cast<double>(bn.attrFloat("epsilon", 1e-5f));
  BatchNormFactors factors;
  factors.channels = static_cast<int64_t>(channels);
  factors.scale.resize(channels);
  factors.shift.resize(channels);
  for (size_t c = 0; c < channels; ++c) {
    double gamma = params[0][c], beta = params[1][c], mean = params[2][c], var = params[3][c];
    double denominator = var + epsilon;
    if (!(denominator > 0) || !std::isfinite(denominator)) {
      return refuse(
          refusal, "missed-bad-statistics",
          fmt::format("variance + epsilon of channel {} is {}, not positive", c, denominator));
    }
    double scale = gamma / std::sqrt(denominator);
    double shift = beta - mean * scale;
    if (!std::isfinite(scale) || !std::isfinite(shift)) {
      return refuse(refusal, "missed-bad-statistics",
                    fmt::format("channel {} has non-finite statistics", c));
    }
    factors.scale[c] = scale;
    factors.shift[c] = shift;
  }
  return factors;
}

}  // namespace qopt::foldbn
