#include "qopt/analysis/ChannelAffine.h"

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Tensor.h"

namespace qopt::analysis {
namespace {

constexpr const char* kTopic = "channel-affine";

// The records, typed, for the passes that read them; the JSON topic is what reports show.
struct ChannelAffineRecords {
  std::map<std::string, ChannelAffine> byTensor;
};

Json toJson(std::span<const double> values) {
  Json out = Json::array();
  for (double v : values) out.push(v);
  return out;
}

}  // namespace

interp::Array ChannelAffine::undo(const interp::Array& changed) const {
  const int64_t rank = changed.rank();
  const int64_t resolved = axis < 0 ? axis + rank : axis;
  if (resolved < 0 || resolved >= rank ||
      changed.dim(resolved) != static_cast<int64_t>(scale.size())) {
    return changed;
  }
  int64_t inner = 1;
  for (int64_t d = resolved + 1; d < rank; ++d) inner *= changed.dim(d);
  const auto channels = static_cast<int64_t>(scale.size());
  std::vector<double> values(static_cast<size_t>(changed.numel()));
  for (int64_t i = 0; i < changed.numel(); ++i) {
    const auto c = static_cast<size_t>((i / inner) % channels);
    const double b = offset.empty() ? 0.0 : offset[c];
    values[static_cast<size_t>(i)] = (changed.getDouble(i) - b) / scale[c];
  }
  const std::vector<int64_t> dims(changed.shape().begin(), changed.shape().end());
  return interp::Array::fromTensor(Tensor::fromDoubles(changed.dataType(), dims, values));
}

void recordChannelAffine(PassContext& context, const std::string& tensor, int64_t axis,
                         std::span<const double> scale, std::span<const double> offset) {
  auto& records = context.analysis<ChannelAffineRecords>(
      kTopic, PassContext::AnalysisScope::Outcome, [] { return ChannelAffineRecords{}; });
  std::vector<double> a(scale.begin(), scale.end());
  std::vector<double> b(offset.begin(), offset.end());
  if (b.empty()) b.assign(a.size(), 0.0);
  if (auto earlier = records.byTensor.find(tensor); earlier != records.byTensor.end()) {
    // y = a2 * (a1 x + b1) + b2 = (a2 a1) x + (a2 b1 + b2)
    const ChannelAffine& first = earlier->second;
    if (first.scale.size() != a.size() || first.axis != axis) {
      throw Error(ErrorKind::Internal, {}, fmt::format("tensor '{}'", tensor),
                  "rescaled twice along different channels");
    }
    for (size_t c = 0; c < a.size(); ++c) {
      const double b1 = first.offset.empty() ? 0.0 : first.offset[c];
      b[c] += a[c] * b1;
      a[c] *= first.scale[c];
    }
  }
  bool shifted = false;
  for (double v : b) shifted = shifted || v != 0.0;
  Json entry = Json::object();
  entry["axis"] = axis;
  entry["scale"] = toJson(a);
  if (shifted) entry["offset"] = toJson(b);
  context.results()[kTopic][tensor] = std::move(entry);
  records.byTensor[tensor] =
      ChannelAffine{axis, std::move(a), shifted ? std::move(b) : std::vector<double>{}};
}

void recordChannelDivision(PassContext& context, const std::string& tensor, int64_t axis,
                           std::span<const double> divisors) {
  std::vector<double> inverse(divisors.size());
  for (size_t c = 0; c < divisors.size(); ++c) inverse[c] = 1.0 / divisors[c];
  recordChannelAffine(context, tensor, axis, inverse);
}

std::map<std::string, ChannelAffine> channelAffines(const PassContext& context) {
  const auto* records = context.findAnalysis<ChannelAffineRecords>(kTopic);
  return records == nullptr ? std::map<std::string, ChannelAffine>{} : records->byTensor;
}

}  // namespace qopt::analysis
