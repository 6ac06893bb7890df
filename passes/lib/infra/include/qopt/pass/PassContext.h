// Everything a pass may read or publish besides the model, passed explicitly (qopt has no global
// state): the target, the data settings, the seed, diagnostics, the name map, a snapshot of the
// input model, the analyses passes share (typed, computed once) and the JSON results reports
// show.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qopt/pass/Diagnostics.h"
#include "qopt/pass/Json.h"
#include "qopt/pass/NameMap.h"
#include "qopt/pass/Target.h"

namespace qopt {

class Model;

struct InputShape {
  std::string name;
  std::vector<int64_t> dims;
  bool operator==(const InputShape&) const = default;
};

/// Parses "name:1x3x224x224,other:1x10" (a name may itself contain ':'; the last one splits).
/// Throws qopt::Error (Usage) naming the bad entry.
std::vector<InputShape> parseInputShapes(std::string_view text);

/// The values an input takes where no data is given (--input-values): one value fills the
/// input's shape, several make a 1-D input of that length.
struct InputValue {
  std::string name;
  std::vector<double> values;
  bool operator==(const InputValue&) const = default;
};

/// Parses "sr=16000,steps=4,shape=[1,3,224,224]" (the last '=' of an entry outside brackets
/// splits the name). Throws qopt::Error (Usage) naming the bad entry.
std::vector<InputValue> parseInputValues(std::string_view text);

/// Parses a memory size: "512M", "8G", "1.5GiB", "300000000" (bytes); K/M/G/T are powers of
/// 1024. Throws qopt::Error (Usage) naming `flag` for anything else or for 0.
uint64_t parseMemorySize(std::string_view text, std::string_view flag);
/// "1.5 GiB", "300 MiB", "12 KiB", "100 B".
std::string formatBytes(uint64_t bytes);

/// What the run may use for work over samples (--threads, --max-memory).
struct Resources {
  /// Threads that run samples: 0 for every hardware thread.
  size_t threads = 0;
  /// What the passes' data may take: decoded samples, their runs, what passes keep of them.
  uint64_t maxMemoryBytes = defaultMaxMemoryBytes();

  /// --max-memory's default: half of the machine's physical memory (4 GiB when it is unknown).
  static uint64_t defaultMaxMemoryBytes();
  /// `threads`, or the hardware threads when it is 0 (at least 1).
  size_t threadCount() const;
};

/// Data shared by passes that run the model (calibration, evaluation).
struct DataSettings {
  std::string calibData;                // --calib-data: file or folder of calibration inputs
  std::string evalData;                 // --eval-data: inputs for accuracy checks
  std::string preprocess;               // --preprocess: how images and audio become inputs
  std::vector<InputShape> inputShapes;  // --input-shapes: fixes dynamic input dims
  std::vector<InputValue> inputValues;  // --input-values: inputs not drawn at random

  /// The dims given for graph input `name`, or nullptr.
  const std::vector<int64_t>* shapeFor(std::string_view name) const;
};

class PassContext {
 public:
  PassContext();
  ~PassContext();
  PassContext(const PassContext&) = delete;
  PassContext& operator=(const PassContext&) = delete;

  Target target;
  DataSettings data;
  Resources resources;
  uint64_t seed = 0;

  Diagnostics& diagnostics() { return diagnostics_; }
  NameMap& nameMap() { return nameMap_; }
  const NameMap& nameMap() const { return nameMap_; }

  /// The input model as it was before the pipeline ran, or nullptr when no pass of the pipeline
  /// asked for it (Pass::needsOriginalModel). Tensors share buffers with the live model.
  const Model* originalModel() const { return original_.get(); }
  void setOriginalModel(std::unique_ptr<Model> model);

  /// Results published by passes for reports (--report, the HTML page), a JSON object keyed by
  /// pass or topic ("calibration": {...}). Passes exchange data through analyses, not through it.
  Json& results() { return results_; }
  const Json& results() const { return results_; }

  /// What an analysis describes, which decides how long it lives.
  enum class AnalysisScope {
    Data,     // the run's data (decoded calibration samples): kept for the whole run
    Model,    // the current model: dropped when a pass changes the model, unless it preserves it
    Outcome,  // what a pass did (mixed-precision's choice): kept for the whole run
  };

  /// The analysis stored under `key`, of the type its library declares with the key, or nullptr.
  /// Analyses are computed once and shared by the passes after the one that made them (as MLIR's
  /// analysis manager does); the library that owns a key is the only one to define its type.
  template <class T>
  T* findAnalysis(std::string_view key) const {
    auto it = analyses_.find(key);
    return it == analyses_.end() ? nullptr : static_cast<T*>(it->second.value.get());
  }
  /// Stores `value` under `key` (replacing what was there) and returns it.
  template <class T>
  T& setAnalysis(std::string_view key, AnalysisScope scope, T value) {
    auto stored = std::make_shared<T>(std::move(value));
    T& ref = *stored;
    analyses_.insert_or_assign(std::string(key), AnalysisEntry{std::move(stored), scope});
    return ref;
  }
  /// The analysis under `key`, computed by `make()` (returning a T) when absent.
  template <class T, class Make>
  T& analysis(std::string_view key, AnalysisScope scope, Make&& make) {
    if (T* found = findAnalysis<T>(key)) return *found;
    return setAnalysis<T>(key, scope, make());
  }
  /// Drops the model analyses that `preserved` does not name (the pass manager calls it after a
  /// pass changed the model).
  void invalidateModelAnalyses(const std::vector<std::string>& preserved = {});

 private:
  struct AnalysisEntry {
    std::shared_ptr<void> value;
    AnalysisScope scope;
  };

  Diagnostics diagnostics_;
  NameMap nameMap_;
  std::unique_ptr<Model> original_;
  Json results_ = Json::object();
  std::map<std::string, AnalysisEntry, std::less<>> analyses_;
};

}  // namespace qopt
