#include "qopt/analysis/DataRange.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "qopt/analysis/Precision.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/constants/NodeEvaluator.h"

namespace qopt::analysis {

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// A Conv reading `input` as its data, with constant weights, whose output a
// BatchNormalization reads as its data.
struct FirstLayer {
  const Node* conv = nullptr;
  const Node* norm = nullptr;
};

std::optional<FirstLayer> firstLayer(const Value* input) {
  for (const Use& use : input->uses()) {
    const Node* conv = use.user;
    if (conv->opType() != "Conv" || !conv->domain().empty() || use.index != 0) continue;
    if (!fold::isConstantValue(conv->input(1))) continue;
    if (conv->numInputs() > 2 && conv->input(2) && !fold::isConstantValue(conv->input(2))) continue;
    for (const Use& next : conv->output(0)->uses()) {
      if (next.user->opType() == "BatchNormalization" && next.index == 0) {
        return FirstLayer{conv, next.user};
      }
    }
  }
  return std::nullopt;
}

// Per channel (axis 1) mean and standard deviation of an [N, C, ...] tensor.
void channelMoments(const Tensor& t, std::vector<double>& mean, std::vector<double>& stdev) {
  const std::vector<double> values = t.toDoubles();
  const std::vector<int64_t>& dims = t.dims();
  const int64_t n = dims[0];
  const int64_t c = dims[1];
  int64_t inner = 1;
  for (size_t d = 2; d < dims.size(); ++d) inner *= dims[d];
  mean.assign(static_cast<size_t>(c), 0.0);
  stdev.assign(static_cast<size_t>(c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0;
    double squares = 0;
    for (int64_t b = 0; b < n; ++b) {
      const double* p = values.data() + (b * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        sum += p[i];
        squares += p[i] * p[i];
      }
    }
    const double count = static_cast<double>(n * inner);
    const double m = sum / count;
    mean[static_cast<size_t>(ch)] = m;
    stdev[static_cast<size_t>(ch)] = std::sqrt(std::max(0.0, squares / count - m * m));
  }
}

}  // namespace

std::vector<std::string> dataRangeWarnings(const Graph& graph, const Sample& sample, double ratio) {
  std::vector<std::string> warnings;
  for (const Value* input : graph.inputs()) {
    auto fed = sample.inputs.find(input->name());
    if (fed == sample.inputs.end() || !isFloatingPoint(fed->second.dataType())) continue;
    std::optional<FirstLayer> layer = firstLayer(input);
    if (!layer) continue;
    const Node& norm = *layer->norm;
    std::optional<Tensor> runningMean = fold::constantOf(norm.input(3));
    std::optional<Tensor> runningVar = fold::constantOf(norm.input(4));
    if (!runningMean || !runningVar) continue;
    std::vector<std::optional<Tensor>> inputs;
    for (size_t i = 0; i < layer->conv->numInputs(); ++i) {
      if (i == 0) {
        inputs.push_back(fed->second.toTensor());
      } else {
        inputs.push_back(layer->conv->input(i) ? fold::constantOf(layer->conv->input(i))
                                               : std::nullopt);
      }
    }
    std::vector<Tensor> out;
    try {
      out = fold::evaluateNode(*layer->conv, inputs, uint64_t{1} << 30);
    } catch (const Error&) {
      continue;  // a run of the model reports what is wrong with the data
    }
    if (out.empty() || out[0].dims().size() < 2) continue;
    std::vector<double> mean;
    std::vector<double> stdev;
    channelMoments(out[0], mean, stdev);
    const std::vector<double> trainedMean = runningMean->toDoubles();
    const std::vector<double> trainedVar = runningVar->toDoubles();
    if (trainedMean.size() != mean.size() || trainedVar.size() != mean.size()) continue;
    std::vector<double> spread;
    std::vector<double> offset;
    for (size_t c = 0; c < mean.size(); ++c) {
      const double trained = std::sqrt(trainedVar[c]);
      if (!(trained > 1e-6) || !(stdev[c] > 0)) continue;  // dead or constant channels say nothing
      spread.push_back(stdev[c] / trained);
      offset.push_back(std::abs(mean[c] - trainedMean[c]) / trained);
    }
    if (spread.size() < 2) continue;
    const double s = median(spread);
    const double o = median(offset);
    const std::string where = fmt::format("input '{}' ({}): Conv '{}' gives it outputs",
                                          input->name(), sample.source, layerName(*layer->conv));
    if (s > ratio || s < 1.0 / ratio || o > ratio) {
      warnings.push_back(fmt::format(
          "{} {:.3g} times as spread and {:.3g} standard deviations off what its "
          "BatchNormalization '{}' saw in training (median over channels): the data may be "
          "scaled or normalized differently from the model's training (check --preprocess "
          "scale, mean, std and channels)",
          where, s, o, layerName(norm)));
    }
  }
  return warnings;
}

}  // namespace qopt::analysis
