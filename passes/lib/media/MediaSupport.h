// What the sources of libqopt_media share and do not export: the limits that keep hostile
// headers from allocating, the decoders of each format, the image geometry and the writing of
// values into a model input's array.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/ir/Error.h"
#include "qopt/media/Media.h"

namespace qopt::media::detail {

// A side over 65535 or more than 2^28 pixels (768 MiB as RGB) is refused before anything is
// allocated: no calibration image is that large, and a 30-byte header may claim it.
inline constexpr int64_t kMaxImageSide = 65535;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;
// Audio: 2^31 samples (8 GiB as floats) at most, read in blocks, so memory follows the data the
// file really holds and not the length its header claims.
inline constexpr int64_t kMaxAudioSamples = int64_t{1} << 31;
// What one file may give after preprocessing (every window of a clip together): 2^28 values.
inline constexpr int64_t kMaxOutputValues = int64_t{1} << 28;

/// An Input error about `file` (the `where` of the error).
Error inputError(const std::string& file, std::string cause);
/// A Usage error about the preprocessing spec.
Error usageError(std::string cause);

/// The whole file; an Input error naming it when it cannot be read.
std::vector<uint8_t> readFileBytes(const std::filesystem::path& file);

/// An image of the decoder's `pixels` (width * height * channels bytes, interleaved), copied.
Image copiedImage(int64_t width, int64_t height, int64_t channels, const uint8_t* pixels);

// Decoders, each given bytes that start with its format's signature.
Image decodePng(std::span<const uint8_t> bytes, const std::string& name);
Image decodeJpeg(std::span<const uint8_t> bytes, const std::string& name);

/// `image` with `channels` (1 or 3) channels: gray repeated to RGB, or RGB to gray with PIL's
/// ITU-R 601-2 luma weights.
Image convertChannels(const Image& image, int64_t channels);
/// Resized with half-pixel centres: bilinear as OpenCV's INTER_LINEAR (two taps, no
/// antialiasing when shrinking), or nearest as PIL's NEAREST; results rounded to 8 bits.
Image resizeImage(const Image& image, int64_t width, int64_t height, bool nearest);

/// Where the resized image lies in the frame the model sees: a frame pixel (x, y) shows image
/// pixel (x - left, y - top), or the pad value where that is outside the image.
struct FramePlan {
  int64_t resizedWidth = 0, resizedHeight = 0;
  int64_t frameWidth = 0, frameHeight = 0;
  int64_t left = 0, top = 0;
};
/// The plan for an image of `width` x `height` under `spec`, given the frame's size where known.
FramePlan planFrame(int64_t width, int64_t height, std::optional<int64_t> frameWidth,
                    std::optional<int64_t> frameHeight, const PreprocessSpec& spec);

/// scale, then (x - mean) / std for channel c.
class Normalizer {
 public:
  /// Usage error when mean or std gives a count other than 1 or `channels`.
  Normalizer(const PreprocessSpec& spec, int64_t channels);
  double operator()(double value, int64_t channel) const {
    double scaled = value * scale_;
    return (scaled - mean_[static_cast<size_t>(channel)]) / std_[static_cast<size_t>(channel)];
  }

 private:
  double scale_ = 1;
  std::vector<double> mean_, std_;
};

/// Refuses element types no image or audio can feed (Input), and scale/mean/std for integer
/// inputs, whose values are the raw samples (Usage).
void checkElementType(const PreprocessSpec& spec, const InputShapeInfo& input,
                      const std::string& file);
/// Input error when the input's static batch dim (dim 0) is over 1.
void checkBatchOfOne(const InputShapeInfo& input, const std::string& file, const char* what);
/// The input's static dim at `axis`, when its rank is known and is `rank`.
std::optional<int64_t> staticDim(const InputShapeInfo& input, size_t rank, size_t axis);
/// Input error naming the file when `shape` does not fit the input's static dims.
void checkShapeFits(const interp::Shape& shape, const InputShapeInfo& input,
                    const std::string& file, const char* what);
/// The array of the input's element type holding `values` (integers rounded to nearest; a value
/// outside an integer type's range is an Input error).
interp::Array makeArray(const InputShapeInfo& input, interp::Shape shape,
                        std::span<const double> values, const std::string& file);

// The two pipelines from decoded data to the model input's arrays.
std::vector<interp::Array> imageArrays(const Image& image, const PreprocessSpec& spec,
                                       const InputShapeInfo& input, const std::string& file);
std::vector<interp::Array> audioArrays(const Audio& audio, const PreprocessSpec& spec,
                                       const InputShapeInfo& input, const std::string& file);

/// Mono samples: each frame the average of its channels.
std::vector<float> downmixToMono(const Audio& audio);
/// `samples` at `fromRate` resampled to `toRate` with libsamplerate (sinc, medium quality):
/// exactly round(n * toRate / fromRate) samples.
std::vector<float> resampleMono(std::vector<float> samples, int64_t fromRate, int64_t toRate,
                                const std::string& file);

}  // namespace qopt::media::detail
