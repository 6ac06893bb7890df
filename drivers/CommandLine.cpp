#include "CommandLine.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/Suggest.h"

// gflags keeps the flag definitions and values; the parsing is qopt's own (below), so that an
// unknown flag or a bad value is a qopt::Error with exit code 2 rather than gflags' exit(1).
DEFINE_string(p, "", "The pipeline to run, e.g. 'dce,canonicalize{...}' (see --list-passes)");
DEFINE_string(pipeline_file, "",
              "Read the pipeline from a file: same grammar, one item per line allowed, # comments");
DEFINE_bool(print_pipeline, false,
            "Print the pipeline in canonical form (every option, defaults included) and exit");
DEFINE_bool(list_passes, false, "List the available passes with their options and exit");
DEFINE_string(list_format, "text",
              "Format of --list-passes: text, or markdown (the generated part of every "
              "docs/passes/ page)");
DEFINE_string(pass_doc, "",
              "Print the generated part of docs/passes/NAME.md (Markdown: summary and options of "
              "pass NAME, or of fixpoint) and exit");
DEFINE_string(load_pass_plugin, "", "Load a pass plugin module (repeatable)");
DEFINE_string(target, "tensorrt", "Deployment target: tensorrt, ort or generic");
DEFINE_string(trt_version, "10.3",
              "TensorRT version the output is meant for (with --target=tensorrt)");
DEFINE_string(calib_data, "", "Calibration inputs (file or folder) for passes that calibrate");
DEFINE_string(eval_data, "", "Evaluation inputs for passes that measure accuracy");
DEFINE_string(preprocess, "",
              "How image (PNG, JPEG) and audio (WAV, FLAC) files in --calib-data/--eval-data "
              "become inputs: 'resize=640x640 keep-aspect=pad scale=1/255 mean=0.485,0.456,0.406 "
              "std=0.229,0.224,0.225 channels=rgb layout=nchw'; audio 'rate=16000 frames=512'");
DEFINE_string(input_shapes, "", "Fix dynamic input dims: name:1x3x224x224,other:1x10");
DEFINE_string(input_values, "",
              "Values of inputs that steer the model (If conditions, Loop trip counts, shapes) "
              "where no data is given: sr=16000,shape=[1,3,8,8]");
DEFINE_uint64(seed, 0, "Seed for passes that sample");
DEFINE_int32(threads, 0, "Threads that run calibration and evaluation samples (0: every core)");
DEFINE_string(max_memory, "",
              "Memory the passes' data may take (512M, 8G; default: half the machine's memory)");
DEFINE_bool(time_passes, false, "Print the wall time of every pass (stderr)");
DEFINE_bool(print_after_all, false, "Print the IR after every pass (stderr)");
DEFINE_string(print_after, "", "Print the IR after the named passes (repeatable, comma-separated)");
DEFINE_bool(verify_each, false, "Run the structural verifier after every pass");
DEFINE_string(report, "", "Write a JSON report of the run to this file");
DEFINE_string(report_html, "",
              "Write a self-contained HTML report (pipeline, passes, per-layer errors, layer "
              "precisions) to this file");
DEFINE_string(emit, "onnx", "Output format: onnx (binary) or text (qopt's IR dump)");
DEFINE_bool(in_place, false, "Allow OUTPUT to be INPUT (overwritten atomically)");
DEFINE_bool(q, false, "Quiet: no warnings");
DEFINE_bool(v, false, "Verbose: notes and per-node remarks");
DEFINE_uint64(max_tensor_bytes, 0,
              "Largest tensor the interpreter may allocate when passes run the model (0: 16 GiB "
              "or half the memory, whichever is smaller)");
DEFINE_uint64(max_model_bytes, 0, "Largest model file read, in bytes (0: no limit besides 2 GiB)");
DEFINE_int32(max_nesting_depth, 64, "Deepest subgraph nesting (If/Loop/Scan bodies) accepted");
DEFINE_int32(protobuf_recursion_limit, 256,
             "Deepest nesting of protobuf messages accepted while reading a model");
// gflags defines --help and --version itself; qopt handles both (see parseCommandLine).
DECLARE_bool(help);
DECLARE_bool(version);

