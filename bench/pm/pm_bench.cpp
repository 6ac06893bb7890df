// Pass manager overhead and the first passes' scaling.
//
//   qopt_pm_bench [--nodes N] [--noops P] [--repeat R] [--sizes 10000,100000,1000000]
//                 [--passes dce,topo-sort] [--overhead 0|1] [--caches warm,cold] [--rounds N]
//
// Part 1 writes a model of N nodes (a chain of Add with small weights and Relu) to a temporary
// file, then times loadModel + saveModel against a PassManager run of P no-op passes over the
// loaded model (pipeline parsing, context, name map observer and the passes included), and
// prints the ratio (goal: under 5%). Part 2 builds, for each size, a model in memory that gives
// every built-in pass work (Constant nodes, Identity and Dropout, dead branches, duplicate
// weights, Clip with attribute bounds), runs each pass alone on a fresh copy and prints the time
// per node (goal: flat within 2x from the smallest to the largest size), and the same relative
// to Model::clone of that model, which separates the passes' own scaling from the memory
// hierarchy's (a 10k-node model fits in cache, a 1M-node one does not). Each size gets as many
// runs as it takes to process about as many nodes as the largest size does (the median is
// printed), so that the small sizes are not at the mercy of one preemption; --rounds (default 3)
// repeats the whole table and prints the median of the rounds for each cell.
//
// Part 2 runs twice by default. "warm": the pass starts right after the model was built, so a
// 10k-node model (a few MB) is in the caches and a 1M-node one (several hundred MB) is not.
// "cold": a 96 MiB buffer is written between building and running, so every size starts from
// memory, as a pass does in a pipeline after loading or after other passes on a large model;
// what is left between the sizes is the pass's own scaling plus the cache capacity its random
// accesses (name tables) need.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/pass/PassManager.h"
#include "qopt/pass/PluginLoader.h"

namespace fs = std::filesystem;
using namespace qopt;

namespace {

struct Options {
  int64_t nodes = 100000;
  int noops = 20;
  int repeat = 5;
  std::vector<int64_t> sizes = {10000, 100000, 1000000};
  std::vector<std::string> passes = {"dce", "eliminate-identity", "canonicalize",
                                     "dedupe-initializers", "topo-sort"};
  bool overhead = true;
  std::vector<std::string> caches = {"warm", "cold"};
  int rounds = 3;
};

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    items.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return items;
}

Options parseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--nodes") {
      options.nodes = std::stoll(value);
    } else if (flag == "--noops") {
      options.noops = std::stoi(value);
    } else if (flag == "--repeat") {
      options.repeat = std::stoi(value);
    } else if (flag == "--sizes") {
      options.sizes.clear();
      for (const std::string& size : splitList(value)) options.sizes.push_back(std::stoll(size));
    } else if (flag == "--passes") {
      options.passes = splitList(value);
    } else if (flag == "--overhead") {
      options.overhead = value != "0";
    } else if (flag == "--rounds") {
      options.rounds = std::max(1, std::stoi(value));
    } else if (flag == "--caches") {
      options.caches = splitList(value);
      for (const std::string& c : options.caches) {
        if (c != "warm" && c != "cold")
          throw Error("--caches takes warm, cold or both", ErrorKind::Usage);
      }
    } else {
      throw Error(
          "usage: qopt_pm_bench [--nodes N] [--noops P] [--repeat R] [--sizes a,b,c] "
          "[--passes p,q] [--overhead 0|1] [--caches warm,cold] [--rounds N]",
          ErrorKind::Usage);
    }
  }
  return options;
}

double seconds(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t half = values.size() / 2;
  return values.size() % 2 ? values[half] : (values[half - 1] + values[half]) / 2;
}

ValueType f32(int64_t n) {
  return ValueType::tensor(DataType::Float, {n});
}

TensorPtr floats(std::vector<float> values) {
  return std::make_shared<Tensor>(
      Tensor::fromFloats({static_cast<int64_t>(values.size())}, values));
}

std::unique_ptr<Model> emptyModel(int64_t opset) {
  auto model = std::make_unique<Model>();
  model->irVersion = 8;
  model->setOpsetVersion("", opset);
  return model;
}

