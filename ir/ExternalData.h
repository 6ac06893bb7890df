// External data: where tensor bytes outside the .onnx file may live, and how saving places them.
// Private to libqopt.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "ProtoConvert.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt::detail {

/// The file that `location` names inside `baseDir`. Refuses (qopt::Error naming `where` and
/// `subject`) an empty or absolute location, a ".." component, and a location that leads out of
/// `baseDir` through a symbolic link: a model must not make qopt read or write elsewhere.
std::filesystem::path resolveExternalLocation(const std::filesystem::path& baseDir,
                                              const std::string& location, const std::string& where,
                                              const std::string& subject);

/// Everything inline (the serializer refuses models over protobuf's 2 GiB limit).
std::unique_ptr<TensorPlacer> makeInlinePlacer();

/// The placer that SaveOptions::layout asks for, writing next to `outputPath`.
std::unique_ptr<TensorPlacer> makeTensorPlacer(const SaveOptions& options,
                                               const std::filesystem::path& outputPath);

}  // namespace qopt::detail
