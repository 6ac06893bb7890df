// Writers for the tests of libqopt_media: small PNG, JPEG and WAV/FLAC files made with the same
// libraries the decoders use, so every test states its pixels and samples exactly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace qopt::media::test {

using Bytes = std::vector<uint8_t>;

/// A PNG of `colorType` (PNG_COLOR_TYPE_*) and `bitDepth`; `samples` are the file's rows packed
/// as PNG stores them (16-bit samples big-endian). `palette` holds RGB triples.
Bytes encodePng(int width, int height, int colorType, int bitDepth,
                std::span<const uint8_t> samples, bool interlaced = false,
                std::span<const uint8_t> palette = {});
/// An 8-bit gray (1 channel) or RGB (3 channels) PNG.
Bytes encodePng(int width, int height, int channels, std::span<const uint8_t> pixels);
/// A JPEG of 8-bit gray or RGB pixels.
Bytes encodeJpeg(int width, int height, int channels, std::span<const uint8_t> pixels,
                 int quality = 100, bool progressive = false);
/// A clip of 16-bit samples (interleaved) as `format` (SF_FORMAT_WAV | SF_FORMAT_PCM_16, ...).
Bytes encodeAudio(int rate, int channels, std::span<const int16_t> samples, int format);
/// The same from floats.
Bytes encodeAudioFloat(int rate, int channels, std::span<const float> samples, int format);

/// A PNG's chunk CRC recomputed after its bytes were changed (chunk starting at `offset`).
void fixPngChunkCrc(Bytes& png, size_t offset);

/// A folder removed with its files when the test ends.
class TempFolder {
 public:
  TempFolder();
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  /// Writes `bytes` to `name` in the folder and returns its path.
  std::filesystem::path write(const std::string& name, std::span<const uint8_t> bytes) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace qopt::media::test
