// Model inputs for passes that run the model (verify, calibration, sensitivity): read from disk,
// or generated from a seed when no data is given.
//
// A data path is one of:
//   - a file (.npy or .pb, a TensorProto): one sample of a single-input model;
//   - a .npz archive (numpy.savez): arrays named after the model's inputs (any one name for a
//     single-input model), one sample, or one per row block when each array stacks K samples;
//   - an image (PNG, JPEG) or an audio clip (WAV, FLAC), or a folder of them: each image one
//     sample, each clip one sample per window, made by the preprocessing spec (--preprocess,
//     qopt/media/Media.h) for the input they feed; the model's other inputs take their
//     --input-values;
//   - a folder holding <input name>.npy / .pb for every model input: one sample (the layout
//     qopt-run reads);
//   - a folder of sample folders, each holding <input name>.npy / .pb: one sample per folder;
//   - a folder of .npy / .pb files, for a single-input model, or of .npz archives: one sample
//     per file.
// Folders and files are taken in name order (byte-wise), so runs are reproducible. Characters of
// input names outside [A-Za-z0-9_.-] are '_' in file names, as qopt-run writes them.
// A single-input sample whose first dim is k times the model's static batch size is split into
// k samples (one .npy holding a whole calibration set: given as the data path, it is read a
// sample at a time).
//
// Each array must have the input's element type (float types convert into each other) and
// match every static dim of the input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"

namespace qopt::media {
struct PreprocessSpec;
}
namespace qopt::interp {
class NpzArchive;
}

namespace qopt::analysis {

using Inputs = std::map<std::string, interp::Array>;

struct Sample {
  std::string source;  // the file or folder it came from ("random #3" for generated ones)
  Inputs inputs;       // by graph input name
  /// What a generated sample had to make up ("input 'x' has open dims (axes 2, 3) set to 1"),
  /// named when a run on it fails; empty for samples read from files.
  std::string madeUp;
};

/// `e`, raised while running `sample`, with the sample named (as where it happened when `e`
/// names no file) after `doing` ("running sample random #3") and, for a generated sample, what
/// it made up and how to avoid that.
Error sampleError(const Error& e, const Sample& sample, std::string_view doing = "running sample");

/// Runs `run` (one run of the model on `sample`) and rethrows what it raises as sampleError.
template <typename Run>
decltype(auto) runningSample(const Sample& sample, Run&& run,
                             std::string_view doing = "running sample") {
  try {
    return run();
  } catch (const Error& e) {
    throw sampleError(e, sample, doing);
  }
}

/// A graph input the caller must feed (initializers listed as inputs are left out).
struct InputSpec {
  std::string name;
  DataType type = DataType::Float;
  /// One entry per axis; nullopt where the model leaves the dim open.
  std::vector<std::optional<int64_t>> dims;
  bool rankKnown = false;
  /// --input-values: what the input takes in random samples instead of random values.
  std::optional<std::vector<double>> fixedValues;
  /// Non-empty for a control input (analysis::controlInputs): what its values steer. Random
  /// samples need fixedValues for it.
  std::string steers;
};

/// The inputs of `graph` to feed, with dims fixed by `shapes` (--input-shapes) and values by
/// `values` (--input-values) where given, and control inputs marked.
/// Throws qopt::Error (Usage) when `shapes` or `values` name an input the graph lacks, or
/// `shapes` gives a rank or a static dim that contradicts the model.
std::vector<InputSpec> inputSpecs(const Graph& graph, std::span<const InputShape> shapes = {},
                                  std::span<const InputValue> values = {});
/// The same with the shapes and values of the run's data settings.
std::vector<InputSpec> inputSpecs(const Graph& graph, const DataSettings& data);

/// Reads samples lazily; open() only lists what is there.
class DataSet {
 public:
  /// Throws qopt::Error (Input) naming the path when it does not exist or matches no layout;
  /// (Usage) when `preprocess` is malformed, or given for data that holds no image or audio.
  static DataSet open(const std::filesystem::path& path, std::vector<InputSpec> inputs,
                      std::string_view preprocess = {});

  /// Calls `fn` on each sample in order until it returns false or `limit` samples (0: no limit)
  /// were given. Throws qopt::Error (Input) naming the file for unreadable or mismatched data.
  void forEach(const std::function<bool(Sample&)>& fn, size_t limit = 0) const;
  /// The first `limit` samples (0: all).
  std::vector<Sample> read(size_t limit = 0) const;

  const std::filesystem::path& path() const { return path_; }

  /// The files or folders the samples come from, in order; entry `i` gives one or more samples
  /// (a stacked file is split). forEach reads them in this order.
  size_t entryCount() const { return entries_.size(); }
  /// The number of samples as the layout tells it before reading (one per entry; a stacked
  /// .npy or .npz file is one entry per sample); unknown for audio, whose clips give a sample
  /// per window.
  std::optional<size_t> sampleCount() const;
  std::vector<Sample> loadEntry(size_t i) const;

 private:
  enum class Layout { SingleFile, InputFolder, SampleFolders, FilePerSample };

  /// Images or audio `files` feed the input `spec` names (or the only one without
  /// --input-values); the others take their --input-values.
  void useMedia(const media::PreprocessSpec& spec, const std::vector<std::filesystem::path>& files);
  /// A .npz archive as the data path: one sample, or one per row block when it stacks them.
  void openStackedArchive(const std::filesystem::path& path);
  std::vector<Sample> loadArchive(size_t index) const;
  std::vector<Sample> loadMediaFile(size_t index) const;

  std::filesystem::path path_;
  Layout layout_ = Layout::SingleFile;
  std::vector<std::filesystem::path> entries_;
  /// For a .npy or .npz file that stacks the whole set: which of its samples each entry is
  /// (rows [k * batch, (k + 1) * batch) of each array, read alone: the file is never loaded
  /// whole); empty otherwise.
  std::vector<int64_t> stackIndex_;
  std::vector<InputSpec> inputs_;
  /// Image and audio data: how files become arrays, the input they feed, and the other inputs'
  /// --input-values.
  std::shared_ptr<const media::PreprocessSpec> preprocess_;
  size_t mediaInput_ = 0;
  Inputs fixedInputs_;
  bool hasAudio_ = false;
  /// The stacked .npz archive, opened once (a compressed one is inflated in order).
  std::shared_ptr<const interp::NpzArchive> archive_;
};

/// The first `limit` samples (0: all) that `source` (a DataSet or a SampleCache) gives.
template <class Source>
std::vector<Sample> readSamples(Source& source, size_t limit) {
  std::vector<Sample> samples;
  source.forEach(
      [&](Sample& sample) {
        samples.push_back(std::move(sample));
        return true;
      },
      limit);
  return samples;
}

/// `count` samples drawn from `seed`: floats from a standard normal distribution, integers
/// uniformly from {0, 1}, booleans fair; inputs with fixedValues take those. Open dims become 1
/// (each named in `warnings`). Throws qopt::Error (Usage) naming a control input without
/// fixedValues: its values would be a guess.
std::vector<Sample> randomSamples(std::span<const InputSpec> inputs, size_t count, uint64_t seed,
                                  std::vector<std::string>* warnings = nullptr);

/// `array` converted to float type `type` when both are floating point and differ (a float16
/// model fed float32 data); otherwise returned unchanged.
interp::Array convertFloatType(const interp::Array& array, DataType type);

/// Characters outside [A-Za-z0-9_.-] replaced by '_' (how names become file names).
std::string fileStem(const std::string& name);

}  // namespace qopt::analysis
