// The entry: a data file to the arrays it gives a model input. Which decoder runs follows the
// file's extension (so a folder of mixed files is sorted by name), and within images the bytes'
// signature (so a JPEG named .png still decodes).
#include <algorithm>
#include <cctype>

#include "MediaSupport.h"

namespace qopt::media {

MediaKind mediaKindOf(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension == ".png" || extension == ".jpg" || extension == ".jpeg") return MediaKind::Image;
  if (extension == ".wav" || extension == ".flac") return MediaKind::Audio;
  return MediaKind::None;
}

std::vector<interp::Array> loadMedia(const std::filesystem::path& file, const PreprocessSpec& spec,
                                     const InputShapeInfo& input) {
  switch (mediaKindOf(file)) {
    case MediaKind::Image:
      return detail::imageArrays(decodeImage(file), spec, input, file.string());
    case MediaKind::Audio:
      return detail::audioArrays(decodeAudio(file), spec, input, file.string());
    default:
      throw detail::inputError(file.string(),
                               "not an image (.png, .jpg, .jpeg) or audio clip "
                               "(.wav, .flac)");
  }
}

}  // namespace qopt::media
