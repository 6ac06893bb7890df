#include "qopt/analysis/DataSet.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numbers>

#include <fmt/format.h>

#include "DataSetSupport.h"
#include "qopt/analysis/ControlInputs.h"
#include "qopt/analysis/SampleCache.h"
#include "qopt/interp/Npy.h"
#include "qopt/interp/Npz.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/media/Media.h"

namespace qopt::analysis {

namespace fs = std::filesystem;

namespace {

bool isDataFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && dataFileKind(path) != DataFileKind::Other;
}

std::vector<fs::path> sortedChildren(const fs::path& dir, bool folders) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (folders ? entry.is_directory(ec) : isDataFile(entry.path())) out.push_back(entry.path());
  }
  if (ec) throw inputError(dir, {}, fmt::format("cannot list the folder: {}", ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

// <dir>/<stem>.npy or .pb, or an empty path.
fs::path inputFile(const fs::path& dir, const std::string& name) {
  std::string stem = fileStem(name);
  for (const char* ext : {".npy", ".pb"}) {
    fs::path candidate = dir / (stem + ext);
    if (isDataFile(candidate)) return candidate;
  }
  return {};
}

interp::Array readArray(const fs::path& file) {
  try {
    if (file.extension() == ".pb") return interp::Array::fromTensor(loadTensorProtoFile(file));
    return interp::readNpy(file);
  } catch (const Error& e) {
    throw e.withFile(file.string());
  }
}

// splitmix64: a tiny generator whose output is the same on every platform (the standard
// distributions are not), so random inputs are reproducible everywhere.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1p-53; }
  double normal() {
    double u = uniform();
    double v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
  }

 private:
  uint64_t state_;
};

}  // namespace

std::string fileStem(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

std::vector<InputSpec> inputSpecs(const Graph& graph, const DataSettings& data) {
  return inputSpecs(graph, data.inputShapes, data.inputValues);
}

std::vector<InputSpec> inputSpecs(const Graph& graph, std::span<const InputShape> shapes,
                                  std::span<const InputValue> values) {
  std::vector<InputSpec> specs;
  for (const Value* input : graph.inputs()) {
    if (input->isInitializer()) continue;
    InputSpec spec;
    spec.name = input->name();
    const ValueType& type = input->type();
    if (type.isTensor() && type.elemType != DataType::Undefined) spec.type = type.elemType;
    if (type.isTensor() && type.shape) {
      spec.rankKnown = true;
      for (const Dim& d : *type.shape) spec.dims.push_back(d.value);
    }
    specs.push_back(std::move(spec));
  }
  // The spec of the input a flag names; the flag naming one the model lacks is an error.
  auto specNamed = [&](const std::string& name, const char* flag) {
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const InputSpec& s) { return s.name == name; });
    if (it != specs.end()) return it;
    std::vector<std::string> names;
    for (const InputSpec& s : specs) names.push_back(s.name);
    throw Error(ErrorKind::Usage, graph.model().sourcePath, fmt::format("input '{}'", name),
                fmt::format("{} names an input the model does not have (inputs: {})", flag,
                            fmt::join(names, ", ")));
  };
  for (const InputShape& given : shapes) {
    auto it = specNamed(given.name, "--input-shapes");
    if (it->rankKnown && it->dims.size() != given.dims.size()) {
      throw Error(ErrorKind::Usage, {}, fmt::format("input '{}'", given.name),
                  fmt::format("--input-shapes gives rank {} but the model input has rank {}",
                              given.dims.size(), it->dims.size()));
    }
    for (size_t i = 0; it->rankKnown && i < given.dims.size(); ++i) {
      if (it->dims[i] && *it->dims[i] != given.dims[i]) {
        throw Error(ErrorKind::Usage, {}, fmt::format("input '{}'", given.name),
                    fmt::format("--input-shapes gives dim {} = {} but the model fixes it to {}", i,
                                given.dims[i], *it->dims[i]));
      }
    }
    it->rankKnown = true;
    it->dims.assign(given.dims.begin(), given.dims.end());
  }
  for (const InputValue& given : values)
    specNamed(given.name, "--input-values")->fixedValues = given.values;
  const std::map<std::string, std::string> steering = controlInputs(graph);
  for (InputSpec& spec : specs) {
    if (auto it = steering.find(spec.name); it != steering.end()) spec.steers = it->second;
  }
  return specs;
}

