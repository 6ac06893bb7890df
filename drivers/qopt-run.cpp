// qopt-run: runs an ONNX model with qopt's reference interpreter.
//
//   qopt-run model.onnx --inputs DIR --outputs DIR [--threads N] [limits]
//
// Each graph input is read from DIR/<name>.npy or DIR/<name>.pb (a TensorProto; a SequenceProto or
// OptionalProto for sequence and optional inputs); each output is written to OUTDIR/<name>.npy, or
// OUTDIR/<name>.pb where .npy cannot hold it (sequences, optionals, strings). Characters outside
// [A-Za-z0-9_.-] in names become '_'.
#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ValueProtoFiles.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    "usage: qopt-run MODEL.onnx --inputs DIR --outputs DIR [--threads N]\n"
    "  Runs MODEL with the reference interpreter. Inputs are read from DIR/<input name>.npy\n"
    "  (or .pb: a TensorProto, or a SequenceProto or OptionalProto for sequence and optional\n"
    "  inputs); outputs are written to DIR/<output name>.npy, or .pb (as the inputs) for\n"
    "  sequences, optionals and strings. Characters outside [A-Za-z0-9_.-] in names are\n"
    "  replaced by '_'. --threads 0 uses every core.\n"
    "  Limits for untrusted models (exit code 2 when exceeded):\n"
    "    --max-tensor-bytes N         largest tensor allocated (default: 16 GiB or half the\n"
    "                                 memory, whichever is smaller)\n"
    "    --max-model-bytes N          largest model file read (default: no limit besides 2 GiB)\n"
    "    --max-nesting-depth N        deepest If/Loop/Scan body nesting (default 64)\n"
    "    --protobuf-recursion-limit N deepest protobuf message nesting (default 256)\n";

struct Options {
  fs::path model;
  fs::path inputs;
  fs::path outputs;
  int threads = 1;
  uint64_t maxTensorBytes = 0;  // 0: the interpreter's default
  qopt::LoadOptions load;
};

std::string fileStem(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

Options parseArgs(int argc, char** argv) {
  Options options;
  auto usageError = [](const std::string& cause) {
    throw qopt::Error(qopt::ErrorKind::Usage, "qopt-run", {}, cause);
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (size_t eq = arg.find('='); eq != std::string::npos) return arg.substr(eq + 1);
      if (i + 1 >= argc) usageError(fmt::format("{} needs a value", flag));
      return argv[++i];
    };
    auto is = [&](const std::string& flag) { return arg == flag || arg.rfind(flag + "=", 0) == 0; };
    auto number = [&](const std::string& flag, uint64_t min, uint64_t max) -> uint64_t {
      std::string text = value(flag);
      char* end = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0 || n < min || n > max) {
        usageError(
            fmt::format("{} must be a number from {} to {}, got '{}'", flag, min, max, text));
      }
      return n;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (is("--inputs")) {
      options.inputs = value("--inputs");
    } else if (is("--outputs")) {
      options.outputs = value("--outputs");
    } else if (is("--threads")) {
      std::string text = value("--threads");
      char* end = nullptr;
      long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || n < 0 || n > 1024) {
        usageError(fmt::format("--threads must be a number from 0 to 1024, got '{}'", text));
      }
      options.threads = static_cast<int>(n);
    } else if (is("--max-tensor-bytes")) {
      options.maxTensorBytes = number("--max-tensor-bytes", 1, UINT64_MAX);
    } else if (is("--max-model-bytes")) {
      options.load.maxFileBytes = number("--max-model-bytes", 1, UINT64_MAX);
    } else if (is("--max-nesting-depth")) {
      options.load.maxNestingDepth = static_cast<int>(number("--max-nesting-depth", 1, 1024));
    } else if (is("--protobuf-recursion-limit")) {
      options.load.protobufRecursionLimit =
          static_cast<int>(number("--protobuf-recursion-limit", 16, 4096));
    } else if (!arg.empty() && arg[0] == '-') {
      usageError(fmt::format("unknown option '{}'", arg));
    } else if (options.model.empty()) {
      options.model = arg;
    } else {
      usageError(fmt::format("unexpected argument '{}' (one model only)", arg));
    }
  }
  if (options.model.empty()) usageError("no model given");
  if (options.inputs.empty()) usageError("--inputs DIR is required");
  if (options.outputs.empty()) usageError("--outputs DIR is required");
  return options;
}

