// One decoded image to one model input array: the layout, channels and size come from the spec
// where given, else from the input's static dims, else from the image itself.
#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media::detail {

namespace {

using Layout = PreprocessSpec::Layout;
using Channels = PreprocessSpec::Channels;

struct Axes {
  Layout layout;
  size_t rank, channel, height, width;
  bool planar() const { return layout == Layout::Nchw || layout == Layout::Chw; }
};

const char* layoutName(Layout layout) {
  switch (layout) {
    case Layout::Nchw:
      return "nchw";
    case Layout::Nhwc:
      return "nhwc";
    case Layout::Chw:
      return "chw";
    default:
      return "hwc";
  }
}

Axes axesOf(Layout layout) {
  switch (layout) {
    case Layout::Nhwc:
      return {layout, 4, 3, 1, 2};
    case Layout::Chw:
      return {layout, 3, 0, 1, 2};
    case Layout::Hwc:
      return {layout, 3, 2, 0, 1};
    default:
      return {Layout::Nchw, 4, 1, 2, 3};
  }
}

bool isOneOrThree(const std::optional<int64_t>& dim) {
  return dim && (*dim == 1 || *dim == 3);
}

// The spec's layout, or the input's: channels first when the dim after N is 1 or 3 and the last
// is not. An input of unknown rank gets NCHW, the layout of most ONNX vision models.
Axes resolveLayout(const PreprocessSpec& spec, const InputShapeInfo& input,
                   const std::string& file) {
  size_t rank = input.dims.size();
  if (spec.layout != Layout::Auto) {
    Axes axes = axesOf(spec.layout);
    if (input.rankKnown && rank != axes.rank) {
      throw usageError(fmt::format("layout={} fills a rank-{} input, but input '{}' has rank {}",
                                   layoutName(spec.layout), axes.rank, input.name, rank));
    }
    return axes;
  }
  if (!input.rankKnown) return axesOf(Layout::Nchw);
  const auto& dims = input.dims;
  if (rank == 4) {
    return axesOf(isOneOrThree(dims[1]) && !isOneOrThree(dims[3]) ? Layout::Nchw : Layout::Nhwc);
  }
  if (rank == 3) {
    return axesOf(isOneOrThree(dims[0]) && !isOneOrThree(dims[2]) ? Layout::Chw : Layout::Hwc);
  }
  throw inputError(file, fmt::format("an image fills a rank-3 or rank-4 input (chw, hwc, nchw or "
                                     "nhwc), but input '{}' has rank {}",
                                     input.name, rank));
}

int64_t outputChannels(const PreprocessSpec& spec, const InputShapeInfo& input,
                       std::optional<int64_t> inputChannels, int64_t imageChannels) {
  if (spec.channels == Channels::Auto) {
    return isOneOrThree(inputChannels) ? *inputChannels : imageChannels;
  }
  int64_t channels = spec.channels == Channels::Gray ? 1 : 3;
  if (inputChannels && *inputChannels != channels) {
    throw usageError(fmt::format("channels={} gives {} channel{}, but input '{}' takes {}",
                                 channels == 1                    ? "gray"
                                 : spec.channels == Channels::Bgr ? "bgr"
                                                                  : "rgb",
                                 channels, channels == 1 ? "" : "s", input.name, *inputChannels));
  }
  return channels;
}

// resize=WxH where given; it must agree with the input's static dims.
std::optional<int64_t> frameSide(std::optional<int64_t> fromSpec, std::optional<int64_t> fromInput,
                                 const PreprocessSpec& spec, const InputShapeInfo& input,
                                 const std::string& file, const char* side) {
  if (fromSpec && fromInput && *fromSpec != *fromInput) {
    throw usageError(fmt::format("resize={}x{} gives a {} of {}, but input '{}' takes {}",
                                 *spec.width, *spec.height, side, *fromSpec, input.name,
                                 *fromInput));
  }
  if (!fromSpec && fromInput && (*fromInput < 1 || *fromInput > kMaxImageSide)) {
    throw inputError(file, fmt::format("input '{}' has a {} of {}: an image side is 1 to {}",
                                       input.name, side, *fromInput, kMaxImageSide));
  }
  return fromSpec ? fromSpec : fromInput;
}

bool overPixelLimit(int64_t width, int64_t height) {
  return width > kMaxImagePixels || height > kMaxImagePixels || width * height > kMaxImagePixels;
}

void checkPlanSize(const FramePlan& plan, int64_t channels, const std::string& file) {
  if (overPixelLimit(plan.resizedWidth, plan.resizedHeight) ||
      overPixelLimit(plan.frameWidth, plan.frameHeight) ||
      plan.frameWidth * plan.frameHeight * channels > kMaxOutputValues) {
    throw inputError(file, fmt::format("the image would be resized to {}x{} in a {}x{} frame: "
                                       "more than 2^28 values",
                                       plan.resizedWidth, plan.resizedHeight, plan.frameWidth,
                                       plan.frameHeight));
  }
}

}  // namespace

std::vector<interp::Array> imageArrays(const Image& image, const PreprocessSpec& spec,
                                       const InputShapeInfo& input, const std::string& file) {
  checkElementType(spec, input, file);
  Axes axes = resolveLayout(spec, input, file);
  if (axes.rank == 4) checkBatchOfOne(input, file, "image");
  int64_t channels =
      outputChannels(spec, input, staticDim(input, axes.rank, axes.channel), image.channels);
  Normalizer normalize(spec, channels);
  auto width =
      frameSide(spec.width, staticDim(input, axes.rank, axes.width), spec, input, file, "width");
  auto height =
      frameSide(spec.height, staticDim(input, axes.rank, axes.height), spec, input, file, "height");

  Image converted = convertChannels(image, channels);
  FramePlan plan = planFrame(converted.width, converted.height, width, height, spec);
  checkPlanSize(plan, channels, file);
  interp::Shape shape(axes.rank, 1);
  shape[axes.channel] = channels;
  shape[axes.height] = plan.frameHeight;
  shape[axes.width] = plan.frameWidth;
  checkShapeFits(shape, input, file, "image");

  Image resized = resizeImage(converted, plan.resizedWidth, plan.resizedHeight, spec.nearest);
  bool bgr = spec.channels == Channels::Bgr;
  int64_t frameWidth = plan.frameWidth, frameHeight = plan.frameHeight;
  std::vector<double> values(static_cast<size_t>(frameWidth * frameHeight * channels));
  for (int64_t y = 0; y < frameHeight; ++y) {
    int64_t iy = y - plan.top;
    for (int64_t x = 0; x < frameWidth; ++x) {
      int64_t ix = x - plan.left;
      bool inside = iy >= 0 && iy < resized.height && ix >= 0 && ix < resized.width;
      const uint8_t* pixel =
          inside ? &resized.pixels[static_cast<size_t>((iy * resized.width + ix) * channels)]
                 : nullptr;
      for (int64_t c = 0; c < channels; ++c) {
        double value = inside ? pixel[bgr ? channels - 1 - c : c] : spec.padValue;
        int64_t index = axes.planar() ? (c * frameHeight + y) * frameWidth + x
                                      : (y * frameWidth + x) * channels + c;
        values[static_cast<size_t>(index)] = normalize(value, c);
      }
    }
  }
  return {makeArray(input, std::move(shape), values, file)};
}

}  // namespace qopt::media::detail
