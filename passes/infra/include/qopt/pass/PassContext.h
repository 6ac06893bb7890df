// Everything a pass may read or publish besides the model, passed explicitly (qopt has no global
// state): the target, the data settings, the seed, diagnostics, the name map, a snapshot of the
// input model, and a store where passes publish results for later passes and reports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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

/// Data shared by passes that run the model (calibration, evaluation).
struct DataSettings {
  std::string calibData;                // --calib-data: file or folder of calibration inputs
  std::string evalData;                 // --eval-data: inputs for accuracy checks
  std::vector<InputShape> inputShapes;  // --input-shapes: fixes dynamic input dims

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
  uint64_t seed = 0;

  Diagnostics& diagnostics() { return diagnostics_; }
  NameMap& nameMap() { return nameMap_; }
  const NameMap& nameMap() const { return nameMap_; }

  /// The input model as it was before the pipeline ran, or nullptr when no pass of the pipeline
  /// asked for it (Pass::needsOriginalModel). Tensors share buffers with the live model.
  const Model* originalModel() const { return original_.get(); }
  void setOriginalModel(std::unique_ptr<Model> model);

  /// Results published by passes, a JSON object keyed by pass or topic ("calibration": {...}).
  /// Reports include it verbatim; later passes read it.
  Json& results() { return results_; }
  const Json& results() const { return results_; }

 private:
  Diagnostics diagnostics_;
  NameMap nameMap_;
  std::unique_ptr<Model> original_;
  Json results_ = Json::object();
};

}  // namespace qopt