DataSet DataSet::open(const fs::path& path, std::vector<InputSpec> inputs,
                      std::string_view preprocess) {
  DataSet set;
  set.path_ = path;
  set.inputs_ = std::move(inputs);
  std::error_code ec;
  if (!fs::exists(path, ec)) throw inputError(path, {}, "no such file or folder");
  if (set.inputs_.empty()) throw inputError(path, {}, "the model has no inputs to feed");
  // A malformed spec is reported before any file is read.
  std::optional<media::PreprocessSpec> spec;
  if (!preprocess.empty()) spec = media::PreprocessSpec::parse(preprocess);
  const bool singleInput = set.inputs_.size() == 1;
  std::vector<fs::path> files;
  std::vector<fs::path> folders;
  const bool folder = fs::is_directory(path, ec);
  if (folder) {
    files = sortedChildren(path, false);
    folders = sortedChildren(path, true);
  }
  const std::vector<fs::path> dataFiles = folder ? files : std::vector<fs::path>{path};
  size_t media = 0;
  size_t archives = 0;
  for (const fs::path& file : dataFiles) {
    const DataFileKind kind = dataFileKind(file);
    media += kind == DataFileKind::Image || kind == DataFileKind::Audio;
    archives += kind == DataFileKind::Archive;
  }
  if (media > 0 && media != dataFiles.size()) {
    throw inputError(path, {},
                     "it holds both image or audio files and arrays (.npy, .npz, .pb): give "
                     "one kind of data per folder");
  }
  if (media > 0) {
    set.useMedia(spec ? *spec : media::PreprocessSpec{}, dataFiles);
    set.layout_ = folder ? Layout::FilePerSample : Layout::SingleFile;
    set.entries_ = dataFiles;
    return set;
  }
  if (spec) {
    throw Error(ErrorKind::Usage, path.string(), "--preprocess",
                "it applies to image (PNG, JPEG) and audio (WAV, FLAC) files, and this data "
                "holds none");
  }
  if (!folder) {
    set.layout_ = Layout::SingleFile;
    set.entries_ = {path};
    if (archives > 0) {
      set.openStackedArchive(path);
      return set;
    }
    if (!singleInput) {
      throw inputError(path, {},
                       fmt::format("a single file feeds a single-input model; this one has {} "
                                   "inputs: give a .npz archive or a folder with <input "
                                   "name>.npy files",
                                   set.inputs_.size()));
    }
    const InputSpec& spec0 = set.inputs_.front();
    if (path.extension() == ".npy" && spec0.rankKnown && !spec0.dims.empty() && spec0.dims[0] &&
        *spec0.dims[0] > 0) {
      const interp::Shape shape = interp::readNpyShape(path);
      const int64_t batch = *spec0.dims[0];
      if (shape.size() == spec0.dims.size() && shape[0] > batch && shape[0] % batch == 0) {
        set.entries_.assign(static_cast<size_t>(shape[0] / batch), path);
        for (int64_t k = 0; k < shape[0] / batch; ++k) set.stackIndex_.push_back(k);
      }
    }
    return set;
  }
  if (!files.empty() && (singleInput || archives == files.size())) {
    set.layout_ = Layout::FilePerSample;
    set.entries_ = std::move(files);
    return set;
  }
  bool everyInputHasAFile = !singleInput;
  for (const InputSpec& input : set.inputs_) {
    if (inputFile(path, input.name).empty()) everyInputHasAFile = false;
  }
  if (everyInputHasAFile) {
    set.layout_ = Layout::InputFolder;
    set.entries_ = {path};
    return set;
  }
  if (!folders.empty()) {
    set.layout_ = Layout::SampleFolders;
    set.entries_ = std::move(folders);
    return set;
  }
  std::vector<std::string> expected;
  for (const InputSpec& input : set.inputs_) expected.push_back(fileStem(input.name) + ".npy");
  throw inputError(path, {},
                   fmt::format("no data found: expected {} (or .pb), one folder per sample "
                               "holding them, .npz archives, or image or audio files",
                               fmt::join(expected, ", ")));
}

std::optional<size_t> DataSet::sampleCount() const {
  if (hasAudio_) return std::nullopt;
  return entries_.size();
}

std::vector<Sample> DataSet::loadEntry(size_t index) const {
  const fs::path& entry = entries_.at(index);
  interp::DataArrayScope pooled;  // the sample workers free what is read here
  if (preprocess_) return loadMediaFile(index);
  if (dataFileKind(entry) == DataFileKind::Archive) return loadArchive(index);
  if (!stackIndex_.empty()) {
    const InputSpec& spec = inputs_.front();
    const int64_t batch = *spec.dims[0];
    interp::Array rows;
    try {
      rows = interp::readNpyRows(entry, stackIndex_[index] * batch, batch);
    } catch (const Error& e) {
      throw e.withFile(entry.string());
    }
    Sample sample;
    sample.source = fmt::format("{}[{}]", entry.string(), index);
    sample.inputs.emplace(spec.name, checkedArray(convertFloatType(rows, spec.type), spec, entry));
    return {std::move(sample)};
  }
  if (layout_ == Layout::SingleFile || layout_ == Layout::FilePerSample) {
    const InputSpec& spec = inputs_.front();
    interp::Array array = convertFloatType(readArray(entry), spec.type);
    return splitSamples(entry.string(), spec, splitStacked(array, spec), entry);
  }
  Sample sample;
  sample.source = entry.string();
  for (const InputSpec& spec : inputs_) {
    fs::path file = inputFile(entry, spec.name);
    if (file.empty()) {
      throw inputError(entry, fmt::format("input '{}'", spec.name),
                       fmt::format("neither {0}.npy nor {0}.pb exists", fileStem(spec.name)));
    }
    sample.inputs.emplace(spec.name, checkedArray(readArray(file), spec, file));
  }
  return {std::move(sample)};
}

