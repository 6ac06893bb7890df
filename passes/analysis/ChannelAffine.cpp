#include "qopt/analysis/ChannelAffine.h"

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Tensor.h"

namespace qopt::analysis {
namespace {

constexpr const char* kTopic = "channel-affine";

std::vector<double> numbers(const Json& array) {
  std::vector<double> out;
  if (!array.isArray()) return out;
  for (const Json& v : array.asArray()) out.push_back(v.asDouble());
  return out;
}

Json toJson(std::span<const double> values) {
  Json out = Json::array();
  for (double v : values) out.push(v);
  return out;
}

ChannelAffine fromJson(const Json& entry) {
  ChannelAffine a;
  a.axis = entry["axis"].asInt();
  a.scale = numbers(entry["scale"]);
  a.offset = numbers(entry["offset"]);
  return a;
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
  Json& topic = context.results()[kTopic];
  std::vector<double> a(scale.begin(), scale.end());
  std::vector<double> b(offset.begin(), offset.end());
  if (b.empty()) b.assign(a.size(), 0.0);
  if (const Json* earlier = topic.find(tensor)) {
    // y = a2 * (a1 x + b1) + b2 = (a2 a1) x + (a2 b1 + b2)
    ChannelAffine first = fromJson(*earlier);
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
  Json entry = Json::object();
  entry["axis"] = axis;
  entry["scale"] = toJson(a);
  bool shifted = false;
  for (double v : b) shifted = shifted || v != 0.0;
  if (shifted) entry["offset"] = toJson(b);
  topic[tensor] = std::move(entry);
}

void recordChannelDivision(PassContext& context, const std::string& tensor, int64_t axis,
                           std::span<const double> divisors) {
  std::vector<double> inverse(divisors.size());
  for (size_t c = 0; c < divisors.size(); ++c) inverse[c] = 1.0 / divisors[c];
  recordChannelAffine(context, tensor, axis, inverse);
}

std::map<std::string, ChannelAffine> channelAffines(const PassContext& context) {
  std::map<std::string, ChannelAffine> out;
  const Json* topic = context.results().find(kTopic);
  if (topic == nullptr || !topic->isObject()) return out;
  for (const auto& [name, entry] : topic->asObject()) out[name] = fromJson(entry);
  return out;
}

}  // namespace qopt::analysis
