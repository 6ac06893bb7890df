// qopt-interp-latency: times the reference interpreter on one model, the counterpart of
// tests/ort/run_ort.js --runs for ONNX Runtime.
//
//   qopt-interp-latency MODEL.onnx --inputs DIR [--outputs DIR] [--threads N] [--runs N]
//                       [--warmup N] [--no-fuse]
//
// Inputs are read from DIR/<input name>.npy; with --outputs, the last run's outputs are written
// to DIR/<output name>.npy (names as qopt-run writes them). Prints one JSON line:
// {"min_ms": ..., "median_ms": ..., "min_cpu_ms": ..., "runs": N, "peak_bytes": ...}, where
// min_cpu_ms is the least CPU time (all threads of the process) one run took: with one thread it
// is the latency without the time the run waited for a CPU on a busy machine.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "qopt/interp/Interpreter.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace fs = std::filesystem;

namespace {

struct Options {
  fs::path model, inputs, outputs;
  int threads = 1;
  int runs = 10;
  int warmup = 2;
  bool fuse = true;  // --no-fuse: every node as its own step (what verify{layers=all} runs)
};

double processCpuMs() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

std::string fileStem(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

int parseCount(const std::string& flag, const std::string& text, int min) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min || v > 100000) {
    throw qopt::Error(qopt::ErrorKind::Usage, "qopt-interp-latency", {},
                      fmt::format("{} needs a number >= {}, got '{}'", flag, min, text));
  }
  return static_cast<int>(v);
}

Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        throw qopt::Error(qopt::ErrorKind::Usage, "qopt-interp-latency", {},
                          fmt::format("{} needs a value", arg));
      }
      return argv[++i];
    };
    if (arg == "--inputs")
      o.inputs = value();
    else if (arg == "--outputs")
      o.outputs = value();
    else if (arg == "--threads")
      o.threads = parseCount(arg, value(), 0);
    else if (arg == "--runs")
      o.runs = parseCount(arg, value(), 1);
    else if (arg == "--warmup")
      o.warmup = parseCount(arg, value(), 0);
    else if (arg == "--no-fuse")
      o.fuse = false;
    else if (!arg.empty() && arg[0] != '-' && o.model.empty())
      o.model = arg;
    else {
      throw qopt::Error(qopt::ErrorKind::Usage, "qopt-interp-latency", {},
                        fmt::format("unexpected argument '{}'", arg));
    }
  }
  if (o.model.empty() || o.inputs.empty()) {
    throw qopt::Error(qopt::ErrorKind::Usage, "qopt-interp-latency", {},
                      "usage: qopt-interp-latency MODEL.onnx --inputs DIR [--outputs DIR] "
                      "[--threads N] [--runs N] [--warmup N] [--no-fuse]");
  }
  return o;
}

int run(const Options& o) {
  std::unique_ptr<qopt::Model> model = qopt::loadModel(o.model);
  const qopt::Graph& graph = model->graph();
  std::map<std::string, qopt::interp::Array> feeds;
  for (const qopt::Value* input : graph.inputs()) {
    if (input->isInitializer()) continue;
    feeds.emplace(input->name(),
                  qopt::interp::readNpy(o.inputs / (fileStem(input->name()) + ".npy")));
  }
  qopt::interp::RunOptions runOptions;
  runOptions.threads = o.threads;
  runOptions.fuse = o.fuse;
  qopt::interp::Interpreter interpreter(graph, runOptions);
  std::vector<qopt::interp::Array> results;
  for (int i = 0; i < o.warmup; ++i) results = interpreter.run(feeds);
  std::vector<double> times, cpuTimes;
  for (int i = 0; i < o.runs; ++i) {
    const double cpuStart = processCpuMs();
    const auto start = std::chrono::steady_clock::now();
    results = interpreter.run(feeds);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    cpuTimes.push_back(processCpuMs() - cpuStart);
  }
  std::sort(times.begin(), times.end());
  std::sort(cpuTimes.begin(), cpuTimes.end());
  if (!o.outputs.empty()) {
    fs::create_directories(o.outputs);
    for (size_t i = 0; i < results.size(); ++i) {
      qopt::interp::writeNpy(o.outputs / (fileStem(graph.outputs()[i]->name()) + ".npy"),
                             results[i]);
    }
  }
  std::printf(
      "{\"min_ms\": %.3f, \"median_ms\": %.3f, \"min_cpu_ms\": %.3f, \"runs\": %zu, "
      "\"peak_bytes\": %llu}\n",
      times.front(), times[times.size() / 2], cpuTimes.front(), times.size(),
      static_cast<unsigned long long>(interpreter.lastPeakBytes()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const qopt::Error& e) {
    std::fprintf(stderr, "qopt-interp-latency: error: %s\n", e.what());
    return qopt::exitCodeFor(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qopt-interp-latency: error: %s\n", e.what());
    return qopt::kExitUsageOrInput;
  }
}
