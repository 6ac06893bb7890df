// qopt.run's C++ side: one run of the command (runDriver) on a model file, its output model kept
// in memory rather than written to a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qopt::python {

struct RunRequest {
  std::string model;        // the model file
  std::string displayName;  // how messages name the model (a model given as bytes has no file)
  std::string pipeline;     // -p's text, or with pipelineIsFile --pipeline-file's path
  bool pipelineIsFile = false;
  std::string reportFile;  // --report
  std::string calibData;
  std::string evalData;
  std::string preprocess;  // --preprocess: how image and audio files among the data are read
  std::string target;      // empty: the command's default
  std::string inputShapes;
  std::string inputValues;
  std::string maxMemory;
  int threads = 0;
  uint64_t seed = 0;
  std::vector<std::string> plugins;  // --load-pass-plugin
  bool verbose = false;
};

struct RunFailure {
  std::string kind;  // errorKindName's spelling
  std::string message;
  int exitCode = 0;
};

struct RunOutcome {
  std::string model;  // the output model: empty when the run failed before writing it
  std::string log;    // what the command prints to stderr
  std::optional<RunFailure> failure;
};

/// Runs the command. What it would report as an error and exit code comes back as `failure`
/// rather than thrown, so that a failed check still hands over the model and report it wrote.
RunOutcome runCommand(const RunRequest& request);

}  // namespace qopt::python
