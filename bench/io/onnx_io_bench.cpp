// qopt's ONNX load + save against protobuf's own parse + serialize of the same bytes, and the
// memory a round trip of a model with external data over 2 GiB takes.
//
//   qopt_io_bench [--size-mb N] [--layers L] [--external-gb G] [--repeat R] [--skip-external]
//
// Part 1 builds a model of about N MB (L blocks of MatMul, Add, Relu with raw_data weights and
// typed-field biases), then times,
// in one run: ParseFromString + SerializeToString (protobuf alone) against loadModelFromBytes +
// serializeModel (qopt, in memory), and reading + parsing + serializing + writing the file
// against loadModel + saveModel (qopt, through files). Part 2 writes a model whose G GB of
// weights live in an external data file in a temporary folder, loads it and saves it twice
// (keeping the layout in another folder, then re-chunked into a single data file), samples
// RssAnon from /proc/self/status all along, and deletes the folder.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace fs = std::filesystem;

namespace {

struct Options {
  double sizeMb = 100;
  double externalGb = 2.5;
  int repeat = 5;
  int layers = 200;
  bool skipExternal = false;
};

Options parseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        throw qopt::Error(fmt::format("{} needs a value", arg), qopt::ErrorKind::Usage);
      return argv[++i];
    };
    if (arg == "--size-mb") {
      options.sizeMb = std::stod(next());
    } else if (arg == "--external-gb") {
      options.externalGb = std::stod(next());
    } else if (arg == "--layers") {
      options.layers = std::max(1, std::stoi(next()));
    } else if (arg == "--repeat") {
      options.repeat = std::max(1, std::stoi(next()));
    } else if (arg == "--skip-external") {
      options.skipExternal = true;
    } else {
      throw qopt::Error(fmt::format("unknown argument '{}'", arg), qopt::ErrorKind::Usage);
    }
  }
  return options;
}

double seconds(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The best of `repeat` runs: the least disturbed by the rest of the machine.
double best(int repeat, const std::function<void()>& fn) {
  double result = 1e300;
  for (int i = 0; i < repeat; ++i) result = std::min(result, seconds(fn));
  return result;
}

void addValueInfo(onnx::ValueInfoProto* info, const std::string& name, int64_t rows, int64_t cols) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape()->add_dim()->set_dim_param("batch");
  tensor->mutable_shape()->add_dim()->set_dim_value(rows);
  if (cols) tensor->mutable_shape()->add_dim()->set_dim_value(cols);
}

// A chain of MatMul + Add + Relu blocks whose square weights fill about `weightBytes`.
onnx::ModelProto buildModel(uint64_t weightBytes, int layers) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("qopt_io_bench");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("bench");
  uint64_t perLayer = weightBytes / static_cast<uint64_t>(layers);
  auto width = static_cast<int64_t>(std::sqrt(static_cast<double>(perLayer / 4)));
  addValueInfo(graph->add_input(), "x", width, 0);
  std::mt19937 rng(1);
  std::string previous = "x";
  for (int layer = 0; layer < layers; ++layer) {
    std::string w = fmt::format("w{}", layer);
    std::string b = fmt::format("b{}", layer);
    onnx::TensorProto* weight = graph->add_initializer();
    weight->set_name(w);
    weight->set_data_type(onnx::TensorProto::FLOAT);
    weight->add_dims(width);
    weight->add_dims(width);
    std::string bytes(static_cast<size_t>(width * width * 4), '\0');
    for (size_t i = 0; i < bytes.size(); i += 4) {
      uint32_t r = rng();
      std::memcpy(bytes.data() + i, &r, 4);
    }
    weight->set_raw_data(std::move(bytes));
    onnx::TensorProto* bias = graph->add_initializer();
    bias->set_name(b);
    bias->set_data_type(onnx::TensorProto::FLOAT);
    bias->add_dims(width);
    for (int64_t i = 0; i < width; ++i) bias->add_float_data(static_cast<float>(i) * 0.01f);
    std::string mm = fmt::format("mm{}", layer), add = fmt::format("add{}", layer),
                relu = fmt::format("relu{}", layer);
    onnx::NodeProto* n1 = graph->add_node();
    n1->set_op_type("MatMul");
    n1->set_name(mm);
    n1->add_input(previous);
    n1->add_input(w);
    n1->add_output(mm);
    onnx::NodeProto* n2 = graph->add_node();
    n2->set_op_type("Add");
    n2->set_name(add);
    n2->add_input(mm);
    n2->add_input(b);
    n2->add_output(add);
    onnx::NodeProto* n3 = graph->add_node();
    n3->set_op_type("Relu");
    n3->set_name(relu);
    n3->add_input(add);
    n3->add_output(relu);
    addValueInfo(graph->add_value_info(), mm, width, 0);
    addValueInfo(graph->add_value_info(), add, width, 0);
    previous = relu;
  }
  addValueInfo(graph->add_output(), previous, width, 0);
  return model;
}