// Part 1's model: x -> (Add w_i -> Relu)* -> y, about `nodes` nodes.
std::unique_ptr<Model> chainModel(int64_t nodes) {
  auto model = emptyModel(17);
  Graph& g = model->graph();
  Value* current = g.addInput("x", f32(4));
  for (int64_t i = 0; i + 1 < nodes; i += 2) {
    Value* w = g.addInitializer(floats({float(i), 1, 2, 3}));
    current = g.createNode("Add", {current, w}, 1)->output(0);
    current = g.createNode("Relu", {current}, 1)->output(0);
  }
  g.addOutput(current);
  return model;
}

// Part 2's model: blocks of 10 nodes, each giving every built-in pass something to do.
std::unique_ptr<Model> workModel(int64_t nodes) {
  auto model = emptyModel(13);
  Graph& g = model->graph();
  Value* current = g.addInput("x", f32(4));
  for (int64_t block = 0; block * 10 < nodes; ++block) {
    Node* constant = g.createNode("Constant", {}, 1);
    constant->setAttr(Attribute::makeFloats("value_floats", {1, 2, 3, float(block % 97)}));
    Value* dup = g.addInitializer(floats({0.5f, 0.25f, 0.125f, float(block % 7)}));
    Value* a = g.createNode("Add", {current, constant->output(0)}, 1)->output(0);
    Value* i = g.createNode("Identity", {a}, 1)->output(0);
    Value* d = g.createNode("Dropout", {i}, 1)->output(0);
    Value* m = g.createNode("Mul", {d, dup}, 1)->output(0);
    m->setType(f32(4));
    Node* clip = g.createNode("Clip", {m}, 1);
    clip->setAttr(Attribute::makeFloat("min", 0.0f));
    clip->setAttr(Attribute::makeFloat("max", 6.0f));
    Value* dead = g.createNode("Neg", {a}, 1)->output(0);
    g.createNode("Abs", {dead}, 1);
    current = g.createNode("Relu", {clip->output(0)}, 1)->output(0);
  }
  g.addOutput(current);
  return model;
}

PassRegistry noopRegistry() {
  class NoopPass : public Pass {
   public:
    NoopPass() : Pass("noop", "Does nothing") {}
    PassResult run(Model&, PassContext&) override { return {}; }
  };
  PassRegistry registry("<bench>");
  registry.add<NoopPass>();
  return registry;
}

void overhead(const Options& options) {
  fs::path dir = fs::temp_directory_path() / fmt::format("qopt_pm_bench_{}", ::getpid());
  fs::create_directories(dir);
  fs::path in = dir / "in.onnx";
  fs::path out = dir / "out.onnx";
  saveModel(*chainModel(options.nodes), in);

  PassRegistry registry = noopRegistry();
  std::string pipeline;
  for (int i = 0; i < options.noops; ++i) pipeline += i ? ",noop" : "noop";

  std::vector<double> io, pm;
  for (int r = 0; r < options.repeat; ++r) {
    std::unique_ptr<Model> model;
    io.push_back(seconds([&] {
      model = loadModel(in);
      saveModel(*model, out);
    }));
    pm.push_back(seconds([&] {
      PassManager manager(parsePipeline(pipeline, registry));
      PassContext context;
      manager.run(*model, context);
    }));
  }
  size_t nodes = loadModel(in)->graph().numNodes();
  double ioTime = median(io), pmTime = median(pm);
  fmt::print("pass manager overhead: {} no-op passes over {} nodes\n", options.noops, nodes);
  fmt::print("  load + save      {:10.3f} ms\n", ioTime * 1e3);
  fmt::print("  pass manager     {:10.3f} ms\n", pmTime * 1e3);
  fmt::print("  overhead         {:10.3f} %   (goal < 5%)\n", 100.0 * pmTime / ioTime);
  fs::remove_all(dir);
}

// Writes a buffer three times the size of the last-level cache (32 MiB here), so that what the
// model and its name tables had in the caches is gone.
void evictCaches() {
  static std::vector<char> buffer(size_t{96} << 20);
  for (size_t i = 0; i < buffer.size(); i += 64) buffer[i] = static_cast<char>(buffer[i] + 1);
  asm volatile("" : : "r"(buffer.data()) : "memory");
}

// Median seconds of `run` on a fresh work model of `size` nodes; `nodes` gets the node count.
// With `cold`, the caches are emptied between building the model and running.
double timeOnFreshModel(int64_t size, int repeat, bool cold, size_t& nodes,
                        const std::function<void(Model&)>& run) {
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    auto model = workModel(size);
    nodes = model->graph().numNodes();
    if (cold) evictCaches();
    times.push_back(seconds([&] { run(*model); }));
  }
  return median(times);
}

