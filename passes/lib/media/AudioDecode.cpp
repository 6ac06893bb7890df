// WAV and FLAC with libsndfile, read from memory through its virtual I/O, as floats in [-1, 1]
// (integer samples divided by 2^(bits-1), float samples unchanged).
//
// libsndfile opens more formats than these; only WAV (RIFF, RIFX, RF64) and FLAC are accepted,
// by their first bytes, which keeps the decoders that see untrusted data to two. libsndfile also
// shortens a WAV data chunk that claims more bytes than the file holds without a word: that file
// was cut, so the chunk sizes are checked here first.
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media {

namespace {

struct MemoryFile {
  std::span<const uint8_t> bytes;
  sf_count_t offset = 0;
};

MemoryFile& memoryOf(void* user) {
  return *static_cast<MemoryFile*>(user);
}

sf_count_t memoryLength(void* user) {
  return static_cast<sf_count_t>(memoryOf(user).bytes.size());
}

sf_count_t memorySeek(sf_count_t offset, int whence, void* user) {
  MemoryFile& file = memoryOf(user);
  sf_count_t base = whence == SEEK_CUR   ? file.offset
                    : whence == SEEK_END ? static_cast<sf_count_t>(file.bytes.size())
                                         : 0;
  sf_count_t target = base + offset;
  if (target < 0 || target > static_cast<sf_count_t>(file.bytes.size())) return -1;
  file.offset = target;
  return target;
}

sf_count_t memoryRead(void* out, sf_count_t count, void* user) {
  MemoryFile& file = memoryOf(user);
  sf_count_t left = static_cast<sf_count_t>(file.bytes.size()) - file.offset;
  sf_count_t n = std::clamp<sf_count_t>(count, 0, left);
  if (n > 0) std::memcpy(out, file.bytes.data() + file.offset, static_cast<size_t>(n));
  file.offset += n;
  return n;
}

sf_count_t memoryWrite(const void*, sf_count_t, void*) {
  return 0;
}

sf_count_t memoryTell(void* user) {
  return memoryOf(user).offset;
}

bool startsWith(std::span<const uint8_t> bytes, size_t at, const char* text) {
  size_t n = std::strlen(text);
  return bytes.size() >= at + n && std::memcmp(bytes.data() + at, text, n) == 0;
}

uint32_t chunkSize(std::span<const uint8_t> bytes, size_t at, bool bigEndian) {
  const uint8_t* p = bytes.data() + at;
  return bigEndian ? uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]
                   : uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0];
}

// Walks a RIFF/RIFX WAVE file's chunks to its data chunk. A size of 0 or 0xFFFFFFFF means
// "unknown" (streamed files); RF64 keeps the real size elsewhere and is left to libsndfile.
void checkWavNotCut(std::span<const uint8_t> bytes, const std::string& name) {
  bool bigEndian = startsWith(bytes, 0, "RIFX");
  size_t at = 12;
  while (at + 8 <= bytes.size()) {
    uint64_t size = chunkSize(bytes, at + 4, bigEndian);
    uint64_t left = bytes.size() - at - 8;
    if (startsWith(bytes, at, "data")) {
      if (size != 0 && size != 0xffffffffu && size > left) {
        throw detail::inputError(name, fmt::format("truncated WAV data: the data chunk claims {} "
                                                   "bytes, the file holds {}",
                                                   size, left));
      }
      return;
    }
    at += 8 + size + (size & 1);
  }
}

struct SndfileCloser {
  void operator()(SNDFILE* file) const { sf_close(file); }
};

}  // namespace

Audio decodeAudioBytes(std::span<const uint8_t> bytes, const std::string& displayName) {
  bool wav = (startsWith(bytes, 0, "RIFF") || startsWith(bytes, 0, "RIFX") ||
              startsWith(bytes, 0, "RF64")) &&
             startsWith(bytes, 8, "WAVE");
  if (!wav && !startsWith(bytes, 0, "fLaC")) {
    throw detail::inputError(displayName, "not a WAV or FLAC audio file");
  }
  if (wav) checkWavNotCut(bytes, displayName);

  MemoryFile memory{bytes};
  SF_VIRTUAL_IO io{memoryLength, memorySeek, memoryRead, memoryWrite, memoryTell};
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndfileCloser> file(sf_open_virtual(&io, SFM_READ, &info, &memory));
  if (!file) {
    throw detail::inputError(
        displayName, fmt::format("cannot decode the audio (libsndfile: {})", sf_strerror(nullptr)));
  }
  if (info.channels < 1 || info.samplerate < 1) {
    throw detail::inputError(displayName, fmt::format("bad audio header ({} channels at {} Hz)",
                                                      info.channels, info.samplerate));
  }
  bool lengthKnown = info.frames >= 0 && info.frames != SF_COUNT_MAX;
  if (lengthKnown && info.frames > detail::kMaxAudioSamples / info.channels) {
    throw detail::inputError(displayName, fmt::format("the clip has {} frames of {} channels: "
                                                      "more than 2^31 samples",
                                                      info.frames, info.channels));
  }

  Audio audio;
  audio.rate = info.samplerate;
  audio.channels = info.channels;
  // Blocks of 64 Ki samples appended as they come: memory grows with the samples really decoded,
  // not with the length a header claims.
  const sf_count_t blockFrames = std::max<sf_count_t>(1, (sf_count_t{1} << 16) / info.channels);
  std::vector<float> block(static_cast<size_t>(blockFrames * info.channels));
  sf_count_t frames = 0;
  for (;;) {
    sf_count_t read =
        std::max<sf_count_t>(sf_readf_float(file.get(), block.data(), blockFrames), 0);
    if (read == 0) break;
    frames += read;
    if (frames > detail::kMaxAudioSamples / info.channels) {
      throw detail::inputError(displayName, "the clip holds more than 2^31 samples");
    }
    audio.samples.insert(audio.samples.end(), block.begin(), block.begin() + read * info.channels);
  }
  if (sf_error(file.get()) != SF_ERR_NO_ERROR) {
    throw detail::inputError(displayName, fmt::format("cannot decode the audio (libsndfile: {})",
                                                      sf_strerror(file.get())));
  }
  if (lengthKnown && frames != info.frames) {
    throw detail::inputError(displayName, fmt::format("truncated audio data: the header promises "
                                                      "{} frames, the file holds {}",
                                                      info.frames, frames));
  }
  if (!std::all_of(audio.samples.begin(), audio.samples.end(),
                   [](float v) { return std::isfinite(v); })) {
    throw detail::inputError(displayName, "the clip holds NaN or infinite samples");
  }
  audio.samples.shrink_to_fit();
  return audio;
}

Audio decodeAudio(const std::filesystem::path& file) {
  return decodeAudioBytes(detail::readFileBytes(file), file.string());
}

}  // namespace qopt::media
