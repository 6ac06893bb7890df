// Per-channel statistics of activations over the calibration data (--calib-data): the minimum,
// maximum, largest magnitude, mean and standard deviation of every channel, and optionally a
// deterministic sample of whole rows (one value per channel at one position) for passes that
// measure a layer's error.
//
// Shared by equalize (high-bias absorption needs each channel's minimum) and smooth (SmoothQuant
// needs each channel's largest magnitude, and rows to choose alpha on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"

namespace qopt::equalize {

struct ChannelRequest {
  const Value* value = nullptr;
  int64_t axis = 1;          // the channel axis (negative counts from the end)
  size_t rowsPerSample = 0;  // rows to keep from each sample (evenly spaced positions)
};

struct ChannelStatistics {
  int64_t channels = 0;
  std::vector<double> min, max, absMax;
  std::vector<double> sum, sumSquares;  // of the finite values
  std::vector<uint64_t> count;
  double mean(size_t c) const { return count[c] ? sum[c] / static_cast<double>(count[c]) : 0.0; }
  double standardDeviation(size_t c) const;
  std::vector<float> rows;  // kept rows, row-major: rows.size() / channels rows
  size_t rowCount() const { return channels ? rows.size() / static_cast<size_t>(channels) : 0; }
  /// Rows offered so far, and one of every rowStride of them is kept (see kMaxKeptRows).
  uint64_t rowsOffered = 0;
  uint64_t rowStride = 1;
};

/// The rows kept of one value at most: past it, every other kept row is dropped and from then
/// on one offered row in twice as many is kept. What is kept stays evenly spread over all the
/// samples (in data order, so deterministic) and does not grow with the data set.
inline constexpr size_t kMaxKeptRows = 4096;

/// Runs `model` over at most `sampleLimit` samples (0: all) of context.data.calibData and
/// returns the statistics of each requested value (by value). Throws qopt::Error naming the data
/// when it holds no sample or a value's channel count changes between samples, and naming the
/// value when it is not a float tensor with the channel axis.
std::map<const Value*, ChannelStatistics> collectChannelStatistics(
    const Model& model, const std::vector<ChannelRequest>& requests, PassContext& context,
    size_t sampleLimit, const std::string& passName, size_t* samplesSeen = nullptr);

}  // namespace qopt::equalize