qopt::interp::Array readInput(const fs::path& dir, const qopt::Value& input) {
  const std::string& name = input.name();
  std::string stem = fileStem(name);
  fs::path npy = dir / (stem + ".npy");
  fs::path pb = dir / (stem + ".pb");
  if (input.type().kind == qopt::ValueType::Kind::Other && fs::exists(pb)) {
    return qopt::readValueProtoFile(pb, input.type());
  }
  if (fs::exists(npy)) return qopt::interp::readNpy(npy);
  if (fs::exists(pb)) {
    try {
      return qopt::interp::Array::fromTensor(qopt::loadTensorProtoFile(pb));
    } catch (const qopt::Error& e) {
      throw e.withFile(pb.string());
    }
  }
  throw qopt::Error(
      qopt::ErrorKind::Input, dir.string(), fmt::format("input '{}'", name),
      fmt::format("neither {} nor {} exists", npy.filename().string(), pb.filename().string()));
}

qopt::interp::Array toNpyCompatible(const qopt::interp::Array& array) {
  using qopt::DataType;
  DataType t = array.dataType();
  if (t == DataType::BFloat16 || t == DataType::Float8E4M3FN || t == DataType::Float8E4M3FNUZ ||
      t == DataType::Float8E5M2 || t == DataType::Float8E5M2FNUZ || t == DataType::Float4E2M1) {
    // numpy has no such dtype: widen to float32, which holds these values exactly.
    qopt::interp::Array wide(DataType::Float, array.shape());
    std::vector<float> values = array.toFloatVector();
    std::copy(values.begin(), values.end(), wide.data<float>());
    std::fprintf(stderr, "qopt-run: note: %s output written as float32\n",
                 std::string(qopt::dataTypeName(t)).c_str());
    return wide;
  }
  if (t == DataType::Int4 || t == DataType::UInt4) {
    qopt::interp::Array wide(t == DataType::Int4 ? DataType::Int8 : DataType::UInt8, array.shape());
    std::copy_n(array.bytes(), array.byteSize(), wide.bytes());
    return wide;
  }
  return array;
}

int run(const Options& options) {
  std::unique_ptr<qopt::Model> model = qopt::loadModel(options.model, options.load);
  const qopt::Graph& graph = model->graph();
  qopt::interp::RunOptions runOptions;
  runOptions.threads = options.threads;
  if (options.maxTensorBytes != 0) runOptions.maxTensorBytes = options.maxTensorBytes;
  qopt::interp::Interpreter interpreter(graph, runOptions);

  std::map<std::string, qopt::interp::Array> inputs;
  for (const qopt::Value* input : graph.inputs()) {
    if (input->isInitializer()) {
      std::string stem = fileStem(input->name());
      bool given = fs::exists(options.inputs / (stem + ".npy")) ||
                   fs::exists(options.inputs / (stem + ".pb"));
      if (!given) continue;  // keeps the initializer's value
    }
    inputs.emplace(input->name(), readInput(options.inputs, *input));
  }
  std::vector<qopt::interp::Array> results = interpreter.run(inputs);

  std::error_code ec;
  fs::create_directories(options.outputs, ec);
  if (ec) {
    throw qopt::Error(qopt::ErrorKind::Input, options.outputs.string(), {},
                      fmt::format("cannot create the output folder: {}", ec.message()));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string& name = graph.outputs()[i]->name();
    const qopt::interp::Array& result = results[i];
    if (!result.isTensor() || result.dataType() == qopt::DataType::String) {
      qopt::writeValueProtoFile(options.outputs / (fileStem(name) + ".pb"), result);
    } else {
      qopt::interp::writeNpy(options.outputs / (fileStem(name) + ".npy"), toNpyCompatible(result));
    }
  }
  return qopt::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const qopt::Error& e) {
    std::fprintf(stderr, "qopt-run: error: %s\n", e.what());
    if (e.kind() == qopt::ErrorKind::Usage) std::fputs(kUsage, stderr);
    return qopt::exitCodeFor(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qopt-run: error: %s\n", e.what());
    return qopt::kExitUsageOrInput;
  }
}
