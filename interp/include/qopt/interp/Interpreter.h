// The reference interpreter: runs a graph on CPU, freeing each intermediate after its last use.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/ir/Graph.h"

namespace qopt::interp {

/// The default of RunOptions::maxTensorBytes: 16 GiB or half the machine's memory, whichever is
/// smaller, so that a hostile shape fails with an error before the system runs out of memory.
/// A tool may set another default for the whole process (qopt --max-tensor-bytes), which also
/// covers the interpreters that passes create; 0 restores the computed one.
uint64_t defaultMaxTensorBytes();
void setDefaultMaxTensorBytes(uint64_t bytes);

struct RunOptions {
  int threads = 1;  // 0 = all hardware threads
  /// Refuse to allocate a single tensor larger than this (hostile models).
  uint64_t maxTensorBytes = defaultMaxTensorBytes();
  /// Run Conv + BatchNormalization + Relu/Clip chains as one step when no observer wants the
  /// values between them. The outputs are bitwise the same either way; false runs every node
  /// on its own (tests compare the two).
  bool fuse = true;
};

/// Sees intermediate tensors as they are computed (calibration, per-layer verify). Only values
/// in `wanted()` are reported, so nothing else is kept alive or copied. Values inside If, Loop
/// and Scan bodies are reported each time their body runs: once per iteration of a Loop or
/// Scan, and only for the branch an If takes. A wanted constant (an initializer, a value folded
/// at plan time) is reported once per run, when its graph first runs.
class CaptureObserver {
 public:
  virtual ~CaptureObserver() = default;
  /// Values to report, of the main graph or of any body; empty means none.
  virtual const std::unordered_set<const Value*>& wanted() const = 0;
  virtual void captured(const Value& value, const Array& array) = 0;
};

/// A Conv and the nodes after it that the interpreter runs as one step (a BatchNormalization or
/// bias Add, scalar affine maps, a residual Add, an activation): the layer an inference engine
/// such as TensorRT makes of them. Its inner values exist only when an observer asks for one
/// (the step then runs node by node).
struct FusedLayer {
  const Node* head = nullptr;       // the Conv
  std::vector<const Value*> inner;  // the Conv's output and the values up to the last node's
  const Value* output = nullptr;    // the last node's output
};

class Interpreter {
 public:
  /// Prepares `graph` (checks every op has a kernel: an unsupported op is a qopt::Error naming
  /// the node, op, domain and opset). The graph must outlive the interpreter.
  explicit Interpreter(const Graph& graph, RunOptions options = {});
  ~Interpreter();

  /// Runs with inputs by graph-input name; returns the graph outputs in order. One run at a
  /// time per interpreter (use one interpreter per thread to run in parallel).
  std::vector<Array> run(const std::map<std::string, Array>& inputs,
                         CaptureObserver* observer = nullptr);

  /// Runs a subgraph (If/Loop/Scan body) with explicit inputs and outer-scope lookup.
  std::vector<Array> runSubgraph(const Graph& graph, const std::vector<Array>& inputs,
                                 const std::function<const Array*(const Value*)>& outerLookup);

  const RunOptions& options() const { return options_; }
  /// The main graph's fused layers (none with RunOptions::fuse off), in graph order.
  std::vector<FusedLayer> fusedLayers() const;
  /// Peak bytes of live intermediate arrays during the last run (memory tests and benches).
  uint64_t lastPeakBytes() const { return peakBytes_; }

 private:
  struct Plan;
  const Graph& graph_;
  RunOptions options_;
  std::unique_ptr<Plan> plan_;
  uint64_t peakBytes_ = 0;
};

}  // namespace qopt::interp
