#include "InspectCommand.h"

#include <charconv>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qopt/analysis/Inspect.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/TextFormat.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/Suggest.h"
#include "qopt/qdq/SmallLayers.h"

namespace qopt {

namespace {

constexpr const char* kInspectHelp =
    "usage: qopt inspect [options] MODEL\n"
    "\n"
    "Shows, per compute layer (Conv, ConvTranspose, Gemm, MatMul; LSTM, GRU, RNN, which have\n"
    "no quantized form), inside If/Loop/Scan bodies too, the precision it will run in on\n"
    "TensorRT (INT8 through Q/DQ on its input and weight, FP16 when its float inputs are\n"
    "float16, else FP32) with the weight type, per-channel or per-tensor scales, the scale range\n"
    "and why a layer stays in float; then the share of multiply-accumulates in INT8. Shapes come\n"
    "from one run of the reference interpreter on inputs of the shapes --input-shapes gives,\n"
    "else of the first --calib-data sample, else of the declared shapes with open dims set to 1\n"
    "(named in the output). Inputs whose values steer the model (an If condition, a Loop trip\n"
    "count, a shape) are never drawn at random: give them with --input-values or the data.\n"
    "\n"
    "options:\n"
    "  --json                 Print JSON instead of the table\n"
    "  --input-shapes=<spec>  Fix dynamic input dims: name:1x3x224x224,other:1x10\n"
    "  --input-values=<spec>  Values of inputs not drawn at random: sr=16000,shape=[1,3,8,8]\n"
    "  --calib-data=<path>    Count MACs at the shapes of this data's first sample\n"
    "  --preprocess=<spec>    How images and audio in --calib-data become inputs (see qopt "
    "--help)\n"
    "  --seed=<n>             Seed of the random inputs (default 0)\n"
    "  --max-model-bytes=<n>  Largest model file read (default: no limit besides 2 GiB)\n"
    "  --max-nesting-depth=<n>        Deepest subgraph nesting accepted, 1-1024 (default 64)\n"
    "  --protobuf-recursion-limit=<n> Protobuf recursion limit, 16-4096 (default 256)\n"
    "  --max-tensor-bytes=<n> Largest tensor the interpreter allocates (default: 16 GiB or half\n"
    "                         the memory)\n"
    "  --help                 Show this text\n";

Error usage(const std::string& message) {
  return Error(message, ErrorKind::Usage);
}

struct InspectOptions {
  bool json = false;
  bool help = false;
  std::string inputShapes;
  std::string inputValues;
  std::string calibData;
  std::string preprocess;
  uint64_t seed = 0;
  LoadOptions load;
  uint64_t maxTensorBytes = 0;  // 0: the interpreter's default
  std::string model;
};

// A whole number in [lo, hi] for option `name`.
uint64_t numberOption(const std::string& name, const std::string& value, uint64_t lo, uint64_t hi) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size()) {
    throw usage(fmt::format("bad value '{}' for option '--{}' (a number expected)", value, name));
  }
  if (n < lo || n > hi) throw usage(fmt::format("--{} must be from {} to {}", name, lo, hi));
  return n;
}

InspectOptions parseInspectArgs(int argc, char** argv) {
  InspectOptions options;
  static const std::vector<std::string> kFlags = {"json",
                                                  "input-shapes",
                                                  "input-values",
                                                  "calib-data",
                                                  "preprocess",
                                                  "seed",
                                                  "help",
                                                  "max-model-bytes",
                                                  "max-nesting-depth",
                                                  "max-tensor-bytes",
                                                  "protobuf-recursion-limit"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!options.model.empty()) {
        throw usage(
            fmt::format("qopt inspect takes one MODEL, got '{}' and '{}'", options.model, arg));
      }
      options.model = arg;
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    bool hasValue = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
      hasValue = true;
    }
    auto needValue = [&]() {
      if (hasValue) return;
      if (i + 1 >= argc) throw usage(fmt::format("option '--{}' needs a value", body));
      value = argv[++i];
    };
    if (body == "json" && !hasValue) {
      options.json = true;
    } else if ((body == "help" || body == "h") && !hasValue) {
      options.help = true;
    } else if (body == "input-shapes") {
      needValue();
      options.inputShapes = value;
    } else if (body == "input-values") {
      needValue();
      options.inputValues = value;
    } else if (body == "calib-data") {
      needValue();
      options.calibData = value;
    } else if (body == "preprocess") {
      needValue();
      options.preprocess = value;
    } else if (body == "seed") {
      needValue();
      options.seed = numberOption(body, value, 0, UINT64_MAX);
    } else if (body == "max-model-bytes") {
      needValue();
      options.load.maxFileBytes = numberOption(body, value, 1, UINT64_MAX);
    } else if (body == "max-nesting-depth") {
      needValue();
      options.load.maxNestingDepth = static_cast<int>(numberOption(body, value, 1, 1024));
    } else if (body == "protobuf-recursion-limit") {
      needValue();
      options.load.protobufRecursionLimit = static_cast<int>(numberOption(body, value, 16, 4096));
    } else if (body == "max-tensor-bytes") {
      needValue();
      options.maxTensorBytes = numberOption(body, value, 1, UINT64_MAX);
    } else {
      throw usage(
          fmt::format("unknown option '{}' for qopt inspect{}", arg, didYouMean(body, kFlags)));
    }
  }
  return options;
}

}  // namespace

int runInspectCommand(int argc, char** argv, std::ostream& out, std::ostream&) {
  InspectOptions options = parseInspectArgs(argc, argv);
  if (options.help) {
    out << kInspectHelp;
    return kExitOk;
  }
  if (options.model.empty()) throw usage("qopt inspect: missing MODEL (see qopt inspect --help)");
  analysis::ShapeRequest request;
  if (!options.inputShapes.empty()) request.inputShapes = parseInputShapes(options.inputShapes);
  if (!options.inputValues.empty()) request.inputValues = parseInputValues(options.inputValues);
  request.calibData = options.calibData;
  request.preprocess = options.preprocess;
  request.seed = options.seed;
  std::unique_ptr<Model> model = loadModelAnyFormat(options.model, options.load);
  if (options.maxTensorBytes != 0) interp::setDefaultMaxTensorBytes(options.maxTensorBytes);
  analysis::InspectResult result;
  try {
    result = analysis::inspectGraph(model->graph(), request);
    qdq::noteSmallLayers(result);
  } catch (const Error& e) {
    throw e.withFile(options.model);
  }
  if (options.json) {
    out << analysis::inspectJson(result).dump(2) << '\n';
  } else {
    analysis::printInspectTable(result, out);
  }
  return kExitOk;
}

}  // namespace qopt
