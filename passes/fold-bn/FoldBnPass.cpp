// fold-bn: folds inference-mode BatchNormalization into the Conv, ConvTranspose, Gemm or MatMul
// that produces its input, exactly: the per-channel factors are computed in double and the new
// weights and biases rounded once to their type. Quantized weights (QuantizeLinear ->
// DequantizeLinear, or integers -> DequantizeLinear) keep their integers; their scales are
// rescaled per channel. Every BatchNormalization left alone gets a remark saying why.
#include <fmt/format.h>

#include <vector>

#include "BatchNormFactors.h"
#include "FoldBatchNorm.h"
#include "qopt/constants/ConstantCone.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class FoldBnPass : public Pass {
 public:
  FoldBnPass()
      : Pass("fold-bn",
             "Folds inference BatchNormalization into the preceding Conv, ConvTranspose, Gemm or "
             "MatMul weights") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    for (const char* name : {"bn-found", "bn-folded", "bn-kept"}) result.statistics[name] = 0;
    std::vector<Node*> batchNorms;
    model.graph().walk([&](Node* node) {
      if (node->is("BatchNormalization")) batchNorms.push_back(node);
    });
    // A BatchNorm after a QAT layer folds into its quantized weight only once the weight's
    // scale, computed in the graph by such exports, is the constant it always is.
    result.statistics["parameters-folded"] =
        batchNorms.empty() ? 0 : fold::foldQdqParameterCones(model, result);
    foldbn::FoldOptions options{*cloneSharedWeights_, *quantizedWeights_};
    for (Node* bn : batchNorms) {
      result.statistics.add("bn-found");
      std::string subject = bn->describe();
      foldbn::Refusal refusal;
      std::optional<foldbn::FoldOutcome> outcome;
      std::optional<foldbn::BatchNormFactors> factors = foldbn::readBatchNorm(*bn, refusal);
      if (factors) outcome = foldbn::foldIntoProducer(*bn, *factors, options, refusal);
      if (!outcome && factors && *standaloneToMulAdd_) {
        foldbn::Refusal why = refusal;
        outcome = foldbn::replaceByMulAdd(*bn, *factors, refusal);
        if (outcome) outcome->message += fmt::format(" (not folded: {})", why.message);
      }
      if (!outcome) {
        result.statistics.add("bn-kept");
        result.statistics.add(refusal.counter);
        result.missed(subject, "kept: " + refusal.message);
        continue;
      }
      result.changed = true;
      if (outcome->counter != "bn-to-mul-add") result.statistics.add("bn-folded");
      result.statistics.add(outcome->counter);
      if (outcome->quantized) result.statistics.add("quantized-weights-rescaled");
      if (outcome->cloned) result.statistics.add("weights-cloned");
      if (outcome->snapped > 0) result.statistics.add("weight-elements-snapped", outcome->snapped);
      result.applied(subject, outcome->message);
    }
    return result;
  }

 private:
  Option<bool> cloneSharedWeights_{
      *this, "clone-shared-weights", false,
      "Fold into a copy of a weight that other nodes also read (costs the copy's memory)"};
  Option<bool> quantizedWeights_{
      *this, "quantized-weights", true,
      "Fold into weights behind QuantizeLinear/DequantizeLinear by rescaling their scales"};
  Option<bool> standaloneToMulAdd_{
      *this, "standalone-to-mul-add", false,
      "Replace a BatchNormalization that cannot be folded by Mul and Add"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("fold-bn", QOPT_VERSION_STRING, qopt::FoldBnPass)
