// Reading and writing ONNX files. Every error is a qopt::Error naming the file and, where it
// applies, the node or tensor and the cause.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "qopt/ir/Graph.h"

namespace qopt {

struct LoadOptions {
  /// Deepest subgraph nesting accepted (If inside Loop inside ...).
  int maxNestingDepth = 64;
  /// Protobuf recursion limit while parsing.
  int protobufRecursionLimit = 256;
  /// Import sorts graphs whose nodes are not in topological order (a cycle is an error).
  bool sortNodes = true;
  /// Largest model file loadModel reads, in bytes (0: no limit besides protobuf's 2 GiB).
  uint64_t maxFileBytes = 0;
};

struct SaveOptions {
  enum class ExternalLayout {
    Keep,        // tensors loaded from external data are written to the same files and offsets
    SingleFile,  // every tensor of at least `externalThreshold` bytes goes to one data file
    Inline,      // everything inside the .onnx file (fails over 2 GiB)
  };
  ExternalLayout layout = ExternalLayout::Keep;
  uint64_t externalThreshold = 1024;
  /// Data file name for SingleFile (default: "<output file name>.data"), relative to the output.
  std::string externalFileName;
  /// Refuse to overwrite `path` when it is the file the model was read from.
  bool allowOverwriteSource = false;
};

/// Reads an ONNX model (binary protobuf). External data is mapped lazily, relative to the file.
std::unique_ptr<Model> loadModel(const std::filesystem::path& path,
                                 const LoadOptions& options = {});
/// Parses a model from bytes; `displayName` is used in messages, `baseDir` for external data.
std::unique_ptr<Model> loadModelFromBytes(std::string_view bytes, std::string_view displayName,
                                          const std::filesystem::path& baseDir,
                                          const LoadOptions& options = {});

/// Writes atomically: a temporary file in the target folder, renamed over `path` on success.
/// Byte-deterministic: the same model gives the same bytes.
void saveModel(const Model& model, const std::filesystem::path& path,
               const SaveOptions& options = {});
/// The serialized ModelProto (all tensors inline); throws when it would exceed 2 GiB.
std::string serializeModel(const Model& model);

/// Reads one TensorProto file (.pb, as in ONNX's test data).
Tensor loadTensorProtoFile(const std::filesystem::path& path);
/// Parses TensorProto bytes; `displayName` is used in messages, `baseDir` for external data.
Tensor loadTensorProtoFromBytes(std::string_view bytes, std::string_view displayName,
                                const std::filesystem::path& baseDir);
/// Writes one TensorProto file atomically.
void saveTensorProtoFile(const Tensor& tensor, const std::filesystem::path& path);

/// Writes `bytes` to `path` atomically (temporary file in the same folder, fsync, rename).
void writeFileAtomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace qopt
