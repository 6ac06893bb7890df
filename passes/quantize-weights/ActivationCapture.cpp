#include "ActivationCapture.h"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/analysis/SampleStream.h"
#include "qopt/dense/DenseMath.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::wq {
namespace {

class RowCollector : public interp::CaptureObserver {
 public:
  RowCollector(const std::vector<const Value*>& values, const std::vector<int64_t>& widths,
               Keep keep, CapturedActivations& out)
      : keep_(keep), out_(out) {
    for (size_t i = 0; i < values.size(); ++i) {
      wanted_.insert(values[i]);
      widths_[values[i]] = widths[i];
      if (keep == Keep::Rows) {
        out_.rows[values[i]].k = widths[i];
      } else {
        out_.grams.emplace(values[i], dense::GramSum(widths[i]));
      }
    }
  }

  void finish() {
    for (auto& [value, g] : out_.grams) g.finish();
  }
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void captured(const Value& value, const interp::Array& array) override { add(&value, array); }

  void add(const Value* value, const interp::Array& array) {
    const int64_t k = widths_.at(value);
    if (array.rank() < 1 || array.dim(-1) != k) {
      throw Error(ErrorKind::Input, "", fmt::format("tensor '{}'", value->name()),
                  fmt::format("has last dim {} at run time; its MatMul weight has K={}",
                              array.rank() < 1 ? 0 : array.dim(-1), k));
    }
    if (keep_ == Keep::Gram) {
      const std::vector<double> x = analysis::toDoubles(array);
      out_.grams.at(value).add(x.data(), static_cast<int64_t>(x.size()) / k);
      return;
    }
    ActivationRows& rows = out_.rows.at(value);
    const size_t have = static_cast<size_t>(rows.rows());
    if (have >= kMaxActivationRows) return;
    const std::vector<float> values = array.toFloatVector();
    const size_t take = std::min(values.size() / static_cast<size_t>(k), kMaxActivationRows - have);
    rows.values.insert(rows.values.end(), values.begin(),
                       values.begin() + static_cast<std::ptrdiff_t>(take * static_cast<size_t>(k)));
  }

 private:
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, int64_t> widths_;
  Keep keep_;
  CapturedActivations& out_;
};

}  // namespace

CapturedActivations captureActivations(const Model& model, const std::vector<const Value*>& values,
                                       const std::vector<int64_t>& widths, PassContext& context,
                                       size_t limit, Keep keep, const std::string& passName,
                                       const std::string& method) {
  CapturedActivations captured;
  if (values.empty()) return captured;
  const Graph& graph = model.graph();
  // Samples stream through one interpreter: what is kept (rows up to kMaxActivationRows, or a
  // Gram matrix) does not grow with the data, and rows are taken in data order.
  analysis::SampleSource source =
      analysis::sampleSource(graph, context, /*preferEval=*/false, limit, kRandomAwqSamples);
  captured.origin = source.origin();
  if (source.isRandom()) {
    context.diagnostics().warning(
        fmt::format("{}: no --calib-data given: {} reads {} random samples; real activations "
                    "(their outlier channels and correlations) are what it needs",
                    passName, method, source.expectedCount().value_or(0)));
  }
  RowCollector collector(values, widths, keep, captured);
  interp::RunOptions options;  // one sample at a time (rows in order), each on every thread
  options.threads = static_cast<int>(context.resources.threadCount());
  interp::Interpreter interpreter(graph, options);
  size_t samples = 0;
  source.forEach([&](analysis::Sample& sample) {
    analysis::runningSample(sample, [&] { return interpreter.run(sample.inputs, &collector); });
    ++samples;
    return true;
  });
  if (samples == 0) {
    throw Error(ErrorKind::Input, context.data.calibData, {},
                fmt::format("{}: the calibration data holds no sample", passName));
  }
  collector.finish();
  captured.samples = samples;
  return captured;
}

}  // namespace qopt::wq
