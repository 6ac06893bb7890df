// The kinds of data file DataSet reads besides .npy and .pb arrays: .npz archives, images and
// audio; and the checks every array read for a model input goes through.
#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

#include "DataSetSupport.h"
#include "qopt/interp/Npz.h"
#include "qopt/media/Media.h"

namespace qopt::analysis {

namespace fs = std::filesystem;

namespace {

std::string dimsText(const InputSpec& spec) {
  std::vector<std::string> parts;
  for (const auto& d : spec.dims) parts.push_back(d ? std::to_string(*d) : "?");
  return fmt::format("[{}]", fmt::join(parts, ","));
}

// The array of `archive` that feeds `spec`: named after the input (as is, or as a file stem),
// or, for a single-input model, the archive's only array whatever its name ("arr_0").
std::string archiveKey(const interp::NpzArchive& archive, const InputSpec& spec, bool singleInput) {
  if (archive.contains(spec.name)) return spec.name;
  if (archive.contains(fileStem(spec.name))) return fileStem(spec.name);
  if (singleInput && archive.names().size() == 1) return archive.names().front();
  throw inputError(archive.path(), fmt::format("input '{}'", spec.name),
                   fmt::format("the archive has no array named after it (it holds {}): write it "
                               "as numpy.savez(file, {}=array)",
                               fmt::join(archive.names(), ", "), fileStem(spec.name)));
}

}  // namespace

DataFileKind dataFileKind(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".npy" || ext == ".pb") return DataFileKind::Array;
  if (ext == ".npz") return DataFileKind::Archive;
  switch (media::mediaKindOf(path)) {
    case media::MediaKind::Image:
      return DataFileKind::Image;
    case media::MediaKind::Audio:
      return DataFileKind::Audio;
    case media::MediaKind::None:
      break;
  }
  return DataFileKind::Other;
}

Error inputError(const fs::path& where, const std::string& subject, const std::string& cause) {
  return Error(ErrorKind::Input, where.string(), subject, cause);
}

interp::Array checkedArray(const interp::Array& array, const InputSpec& spec,
                           const fs::path& file) {
  interp::Array out = convertFloatType(array, spec.type);
  std::string subject = fmt::format("input '{}'", spec.name);
  if (out.dataType() != spec.type) {
    throw inputError(file, subject,
                     fmt::format("the data is {} but the model input is {}",
                                 dataTypeName(array.dataType()), dataTypeName(spec.type)));
  }
  if (!spec.rankKnown) return out;
  bool fits = out.rank() == static_cast<int64_t>(spec.dims.size());
  for (size_t i = 0; fits && i < spec.dims.size(); ++i) {
    if (spec.dims[i] && *spec.dims[i] != out.shape()[i]) fits = false;
  }
  if (!fits) {
    throw inputError(file, subject,
                     fmt::format("the data has shape [{}] but the model input is {}",
                                 fmt::join(out.shape(), ","), dimsText(spec)));
  }
  return out;
}

std::vector<interp::Array> splitStacked(const interp::Array& array, const InputSpec& spec) {
  if (!spec.rankKnown || spec.dims.empty() || !spec.dims[0] || *spec.dims[0] <= 0 ||
      array.rank() != static_cast<int64_t>(spec.dims.size()) ||
      array.dataType() == DataType::String) {
    return {array};
  }
  const int64_t batch = *spec.dims[0];
  const int64_t total = array.dim(0);
  if (total <= batch || total % batch != 0) return {array};
  interp::Shape shape = array.shape();
  shape[0] = batch;
  std::vector<interp::Array> parts;
  const size_t bytes = array.byteSize() / static_cast<size_t>(total / batch);
  for (int64_t k = 0; k < total / batch; ++k) {
    interp::Array part(array.dataType(), shape);
    std::memcpy(part.bytes(), array.bytes() + static_cast<size_t>(k) * bytes, bytes);
    parts.push_back(std::move(part));
  }
  return parts;
}

std::vector<Sample> splitSamples(const std::string& source, const InputSpec& spec,
                                 const std::vector<interp::Array>& parts, const fs::path& file) {
  std::vector<Sample> samples;
  for (size_t k = 0; k < parts.size(); ++k) {
    Sample sample;
    sample.source = parts.size() == 1 ? source : fmt::format("{}[{}]", source, k);
    sample.inputs.emplace(spec.name, checkedArray(parts[k], spec, file));
    samples.push_back(std::move(sample));
  }
  return samples;
}

