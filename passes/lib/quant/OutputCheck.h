// calibrator=auto's whole-model check: the model's outputs with every judged tensor
// fake-quantized at once (and the weights quantized), for a few assignments of thresholds,
// against the float model's outputs on the same samples.
#pragma once

#include <span>
#include <vector>

#include "qopt/analysis/SampleStream.h"
#include "qopt/quant/AutoCalibration.h"

namespace qopt::quant {

struct QuantizedTensor {
  const Value* value = nullptr;
  FakeQuantization quantization;
};

/// For each assignment: the mean over the graph's float outputs of noise / signal (sums over
/// `samples`, OutputNoise.h) of the model with those tensors read through Q/DQ and `weights`
/// in their quantized form. An output made by a Softmax, LogSoftmax or Sigmoid (through
/// Reshape, Transpose and the like) is compared at that op's input, the logits. An
/// output that is all 0 in float counts 0 when it stays 0, else infinity. Samples run in
/// parallel; the result does not depend on the thread count.
std::vector<double> measureOutputErrors(analysis::SampleWorkers& workers, const Model& model,
                                        std::span<const std::vector<QuantizedTensor>> assignments,
                                        const QuantizedWeights& weights,
                                        std::span<const analysis::Sample> samples);

}  // namespace qopt::quant