namespace qopt {

namespace {

std::string dashed(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

bool isOurFlag(const gflags::CommandLineFlagInfo& info) {
  return info.filename == __FILE__ || info.name == "help" || info.name == "version";
}

std::vector<std::string> ourFlagNames() {
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  std::vector<std::string> names;
  for (const auto& info : all) {
    if (isOurFlag(info)) names.push_back(dashed(info.name));
  }
  return names;
}

Error usage(const std::string& message) {
  return Error(message, ErrorKind::Usage);
}

void appendCommaSeparated(std::vector<std::string>& out, const std::string& text) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
}

bool isExplicit(const char* name) {
  gflags::CommandLineFlagInfo info;
  return gflags::GetCommandLineFlagInfo(name, &info) && !info.is_default;
}

}  // namespace

DriverOptions parseCommandLine(int argc, char** argv) {
  DriverOptions options;
  bool flagsDone = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (flagsDone || arg == "-" || arg.size() < 2 || arg[0] != '-') {
      options.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flagsDone = true;
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string> value;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    std::string key = body;
    std::replace(key.begin(), key.end(), '-', '_');

    gflags::CommandLineFlagInfo info;
    bool known = gflags::GetCommandLineFlagInfo(key.c_str(), &info) && isOurFlag(info);
    if (!known && key.starts_with("no") && !value) {
      // --no-time-passes / --notime_passes for booleans.
      std::string positive = key.substr(key.starts_with("no_") ? 3 : 2);
      if (gflags::GetCommandLineFlagInfo(positive.c_str(), &info) && isOurFlag(info) &&
          info.type == "bool") {
        key = positive;
        value = "false";
        known = true;
      }
    }
    if (!known) {
      throw usage(fmt::format("unknown option '{}'{} (see qopt --help)", arg,
                              didYouMean(dashed(key), ourFlagNames())));
    }
    std::string flag = (key.size() == 1 ? "-" : "--") + dashed(key);
    if (!value) {
      if (info.type == "bool") {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw usage(fmt::format("option '{}' needs a value", flag));
      }
    }
    if (key == "load_pass_plugin") {
      if (value->empty()) throw usage("option '--load-pass-plugin' needs a file");
      options.pluginFiles.push_back(*value);
      continue;
    }
    if (key == "print_after") {
      appendCommaSeparated(options.printAfter, *value);
      continue;
    }
    if (key == "p") options.pipelineGiven = true;
    if (gflags::SetCommandLineOption(key.c_str(), value->c_str()).empty()) {
      throw usage(
          fmt::format("bad value '{}' for option '{}' ({} expected)", *value, flag, info.type));
    }
  }

  options.help = FLAGS_help;
  options.version = FLAGS_version;
  options.listPasses = FLAGS_list_passes;
  options.passDoc = FLAGS_pass_doc;
  options.printPipeline = FLAGS_print_pipeline;
  options.pipelineText = FLAGS_p;
  options.pipelineFile = FLAGS_pipeline_file;
  options.calibData = FLAGS_calib_data;
  options.evalData = FLAGS_eval_data;
  options.preprocess = FLAGS_preprocess;
  options.inputShapes = FLAGS_input_shapes;
  options.inputValues = FLAGS_input_values;
  options.seed = FLAGS_seed;
  if (FLAGS_threads < 0 || FLAGS_threads > 1024) {
    throw usage(fmt::format("--threads must be from 0 to 1024, got {}", FLAGS_threads));
  }
  options.threads = FLAGS_threads;
  options.maxMemory = FLAGS_max_memory;
  if (isExplicit("max_memory")) parseMemorySize(options.maxMemory, "--max-memory");
  options.timePasses = FLAGS_time_passes;
  options.printAfterAll = FLAGS_print_after_all;
  options.verifyEach = FLAGS_verify_each;
  options.reportFile = FLAGS_report;
  options.reportHtmlFile = FLAGS_report_html;
  options.emit = FLAGS_emit;
  options.inPlace = FLAGS_in_place;
  options.maxTensorBytes = FLAGS_max_tensor_bytes;
  options.load.maxFileBytes = FLAGS_max_model_bytes;
  options.load.maxNestingDepth = FLAGS_max_nesting_depth;
  options.load.protobufRecursionLimit = FLAGS_protobuf_recursion_limit;
  // Upper bounds keep parsing and import, which recurse per level, well inside the stack.
  if (FLAGS_max_nesting_depth < 1 || FLAGS_max_nesting_depth > 1024) {
    throw usage("--max-nesting-depth must be from 1 to 1024");
  }
  if (FLAGS_protobuf_recursion_limit < 16 || FLAGS_protobuf_recursion_limit > 4096) {
    throw usage("--protobuf-recursion-limit must be from 16 to 4096");
  }

  if (options.pipelineGiven && !options.pipelineFile.empty()) {
    throw usage("give the pipeline either with -p or with --pipeline-file, not both");
  }
  if (options.emit != "onnx" && options.emit != "text") {
    static const std::vector<std::string> kFormats = {"onnx", "text"};
    throw usage(fmt::format("bad value '{}' for option '--emit'{} (valid choices: onnx, text)",
                            options.emit, didYouMean(options.emit, kFormats)));
  }
  if (FLAGS_list_format == "markdown") {
    options.listFormat = ListFormat::Markdown;
  } else if (FLAGS_list_format != "text") {
    static const std::vector<std::string> kListFormats = {"text", "markdown"};
    throw usage(
        fmt::format("bad value '{}' for option '--list-format'{} (valid choices: text, markdown)",
                    FLAGS_list_format, didYouMean(FLAGS_list_format, kListFormats)));
  }
  if (isExplicit("list_format") && !options.listPasses) {
    throw usage("--list-format applies to --list-passes");
  }
  if (isExplicit("pass_doc")) {
    if (options.passDoc.empty()) throw usage("option '--pass-doc' needs a pass name");
    if (options.listPasses) throw usage("give either --list-passes or --pass-doc, not both");
  }
  if (FLAGS_q && FLAGS_v) throw usage("-q and -v contradict each other");
  options.verbosity = FLAGS_q ? Verbosity::Quiet : FLAGS_v ? Verbosity::Verbose : Verbosity::Normal;

  try {
    options.target = parseTarget(FLAGS_target);
  } catch (const Error& e) {
    throw usage("--target: " + e.cause());
  }
  if (isExplicit("trt_version")) {
    if (!options.target.isTensorRT()) {
      throw usage(
          fmt::format("--trt-version applies to --target=tensorrt, not --target={}", FLAGS_target));
    }
    try {
      options.target.trtVersion = parseTrtVersion(FLAGS_trt_version);
    } catch (const Error& e) {
      throw usage("--trt-version: " + e.cause());
    }
  }
  return options;
}

void printHelp(std::ostream& out) {
  out << "usage: qopt [options] INPUT OUTPUT\n"
         "       qopt inspect [--json] MODEL   (layer precisions; see qopt inspect --help)\n"
         "\n"
         "Reads an ONNX model (binary or ONNX text), runs a pipeline of passes over it and writes\n"
         "the result. Without a pipeline the model is read and written back unchanged.\n"
         "OUTPUT may be '-' for standard output. INPUT is never overwritten unless OUTPUT is\n"
         "INPUT and --in-place is given.\n"
         "\n"
         "Pipelines: pass{key=value key2=value},fixpoint(p1,p2){max-iterations=8}; list values as\n"
         "ops=[Conv,Gemm]. Pass modules load from <prefix>/lib/qopt/passes, QOPT_PLUGIN_PATH\n"
         "(colon-separated folders or files) and --load-pass-plugin.\n"
         "\n"
         "Exit codes: 0 success, 1 a verification or check failed, 2 usage or input error.\n"
         "\n"
         "options:\n";
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  for (const auto& info : all) {
    if (info.filename != __FILE__) continue;
    std::string name = dashed(info.name);
    std::string flag = name.size() == 1 ? "-" + name : "--" + name;
    std::string spelled = info.type == "bool" ? flag : fmt::format("{}=<{}>", flag, info.type);
    std::string defaults = info.type == "bool" || info.default_value.empty()
                               ? std::string()
                               : fmt::format(" (default: {})", info.default_value);
    out << fmt::format("  {}\n      {}{}\n", spelled, info.description, defaults);
  }
  out << "  --help\n      Show this text\n  --version\n      Show qopt's version\n";
}

}  // namespace qopt
