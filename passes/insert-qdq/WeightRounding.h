// Output-aware rounding of the weights insert-qdq quantizes: GPTQ (Frantar et al. 2023) at the
// per-channel scales that round to nearest chooses. A layer's output error on its calibration
// inputs X is sum over output channels n of dw_n^T H dw_n with H = X^T X; rounding the input
// rows one after another and spreading each row's rounding error over the rows not yet rounded
// (weighted by H^-1) makes the errors of correlated inputs cancel. Round to nearest ignores H:
// a depthwise 3x3 kernel whose centre dominates (a re-parameterized identity branch) rounds its
// small neighbours to a few levels, and on an image, whose neighbouring pixels are nearly equal,
// those errors add up instead of cancelling. The scales and codes stay what TensorRT reads: only
// which code each weight gets changes.
//
// The rows X: a Conv's im2col patches per group (1-D and 2-D convolutions, any stride, dilation,
// padding or auto_pad), the last-dim vectors of a MatMul's or Gemm's activation input. At most
// kMaxGramRowsPerSample rows per sample and group are kept, evenly spaced, so large feature maps
// cost what small ones do.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "Placement.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassContext.h"
#include "qopt/qdq/QuantNumbers.h"

namespace qopt::qdq {

inline constexpr int64_t kMaxGramRowsPerSample = 4096;
/// GPTQ rounds a weight only when its layer saw at least this many rows per input (row width k).
inline constexpr int64_t kMinRowsPerInput = 4;

/// What a weight multiplies, per group of the weight (a Conv's groups; one for Gemm and
/// MatMul): H = X^T X over the rows X of that group (k x k, row-major, symmetric).
struct InputGram {
  int64_t k = 0;
  int64_t rows = 0;  // rows summed into each group's H
  std::vector<std::vector<double>> grams;
};

/// The Gram matrices of the sites' inputs, each computed once: layers that read one activation
/// the same way (Q, K and V projections) share it.
struct CapturedGrams {
  std::vector<InputGram> grams;
  std::map<size_t, size_t> gramOf;        // site index -> index into grams
  std::map<size_t, std::string> skipped;  // site index -> why its input gave no H
  size_t samples = 0;

  /// The H of site `site`, or nullptr.
  const InputGram* of(size_t site) const;
};

/// Runs `model` on at most `limit` samples (0: all) of --calib-data and sums the H of every site
/// GPTQ can round: a Conv with a 3-D or 4-D weight at input 1, a Gemm, or a MatMul with a 2-D
/// weight at input 1, quantized per output channel or per tensor. A site whose input has another
/// shape at run time than its weight needs is skipped, with the reason.
CapturedGrams captureInputGrams(const Model& model, const std::vector<WeightSite>& sites,
                                PassContext& context, size_t limit);

struct GptqOutcome {
  double nearestError = 0;  // sum_n dw_n^T H dw_n with round to nearest
  double gptqError = 0;     // and with the codes GPTQ chose (never more: else nearest is kept)
};

/// Replaces the codes of `quantized` (from quantizeWeight on `weight`, whose scales it keeps) by
/// GPTQ's, against H plus the input's quantization noise (variance `inputNoise` per element).
/// nullopt, with `why`, when H cannot be factored. Works in `gram`'s storage and frees each
/// group's H when done with it.
std::optional<GptqOutcome> roundWithGptq(const Tensor& weight, const WeightSite& site,
                                         InputGram gram, DataType type, double inputNoise,
                                         QuantizedWeight& quantized, std::string& why);

/// Every weight of `sites` quantized once per (weight, axis) to `type`, rounded to nearest.
PlannedWeights quantizePlannedWeights(const std::vector<WeightSite>& sites, DataType type);

/// The codes of `planned` chosen again by GPTQ where the layer allows it, on at most `limit`
/// samples (0: all) of --calib-data (none given: left as they are). `inputNoise` holds the
/// variance of the quantization error of each quantized layer input (scale^2 / 12 for an integer
/// grid). Remarks (why a weight keeps round to nearest, the error GPTQ saved) go to `result`.
void roundPlannedWeights(PlannedWeights& planned, const Model& model,
                         const std::vector<WeightSite>& sites, DataType type,
                         const std::unordered_map<const Value*, double>& inputNoise,
                         PassContext& context, size_t limit, PassResult& result);

/// GPTQ on one K x N row-major matrix w (row = input, column = output channel with scale
/// scales[n]) against the k x k H: the values (multiples of each column's scale on `type`'s
/// grid) it rounds w to, rows in act order (largest H_kk first). Empty when H cannot be factored.
/// Works in h's storage (no copy of a K x K matrix) and leaves it as it was.
std::vector<double> gptqColumns(const std::vector<double>& w, int64_t k, int64_t n,
                                std::vector<double>& h, const std::vector<double>& scales,
                                DataType type);

/// sum over columns n of d_n^T H d_n for the K x N row-major d.
double outputError(const std::vector<double>& h, const std::vector<double>& d, int64_t k,
                   int64_t n);

}  // namespace qopt::qdq