void DataSet::useMedia(const media::PreprocessSpec& spec, const std::vector<fs::path>& files) {
  std::vector<std::string> open;  // inputs without --input-values
  for (const InputSpec& input : inputs_) {
    if (!input.fixedValues) open.push_back(input.name);
  }
  auto named = [&](const std::string& name) {
    return std::find_if(inputs_.begin(), inputs_.end(),
                        [&](const InputSpec& input) { return input.name == name; });
  };
  auto fed = inputs_.end();
  if (!spec.input.empty()) {
    fed = named(spec.input);
    if (fed == inputs_.end()) {
      std::vector<std::string> names;
      for (const InputSpec& input : inputs_) names.push_back(input.name);
      throw Error(ErrorKind::Usage, path_.string(), "--preprocess",
                  fmt::format("input={} names no input of the model (inputs: {})", spec.input,
                              fmt::join(names, ", ")));
    }
  } else if (open.size() == 1) {
    fed = named(open.front());
  } else {
    throw Error(ErrorKind::Usage, path_.string(), "--preprocess",
                open.empty()
                    ? std::string("every input has --input-values: say which one the files feed "
                                  "with input=NAME")
                    : fmt::format("the files feed one input, and {} have no --input-values: say "
                                  "which one the files feed with input=NAME and give the others "
                                  "with --input-values",
                                  fmt::join(open, ", ")));
  }
  mediaInput_ = static_cast<size_t>(fed - inputs_.begin());
  std::vector<InputSpec> others;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (i == mediaInput_) continue;
    if (!inputs_[i].fixedValues) {
      throw Error(ErrorKind::Usage, path_.string(), fmt::format("input '{}'", inputs_[i].name),
                  fmt::format("the files feed input '{}' only: give this one with "
                              "--input-values {}=VALUE",
                              inputs_[mediaInput_].name, inputs_[i].name));
    }
    others.push_back(inputs_[i]);
  }
  if (!others.empty()) fixedInputs_ = randomSamples(others, 1, 0).front().inputs;
  preprocess_ = std::make_shared<const media::PreprocessSpec>(spec);
  hasAudio_ = std::any_of(files.begin(), files.end(), [](const fs::path& file) {
    return dataFileKind(file) == DataFileKind::Audio;
  });
}

std::vector<Sample> DataSet::loadMediaFile(size_t index) const {
  const fs::path& file = entries_.at(index);
  const InputSpec& spec = inputs_[mediaInput_];
  media::InputShapeInfo info{spec.name, spec.type, spec.dims, spec.rankKnown};
  std::vector<interp::Array> arrays = media::loadMedia(file, *preprocess_, info);
  std::vector<Sample> samples = splitSamples(file.string(), spec, arrays, file);
  for (Sample& sample : samples) {
    for (const auto& [name, array] : fixedInputs_) sample.inputs.emplace(name, array);
  }
  return samples;
}

void DataSet::openStackedArchive(const fs::path& path) {
  auto archive = std::make_shared<const interp::NpzArchive>(path);
  // K samples when every input's array holds K blocks of its static batch size.
  std::optional<int64_t> blocks;
  for (const InputSpec& spec : inputs_) {
    const interp::Shape shape = archive->shape(archiveKey(*archive, spec, inputs_.size() == 1));
    const bool batched = spec.rankKnown && !spec.dims.empty() && spec.dims[0] &&
                         *spec.dims[0] > 0 && shape.size() == spec.dims.size() &&
                         shape[0] % *spec.dims[0] == 0;
    const int64_t k = batched ? shape[0] / *spec.dims[0] : 1;
    if (!blocks) blocks = k;
    if (*blocks != k) blocks = 1;
  }
  if (blocks && *blocks > 1) {
    entries_.assign(static_cast<size_t>(*blocks), path);
    for (int64_t k = 0; k < *blocks; ++k) stackIndex_.push_back(k);
  }
  archive_ = std::move(archive);
}

std::vector<Sample> DataSet::loadArchive(size_t index) const {
  const fs::path& file = entries_.at(index);
  std::shared_ptr<const interp::NpzArchive> archive = archive_;
  if (!archive) archive = std::make_shared<const interp::NpzArchive>(file);
  const bool singleInput = inputs_.size() == 1;
  if (stackIndex_.empty() && singleInput) {
    const InputSpec& spec = inputs_.front();
    interp::Array array =
        convertFloatType(archive->read(archiveKey(*archive, spec, true)), spec.type);
    return splitSamples(file.string(), spec, splitStacked(array, spec), file);
  }
  Sample sample;
  sample.source = stackIndex_.empty() ? file.string() : fmt::format("{}[{}]", file.string(), index);
  for (const InputSpec& spec : inputs_) {
    const std::string key = archiveKey(*archive, spec, singleInput);
    interp::Array array;
    if (stackIndex_.empty()) {
      array = archive->read(key);
    } else {
      const int64_t batch = *spec.dims[0];
      array = archive->readRows(key, stackIndex_[index] * batch, batch);
    }
    sample.inputs.emplace(spec.name, checkedArray(array, spec, file));
  }
  return {std::move(sample)};
}

}  // namespace qopt::analysis
