// How far a model's outputs are from a reference model's on some samples, as the whole-model
// checks judge it (calibrator=auto's, bias-correct's): the mean over the outputs of noise /
// signal (sum of squared error over sum of squared reference, over the samples). An output that
// a Softmax, LogSoftmax or Sigmoid makes (through ops that only move values) is compared at that
// op's input, the logits: saturated probabilities differ from float by amounts that say little.
// Outputs whose numbers are typed and not float (argmax indices) are not compared; values are
// compared as flat lists (an opset conversion may have put the logits into a 2-D view).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/analysis/SpillStore.h"
#include "qopt/ir/Graph.h"

namespace qopt::quant {

class OutputNoise {
 public:
  /// Runs `reference` on the samples of `source` on `workers`, keeping its compared outputs in a
  /// SpillStore of `keptBytes` (memory, the rest in a temporary file). `source` and `workers`
  /// are kept by reference: they must outlive this object; of() reads `source` again.
  OutputNoise(analysis::SampleWorkers& workers, const Model& reference,
              analysis::SampleSource& source, uint64_t keptBytes, std::string doing);

  /// The noise / signal of `candidate`'s outputs, 0 when nothing is compared; nullopt when its
  /// outputs do not correspond to the reference's (another count, no logits where the reference
  /// has them, another number of values).
  std::optional<double> of(const Model& candidate) const;
  /// The samples compared.
  size_t samples() const { return expected_.size(); }

 private:
  analysis::SampleWorkers& workers_;
  analysis::SampleSource& source_;
  std::string doing_;
  size_t outputs_ = 0;
  std::vector<bool> compared_;  // by reference output: its numbers are float
  std::vector<bool> atLogits_;  // by reference output: compared at its logits
  analysis::SpillStore expected_;
};

}  // namespace qopt::quant
