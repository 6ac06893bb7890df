// Audio clips for calibration data: WAV and FLAC through qopt::media (libsndfile). Any bytes
// either fail with qopt::Error or give a clip of whole frames of finite samples, decoded again
// to the same samples (no state, no threads).
#include <cmath>
#include <cstdint>
#include <string>

#include "FuzzSupport.h"
#include "qopt/ir/Error.h"
#include "qopt/media/Media.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  qopt::media::Audio audio;
  try {
    audio = qopt::media::decodeAudioBytes(bytes, "fuzz.wav");
  } catch (const qopt::Error&) {
    return 0;
  }
  if (audio.rate < 1 || audio.channels < 1) {
    qopt::fuzz::propertyFailed(
        "a decoded clip has no rate or no channels",
        std::to_string(audio.rate) + " Hz, " + std::to_string(audio.channels) + " channels");
  }
  if (audio.samples.size() % static_cast<size_t>(audio.channels) != 0) {
    qopt::fuzz::propertyFailed("a decoded clip ends inside a frame", "");
  }
  for (float sample : audio.samples) {
    if (!std::isfinite(sample)) qopt::fuzz::propertyFailed("a decoded clip holds NaN or inf", "");
  }
  if (qopt::media::decodeAudioBytes(bytes, "fuzz.wav").samples != audio.samples) {
    qopt::fuzz::propertyFailed("decoding the same bytes twice gave different samples", "");
  }
  return 0;
}
