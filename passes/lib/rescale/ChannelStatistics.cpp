#include "qopt/rescale/ChannelStatistics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "qopt/analysis/Comparison.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/SampleCache.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::equalize {
namespace {

// Keeps rows 0, 2, 4, ... and halves the share of offered rows kept from now on.
void thinRows(ChannelStatistics& stats) {
  const auto width = static_cast<size_t>(stats.channels);
  size_t kept = 0;
  for (size_t r = 0; r < stats.rowCount(); r += 2, ++kept) {
    std::copy_n(stats.rows.begin() + static_cast<std::ptrdiff_t>(r * width), width,
                stats.rows.begin() + static_cast<std::ptrdiff_t>(kept * width));
  }
  stats.rows.resize(kept * width);
  stats.rowStride *= 2;
}

std::string tensorSubject(const Value& value) {
  return fmt::format("tensor '{}'", value.name());
}

class ChannelObserver : public interp::CaptureObserver {
 public:
  ChannelObserver(const Model& model, const std::vector<ChannelRequest>& requests) : model_(model) {
    for (const ChannelRequest& request : requests) {
      wanted_.insert(request.value);
      requests_[request.value] = request;
      statistics_[request.value];
    }
  }

  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }

  void captured(const Value& value, const interp::Array& array) override {
    auto found = requests_.find(&value);
    if (found == requests_.end()) return;
    const ChannelRequest& request = found->second;
    if (!isFloatingPoint(array.dataType())) {
      throw Error(ErrorKind::Input, model_.sourcePath, tensorSubject(value),
                  fmt::format("has element type {} when the model runs, not a float type",
                              dataTypeName(array.dataType())));
    }
    int64_t axis = request.axis < 0 ? request.axis + array.rank() : request.axis;
    if (axis < 0 || axis >= array.rank()) {
      throw Error(ErrorKind::Input, model_.sourcePath, tensorSubject(value),
                  fmt::format("has rank {} when the model runs; its channels are on axis {}",
                              array.rank(), request.axis));
    }
    int64_t channels = array.dim(axis);
    int64_t inner = 1;
    for (int64_t a = axis + 1; a < array.rank(); ++a) inner *= array.dim(a);
    int64_t outer = channels == 0 || inner == 0 ? 0 : array.numel() / (channels * inner);
    ChannelStatistics& stats = statistics_[&value];
    if (stats.channels == 0) {
      stats.channels = channels;
      stats.min.assign(static_cast<size_t>(channels), std::numeric_limits<double>::infinity());
      stats.max.assign(static_cast<size_t>(channels), -std::numeric_limits<double>::infinity());
      stats.absMax.assign(static_cast<size_t>(channels), 0.0);
      stats.sum.assign(static_cast<size_t>(channels), 0.0);
      stats.sumSquares.assign(static_cast<size_t>(channels), 0.0);
      stats.count.assign(static_cast<size_t>(channels), 0);
    } else if (stats.channels != channels) {
      throw Error(
          ErrorKind::Input, model_.sourcePath, tensorSubject(value),
          fmt::format("has {} channels on one sample and {} on another", stats.channels, channels));
    }
    std::vector<float> converted;
    const float* data = nullptr;
    if (array.dataType() == DataType::Float) {
      data = array.data<float>();
    } else {
      converted = array.toFloatVector();
      data = converted.data();
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t c = 0; c < channels; ++c) {
        const float* p = data + (o * channels + c) * inner;
        auto ci = static_cast<size_t>(c);
        double lo = stats.min[ci], hi = stats.max[ci], sum = 0, squares = 0;
        uint64_t finite = 0;
        for (int64_t i = 0; i < inner; ++i) {
          double v = p[i];
          if (!std::isfinite(v)) continue;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          sum += v;
          squares += v * v;
          ++finite;
        }
        stats.sum[ci] += sum;
        stats.sumSquares[ci] += squares;
        stats.count[ci] += finite;
        stats.min[ci] = lo;
        stats.max[ci] = hi;
        stats.absMax[ci] = std::max(stats.absMax[ci], std::max(std::fabs(lo), std::fabs(hi)));
      }
    }
    // Rows at evenly spaced positions: the same ones whatever the other samples hold.
    int64_t positions = outer * inner;
    auto keep = static_cast<int64_t>(
        std::min<size_t>(request.rowsPerSample, static_cast<size_t>(positions)));
    for (int64_t k = 0; k < keep; ++k) {
      int64_t position = k * positions / keep;
      int64_t o = position / inner, i = position % inner;
      if (stats.rowsOffered++ % stats.rowStride != 0) continue;
      for (int64_t c = 0; c < channels; ++c) {
        stats.rows.push_back(data[(o * channels + c) * inner + i]);
      }
      if (stats.rowCount() > kMaxKeptRows) thinRows(stats);
    }
  }

  std::map<const Value*, ChannelStatistics> take() { return std::move(statistics_); }

 private:
  const Model& model_;
  std::unordered_set<const Value*> wanted_;
  std::unordered_map<const Value*, ChannelRequest> requests_;
  std::map<const Value*, ChannelStatistics> statistics_;
};

}  // namespace

double ChannelStatistics::standardDeviation(size_t c) const {
  if (count[c] == 0) return 0.0;
  double m = mean(c);
  return std::sqrt(std::max(0.0, sumSquares[c] / static_cast<double>(count[c]) - m * m));
}

std::map<const Value*, ChannelStatistics> collectChannelStatistics(
    const Model& model, const std::vector<ChannelRequest>& requests, PassContext& context,
    size_t sampleLimit, const std::string& passName, size_t* samplesSeen) {
  const std::string& path = context.data.calibData;
  analysis::SampleCache& data =
      analysis::sampleCache(context, path, analysis::inputSpecs(model.graph(), context.data));
  ChannelObserver observer(model, requests);
  interp::RunOptions options;
  // One sample at a time, each on all of the run's threads: the order of the sums stays fixed.
  options.threads = static_cast<int>(context.resources.threadCount());
  interp::Interpreter interpreter(model.graph(), options);
  size_t samples = 0;
  data.forEach(
      [&](analysis::Sample& sample) {
        analysis::runningSample(sample, [&] {
          return interpreter.run(analysis::feedFor(model.graph(), sample.inputs), &observer);
        });
        ++samples;
        return true;
      },
      sampleLimit);
  if (samples == 0) {
    throw Error(ErrorKind::Input, path, {},
                fmt::format("{}: the calibration data holds no sample", passName));
  }
  if (samplesSeen) *samplesSeen = samples;
  return observer.take();
}

}  // namespace qopt::equalize
