// Image geometry on 8-bit pixels, as the Python pipelines that trained the models do it
// (PIL's convert, then OpenCV's or PIL's resize, then a letterbox or a centre crop), so that the
// calibration data looks like the training data. Every step rounds back to 8 bits, as theirs do.
#include <algorithm>
#include <cmath>

#include "MediaSupport.h"

namespace qopt::media::detail {

namespace {

uint8_t roundToByte(double value) {
  return static_cast<uint8_t>(std::clamp(std::floor(value + 0.5), 0.0, 255.0));
}

// For one axis: the two source pixels and the weight of the second, per destination pixel.
struct Taps {
  std::vector<int64_t> first, second;
  std::vector<double> weight;
};

// OpenCV's INTER_LINEAR: half-pixel centres, clamped at the borders (which is also what PIL's
// triangle filter gives when enlarging). Shrinking reads two pixels and does not antialias.
Taps linearTaps(int64_t in, int64_t out) {
  Taps taps;
  double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t d = 0; d < out; ++d) {
    double position = (static_cast<double>(d) + 0.5) * scale - 0.5;
    double floor = std::floor(position);
    int64_t s = static_cast<int64_t>(floor);
    double weight = position - floor;
    if (s < 0) s = 0, weight = 0;
    if (s >= in - 1) s = in - 1, weight = 0;
    taps.first.push_back(s);
    taps.second.push_back(std::min(s + 1, in - 1));
    taps.weight.push_back(weight);
  }
  return taps;
}

// PIL's NEAREST: the source pixel under the destination pixel's centre.
Taps nearestTaps(int64_t in, int64_t out) {
  Taps taps;
  double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t d = 0; d < out; ++d) {
    auto s = static_cast<int64_t>(std::floor((static_cast<double>(d) + 0.5) * scale));
    s = std::min(s, in - 1);
    taps.first.push_back(s);
    taps.second.push_back(s);
    taps.weight.push_back(0);
  }
  return taps;
}

}  // namespace

Image convertChannels(const Image& image, int64_t channels) {
  if (image.channels == channels) return image;
  Image out{image.width, image.height, channels, {}};
  size_t pixels = static_cast<size_t>(image.width * image.height);
  out.pixels.resize(pixels * static_cast<size_t>(channels));
  for (size_t i = 0; i < pixels; ++i) {
    if (channels == 3) {
      std::fill_n(out.pixels.begin() + static_cast<ptrdiff_t>(i * 3), 3, image.pixels[i]);
    } else {
      // PIL's convert("L"): ITU-R 601-2 luma in 16-bit fixed point, rounded.
      const uint8_t* rgb = &image.pixels[i * 3];
      out.pixels[i] =
          static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
    }
  }
  return out;
}

Image resizeImage(const Image& image, int64_t width, int64_t height, bool nearest) {
  if (image.width == width && image.height == height) return image;
  Taps xs = nearest ? nearestTaps(image.width, width) : linearTaps(image.width, width);
  Taps ys = nearest ? nearestTaps(image.height, height) : linearTaps(image.height, height);
  int64_t channels = image.channels;
  Image out{width, height, channels, {}};
  out.pixels.resize(static_cast<size_t>(width * height * channels));
  auto at = [&](int64_t y, int64_t x, int64_t c) -> double {
    return image.pixels[static_cast<size_t>((y * image.width + x) * channels + c)];
  };
  uint8_t* dst = out.pixels.data();
  for (int64_t y = 0; y < height; ++y) {
    int64_t y0 = ys.first[y], y1 = ys.second[y];
    double wy = ys.weight[y];
    for (int64_t x = 0; x < width; ++x) {
      int64_t x0 = xs.first[x], x1 = xs.second[x];
      double wx = xs.weight[x];
      for (int64_t c = 0; c < channels; ++c) {
        double top = at(y0, x0, c) * (1 - wx) + at(y0, x1, c) * wx;
        double bottom = at(y1, x0, c) * (1 - wx) + at(y1, x1, c) * wx;
        *dst++ = roundToByte(top * (1 - wy) + bottom * wy);
      }
    }
  }
  return out;
}

FramePlan planFrame(int64_t width, int64_t height, std::optional<int64_t> frameWidth,
                    std::optional<int64_t> frameHeight, const PreprocessSpec& spec) {
  auto scaled = [](int64_t size, double scale) {
    return std::max<int64_t>(1, std::llround(static_cast<double>(size) * scale));
  };
  double sx = frameWidth ? static_cast<double>(*frameWidth) / static_cast<double>(width) : 0;
  double sy = frameHeight ? static_cast<double>(*frameHeight) / static_cast<double>(height) : 0;
  FramePlan plan;
  if (frameWidth && frameHeight && spec.aspect != PreprocessSpec::Aspect::Stretch) {
    // Letterbox: scale to fit inside and pad; crop: scale to cover and cut the centre.
    bool pad = spec.aspect == PreprocessSpec::Aspect::Pad;
    double scale = pad ? std::min(sx, sy) : std::max(sx, sy);
    plan.frameWidth = *frameWidth;
    plan.frameHeight = *frameHeight;
    plan.resizedWidth = pad ? std::min(scaled(width, scale), *frameWidth)
                            : std::max(scaled(width, scale), *frameWidth);
    plan.resizedHeight = pad ? std::min(scaled(height, scale), *frameHeight)
                             : std::max(scaled(height, scale), *frameHeight);
    if (!pad || !spec.padTopLeft) {
      plan.left = (plan.frameWidth - plan.resizedWidth) / 2;
      plan.top = (plan.frameHeight - plan.resizedHeight) / 2;
    }
    return plan;
  }
  if (spec.aspect == PreprocessSpec::Aspect::Stretch || (!frameWidth && !frameHeight)) {
    // Stretch; an open side keeps the image's own size.
    plan.resizedWidth = frameWidth.value_or(width);
    plan.resizedHeight = frameHeight.value_or(height);
  } else {
    // Keeping the aspect with one side known: the other follows, nothing to pad or cut.
    double scale = frameWidth ? sx : sy;
    plan.resizedWidth = frameWidth ? *frameWidth : scaled(width, scale);
    plan.resizedHeight = frameHeight ? *frameHeight : scaled(height, scale);
  }
  plan.frameWidth = plan.resizedWidth;
  plan.frameHeight = plan.resizedHeight;
  return plan;
}

}  // namespace qopt::media::detail
