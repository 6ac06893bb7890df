#include "BiasAbsorption.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace qopt::equalize {

std::string absorptionRefusal(const LayerPair& pair) {
  if (pair.activation == nullptr) return "no Relu between the layers";
  if (!pair.first->canHoldBias()) {
    return fmt::format("{} has no bias to give", pair.first->node().describe());
  }
  const Node& second = pair.second->node();
  switch (pair.second->kind()) {
    case LayerKind::MatMul:
      return fmt::format("{} has no bias to take W2 c", second.describe());
    case LayerKind::ConvTranspose:
      return fmt::format("{} adds a varying number of kernel taps at its borders",
                         second.describe());
    case LayerKind::Conv: {
      std::string autoPad = second.attrString("auto_pad", "NOTSET");
      std::vector<int64_t> pads = second.attrInts("pads");
      bool padded = (autoPad != "NOTSET" && autoPad != "VALID") ||
                    std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
      if (padded) {
        return fmt::format(
            "{} pads its input: padding reads 0 where the shifted input would "
            "need c",
            second.describe());
      }
      return "";
    }
    case LayerKind::Gemm:
      return "";
  }
  return "";
}

std::vector<double> absorbableShift(std::span<const double> minimum, std::span<const double> mean,
                                    std::span<const double> standardDeviation) {
  std::vector<double> shift(minimum.size(), 0.0);
  for (size_t i = 0; i < shift.size(); ++i) {
    double c = std::min(minimum[i], mean[i] - 3 * standardDeviation[i]);
    shift[i] = std::isfinite(c) && c > 0 ? c : 0.0;
  }
  return shift;
}

void absorbShift(LayerPair& pair, std::span<const double> shift) {
  std::vector<double> negated(shift.begin(), shift.end());
  for (double& v : negated) v = -v;
  pair.first->addToBias(negated);
  std::vector<double> delta = pair.second->outputForConstantInput(shift);
  pair.second->addToBias(delta);
}

}  // namespace qopt::equalize