// Prints the row and returns its max/min.
double printRow(const std::string& name, const std::vector<double>& values, const char* format) {
  fmt::print("  {:<22}", name);
  for (double v : values) fmt::print(fmt::runtime(format), v);
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  fmt::print("{:>12.2f}\n", *hi / *lo);
  return *hi / *lo;
}

void scaling(const Options& options, bool cold) {
  PassRegistry registry;
  PluginLoader loader;
  loader.loadDirectory(builtinPassDirectory(), registry);
  // Every size processes about as many nodes in total as the largest one: a 10k-node run takes
  // a millisecond or two, so on a shared machine one preemption would move a median of five
  // runs by 2x, while hundreds of runs keep the median where the pass is.
  int64_t largest = *std::max_element(options.sizes.begin(), options.sizes.end());
  int largestRuns = largest >= 1000000 ? (options.repeat + 1) / 2 : options.repeat;
  auto repeatFor = [&](int64_t size) {
    int64_t runs = (largest * largestRuns + size - 1) / size;
    return static_cast<int>(std::max<int64_t>(largestRuns, runs));
  };
  // Two baselines, linear by construction, show what the memory hierarchy alone does to the
  // time per node as the model grows: a walk that reads each node and the uses of its outputs
  // (the least any pass reads), and Model::clone, which touches every node and value once
  // (allocation, name tables).
  std::vector<std::string> rows = options.passes;
  rows.push_back("(node walk)");
  rows.push_back("(Model::clone)");
  const size_t firstBaseline = options.passes.size();
  auto runRow = [&](const std::string& row, Model& m) {
    if (row == "(node walk)") {
      size_t uses = 0;
      for (Node* n : m.graph().nodes()) {
        for (const Value* out : n->outputs()) uses += out->uses().size();
      }
      asm volatile("" : : "r"(uses));  // keeps the walk's reads from being optimised away
      return;
    }
    if (row == "(Model::clone)") {
      (void)m.clone();
      return;
    }
    PassManager manager(parsePipeline(row, registry));
    PassContext context;
    manager.run(m, context);
  };
  // A small model's time depends on what else shares the last-level cache (on a VM, other
  // guests too), which drifts over seconds: the rounds measure every row and size in turn, and
  // each cell reports the median of its rounds.
  std::vector<std::vector<std::vector<double>>> perNode(
      rows.size(), std::vector<std::vector<double>>(options.sizes.size()));
  for (int round = 0; round < options.rounds; ++round) {
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t i = 0; i < options.sizes.size(); ++i) {
        size_t nodes = 0;
        double t = timeOnFreshModel(options.sizes[i], repeatFor(options.sizes[i]), cold, nodes,
                                    [&](Model& m) { runRow(rows[r], m); });
        perNode[r][i].push_back(t * 1e9 / static_cast<double>(nodes));
      }
    }
  }

  fmt::print(
      "\n{} caches: time per node (ns), median of {} rounds of the median of runs on a "
      "fresh model each (runs:",
      cold ? "cold" : "warm", options.rounds);
  for (int64_t size : options.sizes) fmt::print(" {}", repeatFor(size));
  fmt::print(")\n");
  fmt::print("  {:<22}", "pass");
  for (int64_t size : options.sizes) fmt::print("{:>12}", size);
  fmt::print("{:>12}\n", "max/min");
  std::vector<std::vector<double>> medians(rows.size());
  size_t flat = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (const std::vector<double>& rounds : perNode[r]) medians[r].push_back(median(rounds));
    double spread = printRow(rows[r], medians[r], "{:>12.1f}");
    if (r < firstBaseline && spread <= 2) ++flat;
  }
  fmt::print("  flat within 2x: {} of {} passes{}\n", flat, firstBaseline,
             cold ? "" : " (the baselines show what the caches alone add)");
  fmt::print("\ntime relative to Model::clone of the same model\n");
  for (size_t r = 0; r < firstBaseline; ++r) {
    std::vector<double> relative;
    for (size_t i = 0; i < options.sizes.size(); ++i) {
      relative.push_back(medians[r][i] / medians.back()[i]);
    }
    printRow(rows[r], relative, "{:>12.2f}");
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = parseArgs(argc, argv);
    if (options.overhead) overhead(options);
    for (const std::string& caches : options.caches) scaling(options, caches == "cold");
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "qopt_pm_bench: error: %s\n", e.what());
    return 2;
  }
}
