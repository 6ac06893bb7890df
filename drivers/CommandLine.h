// The qopt command line: flags (gflags, defined only here) and the two positional files.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "PassListing.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/pass/Diagnostics.h"
#include "qopt/pass/Target.h"

namespace qopt {

struct DriverOptions {
  bool help = false;
  bool version = false;
  bool listPasses = false;
  ListFormat listFormat = ListFormat::Text;  // --list-format
  std::string passDoc;                       // --pass-doc: one pass's page, generated part
  bool printPipeline = false;

  std::string pipelineText;  // -p
  bool pipelineGiven = false;
  std::string pipelineFile;              // --pipeline-file
  std::vector<std::string> pluginFiles;  // --load-pass-plugin (repeatable)

  Target target;
  std::string calibData;
  std::string evalData;
  std::string preprocess;
  std::string inputShapes;
  std::string inputValues;
  uint64_t seed = 0;
  int threads = 0;        // --threads; 0: every hardware thread
  std::string maxMemory;  // --max-memory; empty: the default share of the machine

  bool timePasses = false;
  bool printAfterAll = false;
  std::vector<std::string> printAfter;  // --print-after (repeatable, comma-separated)
  bool verifyEach = false;
  std::string reportFile;
  std::string reportHtmlFile;  // --report-html
  std::string emit = "onnx";   // onnx | text
  bool inPlace = false;
  Verbosity verbosity = Verbosity::Normal;

  // Limits for untrusted models (see README.md, Security).
  uint64_t maxTensorBytes = 0;  // --max-tensor-bytes; 0: the interpreter's default
  LoadOptions load;  // --max-model-bytes, --max-nesting-depth, --protobuf-recursion-limit

  std::vector<std::string> positional;  // INPUT OUTPUT
};

/// Parses argv. Throws qopt::Error (Usage) for an unknown flag (with a did-you-mean), a missing
/// or bad value; never exits the process.
DriverOptions parseCommandLine(int argc, char** argv);

/// The --help text.
void printHelp(std::ostream& out);

}  // namespace qopt
