// Audio to the mono signal at the rate a model takes: channels averaged, then libsamplerate's
// sinc converter (medium quality: 97 dB signal-to-noise over 90% of the band, a third of the
// best converter's time), which is deterministic and single-threaded.
#include <samplerate.h>

#include <cmath>

#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media::detail {

std::vector<float> downmixToMono(const Audio& audio) {
  if (audio.channels == 1) return audio.samples;
  size_t channels = static_cast<size_t>(audio.channels);
  std::vector<float> mono(audio.samples.size() / channels);
  for (size_t frame = 0; frame < mono.size(); ++frame) {
    double sum = 0;
    for (size_t c = 0; c < channels; ++c) sum += audio.samples[frame * channels + c];
    mono[frame] = static_cast<float>(sum / static_cast<double>(channels));
  }
  return mono;
}

std::vector<float> resampleMono(std::vector<float> samples, int64_t fromRate, int64_t toRate,
                                const std::string& file) {
  if (fromRate == toRate || samples.empty()) return samples;
  double ratio = static_cast<double>(toRate) / static_cast<double>(fromRate);
  if (!src_is_valid_ratio(ratio)) {
    throw inputError(file, fmt::format("cannot resample from {} Hz to {} Hz (libsamplerate "
                                       "changes rates by factors 1/256 to 256)",
                                       fromRate, toRate));
  }
  double wanted = std::round(static_cast<double>(samples.size()) * ratio);
  if (wanted > static_cast<double>(kMaxAudioSamples)) {
    throw inputError(file,
                     fmt::format("resampled to {} Hz the clip has more than 2^31 samples", toRate));
  }
  // The converter may give a few samples less than the exact length (its filter's tail); the
  // output is zero there, and cut to the exact length, so that every clip of n samples gives
  // round(n * ratio) whatever the converter's rounding.
  size_t length = static_cast<size_t>(wanted);
  std::vector<float> out(length + 64, 0.0f);
  SRC_DATA data{};
  data.data_in = samples.data();
  data.input_frames = static_cast<long>(samples.size());
  data.data_out = out.data();
  data.output_frames = static_cast<long>(out.size());
  data.src_ratio = ratio;
  if (int status = src_simple(&data, SRC_SINC_MEDIUM_QUALITY, 1); status != 0) {
    throw inputError(file, fmt::format("cannot resample from {} Hz to {} Hz (libsamplerate: {})",
                                       fromRate, toRate, src_strerror(status)));
  }
  out.resize(length);
  return out;
}

}  // namespace qopt::media::detail