void DataSet::forEach(const std::function<bool(Sample&)>& fn, size_t limit) const {
  size_t given = 0;
  for (size_t entry = 0; entry < entries_.size(); ++entry) {
    for (Sample& sample : loadEntry(entry)) {
      if (limit != 0 && given >= limit) return;
      ++given;
      if (!fn(sample)) return;
    }
  }
}

std::vector<Sample> DataSet::read(size_t limit) const {
  return readSamples(*this, limit);
}

Error sampleError(const Error& e, const Sample& sample, std::string_view doing) {
  std::string cause = fmt::format("{} ({} {}", e.cause(), doing, sample.source);
  if (!sample.madeUp.empty()) {
    cause += fmt::format("; {}: give --input-shapes, or --calib-data", sample.madeUp);
  }
  return Error(e.kind(), e.where().empty() ? sample.source : e.where(), e.subject(), cause + ")");
}

std::vector<Sample> randomSamples(std::span<const InputSpec> inputs, size_t count, uint64_t seed,
                                  std::vector<std::string>* warnings) {
  std::vector<interp::Shape> shapes;
  std::vector<std::string> madeUp;
  for (const InputSpec& spec : inputs) {
    if (!spec.steers.empty() && !spec.fixedValues) {
      throw Error(ErrorKind::Usage, {}, fmt::format("input '{}'", spec.name),
                  fmt::format("its values steer the model ({}): random values would take paths "
                              "real data never does; give them with --input-values {}=VALUE, "
                              "or give --calib-data or --eval-data",
                              spec.steers, spec.name));
    }
    if (spec.fixedValues && spec.fixedValues->size() > 1) {
      // A list is a 1-D input of its length.
      const auto length = static_cast<int64_t>(spec.fixedValues->size());
      if (spec.rankKnown && (spec.dims.size() != 1 || (spec.dims[0] && *spec.dims[0] != length))) {
        throw Error(ErrorKind::Usage, {}, fmt::format("input '{}'", spec.name),
                    fmt::format("--input-values gives {} values but the input is not 1-D of "
                                "that length",
                                length));
      }
      shapes.push_back({length});
      continue;
    }
    interp::Shape shape;
    std::vector<size_t> open;
    for (size_t i = 0; i < spec.dims.size(); ++i) {
      shape.push_back(spec.dims[i].value_or(1));
      if (!spec.dims[i]) open.push_back(i);
    }
    if (!open.empty()) {
      madeUp.push_back(fmt::format("input '{}' has open dims (axes {}) set to 1", spec.name,
                                   fmt::join(open, ", ")));
    }
    if (!open.empty() && warnings) {
      warnings->push_back(fmt::format(
          "input '{}' has open dims (axes {}): random inputs use 1 there; fix them with "
          "--input-shapes",
          spec.name, fmt::join(open, ", ")));
    }
    if (!spec.rankKnown && warnings) {
      warnings->push_back(fmt::format(
          "input '{}' has no declared shape: random inputs use a scalar; give --input-shapes",
          spec.name));
    }
    shapes.push_back(std::move(shape));
  }
  Random random(seed ^ 0x71a3f0c5e2d4b697ULL);
  std::vector<Sample> samples;
  for (size_t s = 0; s < count; ++s) {
    Sample sample;
    sample.source = fmt::format("random #{}", s);
    sample.madeUp = fmt::format("{}", fmt::join(madeUp, ", "));
    for (size_t k = 0; k < inputs.size(); ++k) {
      const InputSpec& spec = inputs[k];
      interp::Array values(DataType::Double, shapes[k]);
      double* data = values.data<double>();
      for (int64_t i = 0; i < values.numel(); ++i) {
        if (spec.fixedValues) {
          const std::vector<double>& fixed = *spec.fixedValues;
          data[i] = fixed.size() == 1 ? fixed[0] : fixed[static_cast<size_t>(i)];
        } else if (isFloatingPoint(spec.type)) {
          data[i] = random.normal();
        } else {
          data[i] = static_cast<double>(random.next() >> 63);
        }
      }
      Tensor tensor =
          Tensor::fromDoubles(spec.type, shapes[k], std::span<const double>(data, values.numel()));
      sample.inputs.emplace(spec.name, interp::Array::fromTensor(tensor));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

interp::Array convertFloatType(const interp::Array& array, DataType type) {
  if (array.dataType() == type || !isFloatingPoint(array.dataType()) || !isFloatingPoint(type)) {
    return array;
  }
  std::vector<double> values(static_cast<size_t>(array.numel()));
  for (int64_t i = 0; i < array.numel(); ++i) values[static_cast<size_t>(i)] = array.getDouble(i);
  return interp::Array::fromTensor(Tensor::fromDoubles(type, array.shape(), values));
}

}  // namespace qopt::analysis
