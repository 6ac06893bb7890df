// Weight ranges: max |w| per output channel (or over the whole tensor), from the values.
#include <cmath>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/quant/Calibration.h"

namespace qopt::quant {

std::vector<double> weightAmax(const Tensor& weight, int64_t axis, std::string_view what) {
  auto fail = [&](const std::string& cause) {
    return Error(ErrorKind::Input, {}, std::string(what), cause);
  };
  if (!isFloatingPoint(weight.dataType())) {
    throw fail(fmt::format("has element type {}; only float weights are quantized",
                           dataTypeName(weight.dataType())));
  }
  const std::vector<int64_t>& dims = weight.dims();
  const auto rank = static_cast<int64_t>(dims.size());
  if (axis >= rank) {
    throw fail(fmt::format("axis {} is out of range for a weight of rank {}", axis, rank));
  }
  uint64_t channels = 1;
  uint64_t inner = 1;  // elements after the axis
  if (axis >= 0) {
    channels = static_cast<uint64_t>(dims[static_cast<size_t>(axis)]);
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= static_cast<uint64_t>(dims[static_cast<size_t>(d)]);
  }
  const std::vector<float> values = weight.toFloats();
  std::vector<double> amax(channels, 0.0);
  for (uint64_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (!std::isfinite(v)) {
      throw fail(fmt::format("holds {} at element {}; it cannot be quantized", v, i));
    }
    const uint64_t channel = axis >= 0 ? (i / inner) % channels : 0;
    amax[channel] = std::max(amax[channel], double{std::fabs(v)});
  }
  return amax;
}

}  // namespace qopt::quant