uint64_t rssAnonKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8));
  }
  return 0;
}

// Samples RssAnon every millisecond while alive and keeps the highest value.
class PeakSampler {
 public:
  PeakSampler()
      : thread_([this] {
          while (!stop_) {
            uint64_t now = rssAnonKb();
            uint64_t seen = peak_.load();
            while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }) {}
  ~PeakSampler() {
    stop_ = true;
    thread_.join();
  }
  uint64_t peakKb() const { return peak_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> peak_{0};
  std::thread thread_;
};

void speedBench(const Options& options, const fs::path& folder) {
  int layers = options.layers;
  auto weightBytes = static_cast<uint64_t>(options.sizeMb * 1024 * 1024);
  onnx::ModelProto built = buildModel(weightBytes, layers);
  std::string bytes = built.SerializeAsString();
  built.Clear();
  fs::path input = folder / "bench.onnx";
  fs::path output = folder / "bench.out.onnx";
  qopt::writeFileAtomically(input, bytes);
  fmt::print("model: {:.1f} MB, {} nodes, {} initializers\n", bytes.size() / 1048576.0, layers * 3,
             layers * 2);

  double protobufMemory = best(options.repeat, [&] {
    onnx::ModelProto proto;
    proto.ParseFromString(bytes);
    std::string out;
    proto.SerializeToString(&out);
  });
  double qoptMemory = best(options.repeat, [&] {
    auto model = qopt::loadModelFromBytes(bytes, "bench.onnx", folder);
    std::string out = qopt::serializeModel(*model);
  });
  double protobufFile = best(options.repeat, [&] {
    std::ifstream in(input, std::ios::binary);
    std::string read(fs::file_size(input), '\0');
    in.read(read.data(), static_cast<std::streamsize>(read.size()));
    onnx::ModelProto proto;
    proto.ParseFromString(read);
    std::string out;
    proto.SerializeToString(&out);
    std::ofstream(output, std::ios::binary)
        .write(out.data(), static_cast<std::streamsize>(out.size()));
  });
  double qoptFile = best(options.repeat, [&] {
    auto model = qopt::loadModel(input);
    qopt::saveModel(*model, output);  // atomic: includes fsync
  });
  fmt::print(
      "in memory: protobuf parse+serialize {:.1f} ms, qopt load+save {:.1f} ms, "
      "ratio {:.2f}\n",
      protobufMemory * 1e3, qoptMemory * 1e3, qoptMemory / protobufMemory);
  fmt::print(
      "files:     protobuf read+parse+serialize+write {:.1f} ms, qopt loadModel+saveModel "
      "(with fsync) {:.1f} ms, ratio {:.2f}\n",
      protobufFile * 1e3, qoptFile * 1e3, qoptFile / protobufFile);
  fs::remove(input);
  fs::remove(output);
}

void externalBench(const Options& options, const fs::path& folder) {
  const int tensors = 10;
  auto total = static_cast<uint64_t>(options.externalGb * 1024 * 1024 * 1024);
  uint64_t perTensor = total / tensors / 4 * 4;
  fs::path source = folder / "source";
  fs::path kept = folder / "kept";
  fs::path rechunked = folder / "single";
  for (const fs::path& dir : {source, kept, rechunked}) fs::create_directories(dir);

  {
    // The data file, written in 4 MiB pieces so that this setup does not raise the peak.
    std::ofstream data(source / "weights.bin", std::ios::binary);
    std::string chunk(4u << 20, '\0');
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 131 % 251);
    for (uint64_t written = 0; written < perTensor * tensors;) {
      auto n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), perTensor * tensors - written));
      data.write(chunk.data(), static_cast<std::streamsize>(n));
      written += n;
    }
  }
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("external");
  addValueInfo(graph->add_input(), "x", static_cast<int64_t>(perTensor / 4), 0);
  std::string previous = "x";
  for (int i = 0; i < tensors; ++i) {
    onnx::TensorProto* w = graph->add_initializer();
    w->set_name(fmt::format("w{}", i));
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(static_cast<int64_t>(perTensor / 4));
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, std::string value) {
      auto* entry = w->add_external_data();
      entry->set_key(key);
      entry->set_value(std::move(value));
    };
    add("location", "weights.bin");
    add("offset", std::to_string(perTensor * static_cast<uint64_t>(i)));
    add("length", std::to_string(perTensor));
    onnx::NodeProto* node = graph->add_node();
    node->set_op_type("Add");
    node->add_input(previous);
    node->add_input(w->name());
    previous = fmt::format("y{}", i);
    node->add_output(previous);
  }
  addValueInfo(graph->add_output(), previous, static_cast<int64_t>(perTensor / 4), 0);
  qopt::writeFileAtomically(source / "model.onnx", model.SerializeAsString());
  model.Clear();

  ::malloc_trim(0);  // hand back what part 1 freed, for a clean baseline
  uint64_t before = rssAnonKb();
  uint64_t peak = 0;
  double keepSeconds = 0, singleSeconds = 0;
  {
    PeakSampler sampler;
    auto loaded = qopt::loadModel(source / "model.onnx");
    keepSeconds = seconds([&] { qopt::saveModel(*loaded, kept / "model.onnx"); });
    qopt::SaveOptions single;
    single.layout = qopt::SaveOptions::ExternalLayout::SingleFile;
    singleSeconds = seconds([&] { qopt::saveModel(*loaded, rechunked / "model.onnx", single); });
    peak = sampler.peakKb();
  }
  auto reloaded = qopt::loadModel(rechunked / "model.onnx");
  bool same =
      reloaded->graph().initializers().size() == static_cast<size_t>(tensors) &&
      reloaded->graph().initializers().back()->initializer()->rawBytes().size() == perTensor;
  double modelKb = static_cast<double>(perTensor * tensors) / 1024.0;
  fmt::print(
      "external data: {:.2f} GiB in {} tensors; save keeping the layout elsewhere {:.1f} s, "
      "save re-chunked into one file {:.1f} s; read back {}\n",
      perTensor * tensors / 1073741824.0, tensors, keepSeconds, singleSeconds,
      same ? "ok" : "WRONG");
  uint64_t growth = peak > before ? peak - before : 0;
  fmt::print(
      "peak RssAnon during load+save: {} MB, {:.2f}% of the model size (the process had "
      "{} MB before: the round trip added {} MB, {:.2f}%)\n",
      peak / 1024, 100.0 * static_cast<double>(peak) / modelKb, before / 1024, growth / 1024,
      100.0 * static_cast<double>(growth) / modelKb);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = parseArgs(argc, argv);
    fs::path folder = fs::temp_directory_path() / fmt::format("qopt_io_bench_{}", ::getpid());
    fs::create_directories(folder);
    struct Cleanup {
      fs::path folder;
      ~Cleanup() {
        std::error_code ec;
        fs::remove_all(folder, ec);
      }
    } cleanup{folder};
    speedBench(options, folder);
    if (!options.skipExternal) externalBench(options, folder);
    return 0;
  } catch (const qopt::Error& e) {
    std::fprintf(stderr, "qopt_io_bench: error: %s\n", e.what());
    return qopt::exitCodeFor(e.kind());
  }
}
