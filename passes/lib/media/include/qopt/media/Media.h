// Calibration and evaluation data as users hold it: image files (PNG, JPEG) and audio clips
// (WAV, FLAC), decoded with Debian's libpng, libjpeg-turbo and libsndfile, and turned into a
// model input by a preprocessing spec (--preprocess, or `preprocess=` in the Python module).
//
// The spec is `key=value` words separated by spaces:
//
//   images: resize=WxH            width x height the image is resized to (default: the input's
//                                 static H and W; an open dim keeps the image's own size)
//           keep-aspect=no|pad|crop
//                                 no: stretch to WxH (default); pad: scale to fit inside and pad
//                                 (letterbox); crop: scale to cover and cut the centre
//           pad-value=V           the padding, in pixel units 0..255 before scale (default 0)
//           pad-align=center|top-left
//                                 where the image sits in the padded frame (default center)
//           resample=bilinear|nearest
//                                 (default bilinear, half-pixel centres as OpenCV and PIL)
//           channels=rgb|bgr|gray (default: rgb for 3 channels, gray for 1)
//           layout=nchw|nhwc|chw|hwc
//                                 (default: from the input's shape: nchw when dim 1 is 1 or 3
//                                 and the last is not, else nhwc; rank 3 likewise without N)
//   audio:  rate=HZ               resample to this rate (default: the clip's own; libsamplerate)
//           frames=N              window length in samples: a clip gives one sample per window
//                                 (default: the input's last static dim, else the whole clip)
//           hop=N                 step between windows (default: frames); a clip shorter than
//                                 one window is padded with zeros, a partial last window dropped
//   both:   scale=S               multiplies every value first (1/255 is accepted; audio is read
//                                 as floats in [-1, 1], scale=32768 gives int16 units)
//           mean=a[,b,c] std=a[,b,c]
//                                 then (x - mean) / std, per channel (one value: every channel)
//           input=NAME            the model input the files feed (default: the only input not
//                                 given by --input-values)
//
// Values are written in the model input's element type (float types, or uint8/int8 where no
// scale, mean or std is given); rank 2 audio inputs get [1, frames], rank 3 [1, 1, frames].
//
// Details the words above leave open: an input of unknown rank gets NCHW (images) or
// [1, frames] (audio), and rank 1 audio inputs [frames]; bilinear shrinking reads two pixels per
// axis as OpenCV does (no antialiasing, unlike PIL), and every resize rounds to 8 bits; a
// letterbox's odd pixel of padding and a crop's odd pixel go to the bottom and right; gray comes
// from RGB by PIL's ITU-R 601-2 luma, RGB from gray by repeating it; mean and std follow the
// output's channel order (channels=bgr: blue first); integer inputs get values rounded to
// nearest, and a value outside the type's range is an error; keys of the other media kind are
// ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/ir/DataType.h"

namespace qopt::media {

enum class MediaKind { None, Image, Audio };

/// By extension, case-insensitive: .png .jpg .jpeg -> Image; .wav .flac -> Audio.
MediaKind mediaKindOf(const std::filesystem::path& path);

struct PreprocessSpec {
  // images
  std::optional<int64_t> width, height;
  enum class Aspect { Stretch, Pad, Crop } aspect = Aspect::Stretch;
  double padValue = 0;
  bool padTopLeft = false;
  bool nearest = false;
  enum class Channels { Auto, Rgb, Bgr, Gray } channels = Channels::Auto;
  enum class Layout { Auto, Nchw, Nhwc, Chw, Hwc } layout = Layout::Auto;
  // audio
  std::optional<int64_t> rate, frames, hop;
  // both
  std::optional<double> scale;
  std::vector<double> mean, std;
  std::string input;

  /// Throws qopt::Error (Usage) naming the word and what it accepts on an unknown key, a bad
  /// value or a key given twice. An empty text gives the defaults.
  static PreprocessSpec parse(std::string_view text);
  /// The canonical text (every key that differs from the default), parse(toString()) == *this.
  std::string toString() const;
  bool operator==(const PreprocessSpec&) const = default;
};

/// What the model input a file feeds looks like.
struct InputShapeInfo {
  std::string name;
  DataType type = DataType::Float;
  std::vector<std::optional<int64_t>> dims;  // nullopt where open
  bool rankKnown = false;
};

/// Decodes `file` and applies `spec` for `input`: one array for an image, one per window for
/// audio, each of the input's type and a shape that fits its static dims. Throws qopt::Error
/// (Input) whose `where` is the file, for a file that is corrupt, truncated, of a kind it is
/// not named for, or that cannot fit the input (a 4-channel layout for a 3-channel input, a
/// rank the layout cannot fill); (Usage) for a spec that contradicts the input.
std::vector<interp::Array> loadMedia(const std::filesystem::path& file, const PreprocessSpec& spec,
                                     const InputShapeInfo& input);

/// Decoded pixels, 8 bits per channel, rows top to bottom, channels interleaved (RGB or gray;
/// alpha dropped, palettes and 16-bit samples converted). Throws as loadMedia.
///
/// The format follows the bytes' signature, not the name (a JPEG named .png decodes). Refused,
/// before anything is allocated: over 65535 pixels a side or 2^28 pixels in all. Truncated files,
/// JPEG data libjpeg reports damaged, and CMYK JPEGs are errors.
struct Image {
  int64_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};
Image decodeImage(const std::filesystem::path& file);
/// The same from bytes in memory (`displayName` names them in errors): what the fuzz targets call.
Image decodeImageBytes(std::span<const uint8_t> bytes, const std::string& displayName);

/// Decoded audio: floats in [-1, 1], channels interleaved. WAV (RIFF, RIFX, RF64) and FLAC only,
/// by their first bytes; a clip over 2^31 samples, a data chunk cut short and NaN or infinite
/// samples are errors.
struct Audio {
  int64_t rate = 0, channels = 0;
  std::vector<float> samples;
};
Audio decodeAudio(const std::filesystem::path& file);
Audio decodeAudioBytes(std::span<const uint8_t> bytes, const std::string& displayName);

}  // namespace qopt::media
