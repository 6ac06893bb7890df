// One decoded clip to model input arrays: mono at the spec's rate, cut into windows of `frames`
// samples every `hop` samples, one array per window.
#include <fmt/format.h>

#include "MediaSupport.h"

namespace qopt::media::detail {

std::vector<interp::Array> audioArrays(const Audio& audio, const PreprocessSpec& spec,
                                       const InputShapeInfo& input, const std::string& file) {
  checkElementType(spec, input, file);
  // [frames], [1, frames] or [1, 1, frames]; an input of unknown rank gets [1, frames].
  size_t rank = input.rankKnown ? input.dims.size() : 2;
  if (rank < 1 || rank > 3) {
    throw inputError(file, fmt::format("an audio clip fills a rank-1, 2 or 3 input ([frames], "
                                       "[1,frames] or [1,1,frames]), but input '{}' has rank {}",
                                       input.name, rank));
  }
  if (rank >= 2) checkBatchOfOne(input, file, "audio");
  Normalizer normalize(spec, 1);
  std::optional<int64_t> inputFrames = staticDim(input, rank, rank - 1);
  if (spec.frames && inputFrames && *spec.frames != *inputFrames) {
    throw usageError(fmt::format("frames={} contradicts input '{}', whose last dim is {}",
                                 *spec.frames, input.name, *inputFrames));
  }

  std::vector<float> mono = downmixToMono(audio);
  if (spec.rate) mono = resampleMono(std::move(mono), audio.rate, *spec.rate, file);
  if (mono.empty()) throw inputError(file, "the clip holds no samples");
  auto length = static_cast<int64_t>(mono.size());
  int64_t frames = spec.frames ? *spec.frames : inputFrames.value_or(length);
  if (frames < 1) {
    throw inputError(file,
                     fmt::format("input '{}' takes windows of {} samples", input.name, frames));
  }
  int64_t hop = spec.hop.value_or(frames);
  // A clip shorter than a window gives one window padded with silence; a partial last window
  // is dropped.
  int64_t windows = length <= frames ? 1 : (length - frames) / hop + 1;
  if (windows > kMaxOutputValues / frames) {
    throw inputError(file, fmt::format("the clip gives {} windows of {} samples: more than 2^28 "
                                       "values (raise hop=)",
                                       windows, frames));
  }
  interp::Shape shape(rank, 1);
  shape.back() = frames;
  checkShapeFits(shape, input, file, "clip");

  std::vector<interp::Array> arrays;
  arrays.reserve(static_cast<size_t>(windows));
  std::vector<double> values(static_cast<size_t>(frames));
  for (int64_t window = 0; window < windows; ++window) {
    int64_t start = window * hop;
    for (int64_t i = 0; i < frames; ++i) {
      double sample = start + i < length ? mono[static_cast<size_t>(start + i)] : 0.0;
      values[static_cast<size_t>(i)] = normalize(sample, 0);
    }
    arrays.push_back(makeArray(input, shape, values, file));
  }
  return arrays;
}

}  // namespace qopt::media::detail
