#include "Driver.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "HtmlReportFile.h"
#include "PassListing.h"
#include "Sha256.h"
#include "qopt/analysis/DataRange.h"
#include "qopt/analysis/SampleCache.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/ir/Printer.h"
#include "qopt/ir/TextFormat.h"
#include "qopt/ir/Verifier.h"
#include "qopt/media/Media.h"
#include "qopt/pass/Instrumentations.h"
#include "qopt/pass/PassManager.h"
#include "qopt/pass/PluginLoader.h"
#include "qopt/pass/Suggest.h"
#include "qopt/pass/Version.h"

namespace qopt {

namespace fs = std::filesystem;

namespace {

Error usage(const std::string& message) {
  return Error(message, ErrorKind::Usage);
}

Pipeline buildPipeline(const DriverOptions& options, const PassRegistry& registry) {
  if (!options.pipelineFile.empty()) return parsePipelineFile(options.pipelineFile, registry);
  return parsePipeline(options.pipelineText, registry, "<pipeline>");
}

void checkPrintAfter(const DriverOptions& options, const PassRegistry& registry) {
  std::vector<std::string> names = registry.names();
  for (const std::string& name : options.printAfter) {
    if (!registry.find(name)) {
      throw usage(fmt::format("--print-after: unknown pass '{}'{}", name, didYouMean(name, names)));
    }
  }
}

bool sameFile(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

struct Files {
  fs::path input;
  std::string output;  // "-" for stdout
};

Files checkFiles(const DriverOptions& options) {
  const auto& args = options.positional;
  if (args.empty()) throw usage("missing INPUT and OUTPUT (see qopt --help)");
  if (args.size() > 2) {
    throw usage(fmt::format("too many arguments: expected INPUT OUTPUT, got {} ('{}' ...)",
                            args.size(), args[2]));
  }
  if (args.size() == 1 && !options.inPlace) throw usage("missing OUTPUT (see qopt --help)");
  Files files{args[0], args.size() == 2 ? args[1] : args[0]};
  if (files.input == "-") throw usage("INPUT must be a file");
  if (files.output != "-" && sameFile(files.input, files.output) && !options.inPlace) {
    throw usage(fmt::format("OUTPUT '{}' is the INPUT file; pass --in-place to overwrite it",
                            files.output));
  }
  if (options.inPlace && !sameFile(files.input, files.output)) {
    throw usage("--in-place needs OUTPUT to be INPUT (or only INPUT given)");
  }
  return files;
}

void configureContext(const DriverOptions& options, PassContext& context, std::ostream& err) {
  context.target = options.target;
  context.seed = options.seed;
  context.resources.threads = static_cast<size_t>(options.threads);
  if (!options.maxMemory.empty()) {
    context.resources.maxMemoryBytes = parseMemorySize(options.maxMemory, "--max-memory");
  }
  context.data.calibData = options.calibData;
  context.data.evalData = options.evalData;
  context.data.preprocess = options.preprocess;
  // A malformed spec is an error even when no pass of the pipeline reads the data.
  if (!options.preprocess.empty()) media::PreprocessSpec::parse(options.preprocess);
  if (!options.inputShapes.empty())
    context.data.inputShapes = parseInputShapes(options.inputShapes);
  if (!options.inputValues.empty())
    context.data.inputValues = parseInputValues(options.inputValues);
  context.diagnostics().setSink(&err);
  context.diagnostics().setVerbosity(options.verbosity);
}

// Writes the result; returns the SHA-256 of what was written (only when `hash`).
std::string writeOutput(const DriverOptions& options, const Model& model, const Files& files,
                        std::ostream& out, bool hash) {
  if (files.output == "-") {
    std::string bytes = options.emit == "text" ? printModel(model) : serializeModel(model);
    out << bytes;
    out.flush();
    return hash ? sha256Hex(bytes) : std::string();
  }
  if (options.emit == "text") {
    writeFileAtomically(files.output, printModel(model));
  } else {
    SaveOptions save;
    save.allowOverwriteSource = options.inPlace;
    saveModel(model, files.output, save);
  }
  return hash ? sha256FileHex(files.output) : std::string();
}

Json buildReport(const DriverOptions& options, const ReportBuilder& builder, const Files& files,
                 const std::string& inputHash, const std::string& outputHash) {
  Json report = Json::object();
  report.append("qopt-version", versionString());
  const Json& collected = builder.report();
  if (const Json* pipeline = collected.find("pipeline")) report.append("pipeline", *pipeline);
  report.append("target", options.target.str());
  report.append("seed", options.seed);
  Json input = Json::object();
  input.append("path", files.input.string());
  input.append("sha256", inputHash);
  report.append("input", std::move(input));
  Json output = Json::object();
  output.append("path", files.output);
  output.append("format", options.emit);
  output.append("sha256", outputHash);
  report.append("output", std::move(output));
  for (const auto& [key, value] : collected.asObject()) {
    if (key != "pipeline") report.append(key, value);
  }
  return report;
}

// Reads the first sample of the data the run was given before any pass runs, with the input
// model as it was: data that looks scaled differently from the model's training gets a warning
// (the decoded sample stays cached for the passes). Data that cannot be read is left to the pass
// that reads it, whose error names the pass.
void checkData(const Model& model, PassContext& context) {
  for (const std::string* path : {&context.data.calibData, &context.data.evalData}) {
    if (path->empty() || (path == &context.data.evalData && *path == context.data.calibData))
      continue;
    std::vector<analysis::Sample> first;
    try {
      analysis::SampleCache& cache =
          analysis::sampleCache(context, *path, analysis::inputSpecs(model.graph(), context.data));
      first = analysis::readSamples(cache, 1);
    } catch (const Error&) {
      continue;
    }
    if (first.empty()) continue;
    for (const std::string& warning : analysis::dataRangeWarnings(model.graph(), first.front()))
      context.diagnostics().warning(warning);
  }
}

}  // namespace

PassRegistry loadPasses(const DriverOptions& options, PluginLoader& loader, Diagnostics& diag) {
  PassRegistry registry;
  fs::path builtin = builtinPassDirectory();
  std::error_code ec;
  if (!builtin.empty() && fs::is_directory(builtin, ec)) {
    loader.loadDirectory(builtin, registry);
  } else {
    diag.note(fmt::format("no built-in pass folder at {}", builtin.string()));
  }
  if (const char* searchPath = std::getenv("QOPT_PLUGIN_PATH")) {
    try {
      loader.loadSearchPath(searchPath, registry);
    } catch (const Error& e) {
      throw Error(e.kind(), e.where(), e.subject(), e.cause() + " (from QOPT_PLUGIN_PATH)");
    }
  }
  for (const std::string& file : options.pluginFiles) loader.loadFile(file, registry);
  return registry;
}

int runDriver(const DriverOptions& options, std::ostream& out, std::ostream& err) {
  if (options.help) {
    printHelp(out);
    return kExitOk;
  }
  if (options.version) {
    out << "qopt " << versionString() << '\n';
    return kExitOk;
  }

  Diagnostics loadDiagnostics(&err);
  loadDiagnostics.setVerbosity(options.verbosity);
  PluginLoader loader;
  PassRegistry registry = loadPasses(options, loader, loadDiagnostics);

  if (options.listPasses) {
    printPassList(registry, out, options.verbosity == Verbosity::Verbose, options.listFormat);
    return kExitOk;
  }
  if (!options.passDoc.empty()) {
    printPassDoc(registry, options.passDoc, out);
    return kExitOk;
  }
  Pipeline pipeline = buildPipeline(options, registry);
  checkPrintAfter(options, registry);
  if (options.printPipeline) {
    out << pipeline.str() << '\n';
    return kExitOk;
  }

  Files files = checkFiles(options);
  PassContext context;
  configureContext(options, context, err);

  // Every interpreter a pass creates in this process gets the limit.
  interp::setDefaultMaxTensorBytes(options.maxTensorBytes);
  std::unique_ptr<Model> model = loadModelAnyFormat(files.input, options.load);
  bool reporting = !options.reportFile.empty() || !options.reportHtmlFile.empty();
  std::string inputHash = reporting ? sha256FileHex(files.input) : std::string();
  checkData(*model, context);

  PassManager manager(std::move(pipeline));
  PassTimer timer(err);
  IrPrinter printer(err, options.printAfter);
  EachPassVerifier verifier;
  RemarkPrinter remarks(err);
  ReportBuilder report;
  if (options.verifyEach) manager.addInstrumentation(verifier);
  if (options.printAfterAll || !options.printAfter.empty()) manager.addInstrumentation(printer);
  if (options.verbosity == Verbosity::Verbose) manager.addInstrumentation(remarks);
  if (options.timePasses) manager.addInstrumentation(timer);
  if (reporting) manager.addInstrumentation(report);
  std::optional<Error> checkFailure;
  try {
    manager.run(*model, context);
  } catch (const Error& e) {
    // A check pass that failed on a structurally valid model (verify's budget) still writes the
    // output and the reports, which say what failed; the exit code says it too. Any other pass
    // may have failed halfway through a change: nothing is written.
    const Pass* failed = manager.failedPass();
    if (e.kind() != ErrorKind::Verification || failed == nullptr || !failed->isCheck() ||
        !verifyModel(*model).empty()) {
      throw;
    }
    checkFailure = e;
    if (reporting) report.pipelineFinished(*model, context);
  }

  // With --in-place a failed check leaves the input alone: its only copy is not replaced by a
  // model that failed.
  const bool keepInput = checkFailure && options.inPlace;
  std::string outputHash =
      keepInput ? std::string() : writeOutput(options, *model, files, out, reporting);
  if (reporting) {
    Json json = buildReport(options, report, files, inputHash, outputHash);
    if (checkFailure) json.append("failure", std::string(checkFailure->what()));
    if (!options.reportFile.empty()) writeFileAtomically(options.reportFile, json.dump(2) + "\n");
    if (!options.reportHtmlFile.empty()) {
      writeHtmlReport(options.reportHtmlFile, json, *model, context);
    }
  }
  if (keepInput) {
    throw Error(checkFailure->kind(), checkFailure->where(), checkFailure->subject(),
                checkFailure->cause() + "; --in-place: the input was left unchanged");
  }
  if (checkFailure) throw *checkFailure;
  return kExitOk;
}

}  // namespace qopt
