// What DataSet.cpp and DataSetFiles.cpp share: the kinds of data files, and the checks every
// array read for a model input goes through.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "qopt/analysis/DataSet.h"

namespace qopt::analysis {

enum class DataFileKind { Other, Array, Archive, Image, Audio };

/// By extension: .npy and .pb arrays, .npz archives, images and audio (qopt/media/Media.h).
DataFileKind dataFileKind(const std::filesystem::path& path);

Error inputError(const std::filesystem::path& where, const std::string& subject,
                 const std::string& cause);

/// `array` in the input's type (float types convert), checked against its rank and static dims;
/// throws qopt::Error (Input) naming `file` and the input.
interp::Array checkedArray(const interp::Array& array, const InputSpec& spec,
                           const std::filesystem::path& file);

/// [k*b, ...] split into k arrays of [b, ...] when the input's batch dim is a static b.
std::vector<interp::Array> splitStacked(const interp::Array& array, const InputSpec& spec);

/// One sample per part of a single-input model's file, named `source` or `source[k]`.
std::vector<Sample> splitSamples(const std::string& source, const InputSpec& spec,
                                 const std::vector<interp::Array>& parts,
                                 const std::filesystem::path& file);

}  // namespace qopt::analysis
