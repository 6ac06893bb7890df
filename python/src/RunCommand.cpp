#include "RunCommand.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <new>
#include <sstream>

#include <fmt/format.h>

#include "Bindings.h"
#include "Driver.h"
#include "Errors.h"
#include "Interruptible.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/PluginLoader.h"
#include "qopt/pass/Target.h"

namespace py = pybind11;

namespace qopt::python {

namespace {

Error usage(const std::string& message) {
  return Error(message, ErrorKind::Usage);
}

// The options the command line would give for the same request (CommandLine.cpp's checks of
// values that runDriver takes as they are).
DriverOptions driverOptions(const RunRequest& request) {
  DriverOptions options;
  if (request.pipelineIsFile) {
    options.pipelineFile = request.pipeline;
  } else {
    options.pipelineText = request.pipeline;
    options.pipelineGiven = true;
  }
  options.pluginFiles = request.plugins;
  if (!request.target.empty()) {
    try {
      options.target = parseTarget(request.target);
    } catch (const Error& e) {
      throw usage("target: " + e.cause());
    }
  }
  options.calibData = request.calibData;
  options.evalData = request.evalData;
  options.preprocess = request.preprocess;
  options.inputShapes = request.inputShapes;
  options.inputValues = request.inputValues;
  options.seed = request.seed;
  if (request.threads < 0 || request.threads > 1024) {
    throw usage(fmt::format("threads must be from 0 to 1024, got {}", request.threads));
  }
  options.threads = request.threads;
  options.maxMemory = request.maxMemory;
  options.reportFile = request.reportFile;
  options.verbosity = request.verbose ? Verbosity::Verbose : Verbosity::Normal;
  // OUTPUT "-": the model comes back through `out` instead of a file.
  options.positional = {request.model, "-"};
  return options;
}

RunFailure failureOf(const Error& e) {
  return {errorKindName(e.kind()), e.what(), exitCodeFor(e.kind())};
}

}  // namespace

RunOutcome runCommand(const RunRequest& request) {
  std::ostringstream out;
  std::ostringstream err;
  RunOutcome outcome;
  // The same outcomes as qopt.cpp's main: every error becomes a message and an exit code.
  try {
    runDriver(driverOptions(request), out, err);
  } catch (const Error& e) {
    outcome.failure = failureOf(renamedFile(e, request.model, request.displayName));
  } catch (const std::bad_alloc&) {
    outcome.failure = RunFailure{"internal", "out of memory", kExitUsageOrInput};
  } catch (const std::exception& e) {
    outcome.failure =
        RunFailure{"internal", fmt::format("internal error: {}", e.what()), kExitUsageOrInput};
  }
  outcome.model = std::move(out).str();
  outcome.log = std::move(err).str();
  return outcome;
}

void bindRun(py::module_& m) {
  m.def(
      "run_command",
      [](const std::string& model, const std::string& displayName, const std::string& pipeline,
         bool pipelineIsFile, const std::string& reportFile, const std::string& calibData,
         const std::string& evalData, const std::string& preprocess, const std::string& target,
         const std::string& inputShapes, const std::string& inputValues,
         const std::string& maxMemory, int threads, uint64_t seed,
         const std::vector<std::string>& plugins, bool verbose) {
        RunRequest request{model,    displayName, pipeline, pipelineIsFile, reportFile,  calibData,
                           evalData, preprocess,  target,   inputShapes,    inputValues, maxMemory,
                           threads,  seed,        plugins,  verbose};
        // Without the GIL, and stopped by Ctrl-C (KeyboardInterrupt) between passes and samples.
        RunOutcome outcome = runInterruptibly([&] { return runCommand(request); });
        py::object failure = py::none();
        if (outcome.failure) {
          failure = py::make_tuple(outcome.failure->kind, outcome.failure->message,
                                   outcome.failure->exitCode);
        }
        return py::make_tuple(py::bytes(outcome.model), outcome.log, failure);
      },
      py::kw_only(), py::arg("model"), py::arg("display_name"), py::arg("pipeline"),
      py::arg("pipeline_is_file"), py::arg("report_file"), py::arg("calib_data"),
      py::arg("eval_data"), py::arg("preprocess"), py::arg("target"), py::arg("input_shapes"),
      py::arg("input_values"), py::arg("max_memory"), py::arg("threads"), py::arg("seed"),
      py::arg("plugins"), py::arg("verbose"),
      "Runs the qopt command on a model file; returns (model bytes, log, None or (kind, "
      "message, exit code)).");
  m.def(
      "help",
      [] {
        DriverOptions options;
        options.help = true;
        std::ostringstream out;
        std::ostringstream err;
        runDriver(options, out, err);
        return std::move(out).str();
      },
      "What runDriver prints for help: qopt.run's reference.");
}

}  // namespace qopt::python
