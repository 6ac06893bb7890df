// The probe that judges calibrator=auto's candidates: the consumers' error with a tensor
// fake-quantized at each candidate (see qopt/quant/AutoCalibration.h).
#pragma once

#include <span>
#include <vector>

#include "qopt/analysis/SampleStream.h"
#include "qopt/quant/AutoCalibration.h"

namespace qopt::quant {

struct ProbeTensor {
  size_t index = 0;  // the caller's own index, carried along
  const Value* value = nullptr;
  std::vector<Use> uses;
  std::vector<FakeQuantization> candidates;
};

/// For each tensor (outer) and candidate (inner): the mean over its consumers of noise / signal
/// of the consumer's first output over `samples`. A consumer whose float output is all 0 counts
/// 0 when its twin is 0 too, else infinity.
std::vector<std::vector<double>> measureConsumerErrors(analysis::SampleWorkers& workers,
                                                       const Model& model,
                                                       std::span<const ProbeTensor> tensors,
                                                       const QuantizedWeights& weights,
                                                       std::span<const analysis::Sample> samples);

}  // namespace qopt::quant
