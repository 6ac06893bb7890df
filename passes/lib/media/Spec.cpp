// The --preprocess spec: `key=value` words, parsed strictly (an unknown key, a bad value or a
// key given twice is an error naming the word), and printed back canonically, so that a run's
// report shows the spec that parses to the same preprocessing.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media {

namespace {

using detail::usageError;
using Spec = PreprocessSpec;

constexpr std::array<std::string_view, 14> kKeys = {
    "resize", "keep-aspect", "pad-value", "pad-align", "resample", "channels", "layout",
    "rate",   "frames",      "hop",       "scale",     "mean",     "std",      "input"};

std::optional<double> parseReal(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || stop != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<int64_t> parsePositive(std::string_view text, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || stop != end || value < 1 || value > max) return std::nullopt;
  return value;
}

// A real number, or a fraction a/b of two (so that scale=1/255 reads as written).
std::optional<double> parseRealOrFraction(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return parseReal(text);
  auto numerator = parseReal(text.substr(0, slash));
  auto denominator = parseReal(text.substr(slash + 1));
  if (!numerator || !denominator || *denominator == 0) return std::nullopt;
  double value = *numerator / *denominator;
  return std::isfinite(value) ? std::optional(value) : std::nullopt;
}

std::optional<std::vector<double>> parseChannelValues(std::string_view text, bool nonZero) {
  std::vector<double> values;
  for (size_t start = 0;;) {
    size_t comma = text.find(',', start);
    auto value = parseReal(text.substr(start, comma - start));
    if (!value || (nonZero && *value == 0)) return std::nullopt;
    values.push_back(*value);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (values.size() != 1 && values.size() != 3) return std::nullopt;
  return values;
}

template <class T>
T choose(std::string_view key, std::string_view value,
         std::initializer_list<std::pair<std::string_view, T>> choices) {
  std::string names;
  for (const auto& [name, choice] : choices) {
    if (name == value) return choice;
    names += names.empty() ? std::string(name) : "|" + std::string(name);
  }
  throw usageError(fmt::format("{}={}: expected {}", key, value, names));
}

template <class T>
T require(std::optional<T> parsed, std::string_view key, std::string_view value,
          std::string_view expected) {
  if (!parsed) throw usageError(fmt::format("{}={}: expected {}", key, value, expected));
  return *parsed;
}

void setKey(Spec& spec, std::string_view key, std::string_view value) {
  if (key == "resize") {
    size_t x = value.find_first_of("xX");
    std::optional<int64_t> width, height;
    if (x != std::string_view::npos) {
      width = parsePositive(value.substr(0, x), detail::kMaxImageSide);
      height = parsePositive(value.substr(x + 1), detail::kMaxImageSide);
    }
    if (!width || !height) {
      throw usageError(fmt::format("resize={}: expected WxH, two integers 1 to 65535", value));
    }
    spec.width = width;
    spec.height = height;
  } else if (key == "keep-aspect") {
    spec.aspect = choose<Spec::Aspect>(
        key, value,
        {{"no", Spec::Aspect::Stretch}, {"pad", Spec::Aspect::Pad}, {"crop", Spec::Aspect::Crop}});
  } else if (key == "pad-value") {
    auto pad = parseReal(value);
    if (pad && (*pad < 0 || *pad > 255)) pad.reset();
    spec.padValue = require(pad, key, value, "a number from 0 to 255");
  } else if (key == "pad-align") {
    spec.padTopLeft = choose<bool>(key, value, {{"center", false}, {"top-left", true}});
  } else if (key == "resample") {
    spec.nearest = choose<bool>(key, value, {{"bilinear", false}, {"nearest", true}});
  } else if (key == "channels") {
    spec.channels = choose<Spec::Channels>(key, value,
                                           {{"rgb", Spec::Channels::Rgb},
                                            {"bgr", Spec::Channels::Bgr},
                                            {"gray", Spec::Channels::Gray}});
  } else if (key == "layout") {
    spec.layout = choose<Spec::Layout>(key, value,
                                       {{"nchw", Spec::Layout::Nchw},
                                        {"nhwc", Spec::Layout::Nhwc},
                                        {"chw", Spec::Layout::Chw},
                                        {"hwc", Spec::Layout::Hwc}});
  } else if (key == "rate") {
    spec.rate = require(parsePositive(value, 1'000'000'000), key, value, "a rate in Hz");
  } else if (key == "frames" || key == "hop") {
    (key == "frames" ? spec.frames : spec.hop) = require(
        parsePositive(value, detail::kMaxAudioSamples), key, value, "a positive number of samples");
  } else if (key == "scale") {
    spec.scale = require(parseRealOrFraction(value), key, value, "a number or a fraction a/b");
  } else if (key == "mean" || key == "std") {
    bool isStd = key == "std";
    (isStd ? spec.std : spec.mean) =
        require(parseChannelValues(value, isStd), key, value,
                isStd ? "one or three non-zero numbers, comma-separated"
                      : "one or three numbers, comma-separated");
  } else {
    if (value.empty()) throw usageError("input=: expected the name of a model input");
    spec.input = std::string(value);
  }
}

// The shortest text that reads back to the same double.
std::string formatReal(double value) {
  return fmt::format("{}", value);
}

// A scale 1/k is printed so where that reads back exactly: scale=1/255 stays as written.
std::string formatScale(double value) {
  if (value > 0 && value < 1) {
    double k = std::round(1 / value);
    if (k <= 1e15 && 1 / k == value) return fmt::format("1/{}", static_cast<int64_t>(k));
  }
  return formatReal(value);
}

std::string formatValues(const std::vector<double>& values) {
  std::string text;
  for (double value : values) text += (text.empty() ? "" : ",") + formatReal(value);
  return text;
}

}  // namespace

PreprocessSpec PreprocessSpec::parse(std::string_view text) {
  PreprocessSpec spec;
  std::set<std::string_view> seen;
  constexpr std::string_view kSpace = " \t\r\n";
  for (size_t start = text.find_first_not_of(kSpace); start != std::string_view::npos;
       start = text.find_first_not_of(kSpace, start)) {
    size_t end = std::min(text.find_first_of(kSpace, start), text.size());
    std::string_view word = text.substr(start, end - start);
    start = end;
    size_t equals = word.find('=');
    if (equals == std::string_view::npos) {
      throw usageError(fmt::format("'{}' is not key=value", word));
    }
    std::string_view key = word.substr(0, equals);
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      throw usageError(fmt::format("unknown key '{}' (keys: {})", key, fmt::join(kKeys, ", ")));
    }
    if (!seen.insert(key).second) throw usageError(fmt::format("key '{}' given twice", key));
    setKey(spec, key, word.substr(equals + 1));
  }
  return spec;
}

std::string PreprocessSpec::toString() const {
  const PreprocessSpec defaults;
  std::vector<std::string> words;
  if (width && height) words.push_back(fmt::format("resize={}x{}", *width, *height));
  if (aspect != defaults.aspect) {
    words.push_back(aspect == Aspect::Pad ? "keep-aspect=pad" : "keep-aspect=crop");
  }
  if (padValue != defaults.padValue) words.push_back("pad-value=" + formatReal(padValue));
  if (padTopLeft) words.push_back("pad-align=top-left");
  if (nearest) words.push_back("resample=nearest");
  if (channels != defaults.channels) {
    words.push_back(channels == Channels::Rgb   ? "channels=rgb"
                    : channels == Channels::Bgr ? "channels=bgr"
                                                : "channels=gray");
  }
  if (layout != defaults.layout) {
    constexpr std::array<const char*, 5> kLayouts = {"", "nchw", "nhwc", "chw", "hwc"};
    words.push_back(fmt::format("layout={}", kLayouts[static_cast<size_t>(layout)]));
  }
  if (rate) words.push_back(fmt::format("rate={}", *rate));
  if (frames) words.push_back(fmt::format("frames={}", *frames));
  if (hop) words.push_back(fmt::format("hop={}", *hop));
  if (scale) words.push_back("scale=" + formatScale(*scale));
  if (!mean.empty()) words.push_back("mean=" + formatValues(mean));
  if (!std.empty()) words.push_back("std=" + formatValues(std));
  if (!input.empty()) words.push_back("input=" + input);
  return fmt::format("{}", fmt::join(words, " "));
}

}  // namespace qopt::media
