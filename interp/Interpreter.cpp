#include "qopt/interp/Interpreter.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <span>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "AllocationLimit.h"
#include "BufferPool.h"
#include "ConvFusion.h"
#include "KernelSupport.h"
#include "ThreadPool.h"
#include "ops/ConvKernel.h"
#include "ops/QuantLoops.h"
#include "ops/QuantMath.h"
#include "qopt/interp/Kernel.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {

namespace {

std::atomic<uint64_t> processDefaultMaxTensorBytes{0};

uint64_t computedMaxTensorBytes() {
  uint64_t limit = uint64_t{16} << 30;
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && pageSize > 0) {
    limit = std::min(limit, static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize) / 2);
  }
  return limit;
}

// Where a node finds one of its inputs at run time.
struct ValueRef {
  enum class Kind : uint8_t { Absent, Slot, Constant, Outer };
  Kind kind = Kind::Absent;
  int32_t index = -1;
  const Value* value = nullptr;
};

struct Step {
  const Node* node;
  const KernelFn* kernel;
  int64_t opset;
  std::vector<ValueRef> inputs;
  std::vector<int32_t> outputs;    // slot per output, -1 when absent
  std::vector<int32_t> freeAfter;  // slots whose last use is this step
  int32_t chain = -1;              // a Conv step that heads a fusable chain: its index
  int32_t fakeQuant = -1;          // a QuantizeLinear step fusable with its DequantizeLinear
  bool tensorsOnly = true;         // the kernel is handed tensors only (takesNonTensors)
};

// A Conv + BatchNormalization + Add + Relu/Clip chain (ConvFusion.h) as planned: when a run
// allows it, the Conv step computes the chain's last output and its later steps are skipped.
struct PlannedChain {
  ConvChain chain;
  ValueRef residual;  // the Add's other operand
  // The BatchNormalization, Add and activation steps, and a QuantizeLinear -> DequantizeLinear
  // pair last.
  std::vector<int32_t> laterSteps;
  std::vector<int32_t> innerSlots;  // values computed only inside the fused step
  int32_t outputSlot = -1;
  const Value* output = nullptr;  // the chain's last node's output
  // The chain as a layer, without a QuantizeLinear -> DequantizeLinear pair appended to it
  // (planEpilogueFakeQuants): what runs when only the pair's input or integers are observed,
  // the pair then running as its own step. Without a pair, the layer is the whole chain.
  FusedLayer layer;
  size_t layerInnerSlots = 0;  // innerSlots of the layer; the pair's (input, integers) follow
  size_t layerSteps = 0;       // laterSteps of the layer
  int32_t layerOutputSlot = -1;
  ConvEpilogue layerEpilogue;  // only with a pair
};

// A QuantizeLinear -> DequantizeLinear pair on 8-bit integers with one scale and zero point each
// (an activation of a Q/DQ model): when a run allows it, the QuantizeLinear step computes the
// DequantizeLinear's output in one pass (ops/QuantLoops.h) and the integers never exist.
struct PlannedFakeQuant {
  int32_t dequantizeStep = -1;
  int32_t integerSlot = -1;  // the QuantizeLinear's output
  int32_t outputSlot = -1;   // the DequantizeLinear's
  QuantizeParams quantize;
  float dequantizeScale = 1.0f;
  int32_t dequantizeZeroPoint = 0;
};

struct GraphPlan {
  const Graph* graph = nullptr;
  std::unordered_map<const Value*, int32_t> slotOf;
  std::unordered_map<const Value*, int32_t> constantOf;
  int32_t numSlots = 0;
  std::vector<int32_t> inputSlots;     // graph inputs, in order
  std::vector<int32_t> inputDefaults;  // constant index for IR<4 initializer inputs, or -1
  std::vector<Array> constants;
  std::vector<ValueRef> outputs;
  std::vector<Step> steps;
  std::vector<PlannedChain> chains;
  std::vector<PlannedFakeQuant> fakeQuants;
};

// Calls `fn` on each value that a sequence or an optional holds (none for a tensor).
template <class Fn>
void forEachHeld(const Array& a, Fn&& fn) {
  if (a.isSequence()) {
    for (const Array& item : a.items()) fn(item);
  } else if (a.isOptional() && a.hasValue()) {
    fn(a.value());
  }
}

// Bytes of the tensors a value holds.
uint64_t valueBytes(const Array& a) {
  if (a.isTensor()) return a.byteSize();
  uint64_t bytes = 0;
  forEachHeld(a, [&](const Array& held) { bytes += valueBytes(held); });
  return bytes;
}

// Live bytes of intermediate arrays, counting shared storage once. A sequence or optional counts
// as the tensors it holds, which a run may also hold on their own.
class MemoryTracker {
 public:
  void add(const Array& a) {
    if (!a.isTensor()) {
      forEachHeld(a, [&](const Array& held) {
        if (!excluded(held)) add(held);
      });
      return;
    }
    const void* key = storageKey(a);
    auto [it, inserted] = live_.try_emplace(key, Entry{0, a.byteSize()});
    if (it->second.count++ == 0) {
      current_ += it->second.bytes;
      peak_ = std::max(peak_, current_);
    }
    (void)inserted;
  }
  void remove(const Array& a) {
    if (!a.isTensor()) {
      forEachHeld(a, [&](const Array& held) {
        if (!excluded(held)) remove(held);
      });
      return;
    }
    auto it = live_.find(storageKey(a));
    if (it == live_.end()) return;
    if (--it->second.count == 0) {
      current_ -= it->second.bytes;
      live_.erase(it);
    }
  }
  void exclude(const Array& a) {
    if (a.isTensor()) {
      excluded_.insert(storageKey(a));
    } else {
      forEachHeld(a, [&](const Array& held) { exclude(held); });
    }
  }
  // A sequence or optional is never excluded as a whole: add and remove look at what it holds.
  bool excluded(const Array& a) const { return a.isTensor() && excluded_.contains(storageKey(a)); }
  uint64_t peak() const { return peak_; }

 private:
  struct Entry {
    int64_t count;
    uint64_t bytes;
  };
  static const void* storageKey(const Array& a) {
    if (a.bytes() != nullptr) return a.bytes();
    return a.dataType() == DataType::String ? static_cast<const void*>(&a.strings()) : nullptr;
  }
  std::unordered_map<const void*, Entry> live_;
  std::unordered_set<const void*> excluded_;
  uint64_t current_ = 0;
  uint64_t peak_ = 0;
};

std::string domainName(const std::string& domain) {
  return domain.empty() ? "ai.onnx" : domain;
}

Error nodeError(const Node& node, int64_t opset, const std::string& cause,
                ErrorKind kind = ErrorKind::Input) {
  return Error(kind, node.graph()->model().sourcePath, node.describe(),
               fmt::format("{} (op {}, domain {}, opset {})", cause, node.opType(),
                           domainName(node.domain()), opset));
}

// Ops whose kernels take sequence and optional values. Every other kernel is handed tensors
// only (checked before it runs), so none of them needs to look at an input's kind.
bool takesNonTensors(const Node& node) {
  static const std::unordered_set<std::string_view> ops = {"Identity",
                                                           "If",
                                                           "Loop",
                                                           "SequenceConstruct",
                                                           "SequenceEmpty",
                                                           "SequenceInsert",
                                                           "SequenceAt",
                                                           "SequenceErase",
                                                           "SequenceLength",
                                                           "SplitToSequence",
                                                           "ConcatFromSequence",
                                                           "SequenceMap",
                                                           "Optional",
                                                           "OptionalHasElement",
                                                           "OptionalGetElement"};
  return node.domain().empty() && ops.contains(node.opType());
}

void checkTensorInputs(const Node& node, int64_t opset, std::span<const Array* const> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr && !inputs[i]->isTensor()) {
      throw nodeError(node, opset,
                      fmt::format("input {} ('{}') is a {} value; this op takes tensors only", i,
                                  node.input(i)->name(), valueKindName(inputs[i]->kind())));
    }
  }
}

}  // namespace

constexpr size_t kMaxRetainedBytes = size_t{1} << 30;

struct Interpreter::Plan {
  std::unordered_map<const Graph*, std::unique_ptr<GraphPlan>> graphs;
  std::unique_ptr<ThreadPool> pool;
  // Storage of intermediates, reused from run to run and within a run. Retains at most
  // kMaxRetainedBytes of freed blocks (in practice about the largest live set of a run).
  std::shared_ptr<BufferPool> buffers = BufferPool::create(kMaxRetainedBytes);
  int threads = 1;
  bool fuse = true;
  MemoryTracker* tracker = nullptr;  // set during run()
  // The run's observer, and the slots it wants in each graph (built when the graph first runs
  // in the run: a Loop body runs many times). Set during run().
  CaptureObserver* observer = nullptr;
  std::unordered_map<const GraphPlan*, std::vector<char>> wantedSlots;
  /// The slots of `plan` the run's observer wants (empty: none). Constants are reported here,
  /// once per run.
  const std::vector<char>& wantedIn(const GraphPlan& plan);

  const GraphPlan& prepare(Interpreter& self, const Graph& graph, const KernelRegistry& registry,
                           uint64_t maxTensorBytes);
  /// The outputs of `step` when every input is a constant (weights through DequantizeLinear,
  /// shapes computed from constants): run once here rather than on every run. Empty when the
  /// node must run each time (random ops, subgraphs) or when running it here fails (then it
  /// fails at run time, with the run's context).
  std::optional<std::vector<Array>> evaluateOnce(Interpreter& self, const GraphPlan& gp,
                                                 const Step& step, uint64_t maxTensorBytes);
  uint64_t hoistedBytes = 0;
  // stepOf: the step index of each node that runs (built once for both).
  using StepIndex = std::unordered_map<const Node*, int32_t>;
  void planChains(GraphPlan& gp, const Graph& graph, const StepIndex& stepOf) const;
  void planFakeQuants(GraphPlan& gp, const Graph& graph, const StepIndex& stepOf) const;
  void planEpilogueFakeQuants(GraphPlan& gp, const Graph& graph, const StepIndex& stepOf) const;
  std::vector<Array> execute(Interpreter& self, const GraphPlan& plan, std::vector<Array>& slots,
                             const std::function<const Array*(const Value*)>& outer,
                             CaptureObserver* observer);
};

namespace {

// What a run must compute again each time although its inputs are constants.
bool nondeterministic(const Node& node) {
  static const std::unordered_set<std::string> ops = {
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Bernoulli",    "Multinomial",      "Dropout"};
  return ops.contains(node.opType());
}

// Constants computed at plan time are kept for the interpreter's life: at most this much, so a
// model of large weights stored in 4 or 8 bits does not hold all of them dequantized.
constexpr uint64_t kMaxHoistedBytes = uint64_t{1} << 29;

}  // namespace

std::optional<std::vector<Array>> Interpreter::Plan::evaluateOnce(Interpreter& self,
                                                                  const GraphPlan& gp,
                                                                  const Step& step,
                                                                  uint64_t maxTensorBytes) {
  const Node& node = *step.node;
  if (nondeterministic(node) || !node.subgraphs().empty() ||
      !Graph::implicitInputs(&node).empty()) {
    return std::nullopt;
  }
  std::vector<const Array*> inputs;
  for (const ValueRef& ref : step.inputs) {
    if (ref.kind == ValueRef::Kind::Absent) {
      inputs.push_back(nullptr);
    } else if (ref.kind == ValueRef::Kind::Constant) {
      inputs.push_back(&gp.constants[static_cast<size_t>(ref.index)]);
    } else {
      return std::nullopt;
    }
  }
  std::vector<Array> outputs(node.numOutputs());
  const std::function<const Array*(const Value*)> none = [](const Value*) -> const Array* {
    return nullptr;
  };
  KernelContext ctx{node, inputs, outputs, step.opset, threads, pool.get(), self, none};
  try {
    if (step.tensorsOnly) checkTensorInputs(node, step.opset, inputs);
    AllocationLimitScope limit(maxTensorBytes);
    (*step.kernel)(ctx);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!node.output(i)->isAbsent() && !outputs[i].valid()) return std::nullopt;
    bytes += outputs[i].valid() ? valueBytes(outputs[i]) : 0;
  }
  if (hoistedBytes + bytes > kMaxHoistedBytes) return std::nullopt;
  hoistedBytes += bytes;
  return outputs;
}

const GraphPlan& Interpreter::Plan::prepare(Interpreter& self, const Graph& graph,
                                            const KernelRegistry& registry,
                                            uint64_t maxTensorBytes) {
  auto gp = std::make_unique<GraphPlan>();
  gp->graph = &graph;
  const Model& model = graph.model();

  for (Value* v : graph.initializers()) {
    gp->constantOf[v] = static_cast<int32_t>(gp->constants.size());
    try {
      gp->constants.push_back(Array::fromTensor(*v->initializer()));
    } catch (const Error& e) {
      throw Error(e.kind(), model.sourcePath, fmt::format("initializer '{}'", v->name()),
                  e.cause());
    }
  }
  for (Value* v : graph.inputs()) {
    int32_t slot = gp->numSlots++;
    gp->slotOf[v] = slot;
    gp->inputSlots.push_back(slot);
    auto c = gp->constantOf.find(v);
    gp->inputDefaults.push_back(c == gp->constantOf.end() ? -1 : c->second);
    if (c != gp->constantOf.end()) gp->constantOf.erase(c);  // the slot (input or default) wins
  }

  auto refOf = [&](const Value* v) {
    ValueRef ref;
    if (v == nullptr) return ref;
    ref.value = v;
    if (auto it = gp->slotOf.find(v); it != gp->slotOf.end()) {
      ref.kind = ValueRef::Kind::Slot;
      ref.index = it->second;
    } else if (auto c = gp->constantOf.find(v); c != gp->constantOf.end()) {
      ref.kind = ValueRef::Kind::Constant;
      ref.index = c->second;
    } else {
      ref.kind = ValueRef::Kind::Outer;
    }
    return ref;
  };

  std::vector<int32_t> lastUse;  // per slot: step index of the last use
  auto markUse = [&](const ValueRef& ref, int32_t step) {
    if (ref.kind != ValueRef::Kind::Slot) return;
    if (lastUse.size() <= static_cast<size_t>(ref.index)) lastUse.resize(ref.index + 1, -1);
    lastUse[ref.index] = std::max(lastUse[ref.index], step);
  };

  for (Node* node : graph.nodes()) {
    int32_t stepIndex = static_cast<int32_t>(gp->steps.size());
    Step step{node, nullptr, 0, {}, {}, {}};
    std::optional<int64_t> opset = model.opsetVersion(node->domain());
    if (!opset) {
      throw Error(ErrorKind::Input, model.sourcePath, node->describe(),
                  fmt::format("the model imports no opset for domain {} (op {})",
                              domainName(node->domain()), node->opType()));
    }
    step.opset = *opset;
    step.tensorsOnly = !takesNonTensors(*node);
    step.kernel = registry.find(node->domain(), node->opType(), *opset);
    if (step.kernel == nullptr) {
      throw nodeError(*node, *opset,
                      registry.supports(node->domain(), node->opType())
                          ? "this opset of the op is not supported by the interpreter"
                          : "the interpreter has no kernel for this op");
    }
    for (Value* v : node->inputs()) step.inputs.push_back(refOf(v));
    if (std::optional<std::vector<Array>> values = evaluateOnce(self, *gp, step, maxTensorBytes)) {
      for (size_t i = 0; i < node->numOutputs(); ++i) {
        Value* out = node->output(i);
        if (out->isAbsent()) continue;
        gp->constantOf[out] = static_cast<int32_t>(gp->constants.size());
        gp->constants.push_back(std::move((*values)[i]));
      }
      continue;
    }
    for (const ValueRef& ref : step.inputs) markUse(ref, stepIndex);
    for (Value* v : Graph::implicitInputs(node)) markUse(refOf(v), stepIndex);
    for (Value* out : node->outputs()) {
      if (out->isAbsent()) {
        step.outputs.push_back(-1);
        continue;
      }
      int32_t slot = gp->numSlots++;
      gp->slotOf[out] = slot;
      step.outputs.push_back(slot);
      markUse({ValueRef::Kind::Slot, slot, out}, stepIndex);  // unused outputs die right away
    }
    gp->steps.push_back(std::move(step));
  }
  for (Value* v : graph.outputs()) {
    ValueRef ref = refOf(v);
    gp->outputs.push_back(ref);
    if (ref.kind == ValueRef::Kind::Slot && static_cast<size_t>(ref.index) < lastUse.size()) {
      lastUse[ref.index] = INT32_MAX;  // kept until returned
    }
  }
  lastUse.resize(gp->numSlots, -1);
  for (int32_t slot = 0; slot < gp->numSlots; ++slot) {
    int32_t last = lastUse[slot];
    if (last >= 0 && last != INT32_MAX) gp->steps[last].freeAfter.push_back(slot);
  }

  if (fuse) {
    StepIndex stepOf;
    for (size_t i = 0; i < gp->steps.size(); ++i) {
      stepOf[gp->steps[i].node] = static_cast<int32_t>(i);
    }
    planChains(*gp, graph, stepOf);
    planFakeQuants(*gp, graph, stepOf);
    planEpilogueFakeQuants(*gp, graph, stepOf);
  }

  const GraphPlan& result = *gp;
  graphs[&graph] = std::move(gp);
  for (Node* node : graph.nodes()) {
    for (Graph* sub : node->subgraphs()) prepare(self, *sub, registry, maxTensorBytes);
  }
  return result;
}

void Interpreter::Plan::planChains(GraphPlan& gp, const Graph& graph,
                                   const StepIndex& stepOf) const {
  const Model& model = graph.model();
  auto constant = [&](const Value* v) -> const Array* {
    auto c = gp.constantOf.find(v);
    return c == gp.constantOf.end() ? nullptr : &gp.constants[static_cast<size_t>(c->second)];
  };
  auto opsetOf = [&](const Node& node) { return model.opsetVersion(node.domain()).value_or(0); };
  // A residual must exist when the Conv runs: a constant, an input, or computed by an earlier step.
  auto residualReady = [&](const Value* v, const Node* conv) {
    const Node* producer = v->producer();
    if (producer == nullptr || producer->graph() != &graph) return true;
    auto it = stepOf.find(producer);
    return it != stepOf.end() && it->second < stepOf.at(conv);
  };
  std::vector<ConvChain> chains = findConvChains(graph, constant, opsetOf, residualReady);
  if (chains.empty()) return;
  for (ConvChain& chain : chains) {
    PlannedChain planned;
    int32_t head = stepOf.at(chain.conv);
    planned.innerSlots.push_back(gp.steps[static_cast<size_t>(head)].outputs[0]);
    if (chain.add != nullptr) {
      const Step& add = gp.steps[static_cast<size_t>(stepOf.at(chain.add))];
      planned.residual = add.inputs[chain.epilogue.residualFirst ? 0 : 1];
    }
    const std::vector<const Node*> later = chain.laterNodes();  // never empty
    for (const Node* node : later) {
      int32_t step = stepOf.at(node);
      planned.laterSteps.push_back(step);
      planned.innerSlots.push_back(gp.steps[static_cast<size_t>(step)].outputs[0]);
    }
    planned.output = later.back()->output(0);
    planned.layer.head = chain.conv;
    planned.layer.inner.push_back(chain.conv->output(0));
    for (size_t i = 0; i + 1 < later.size(); ++i)
      planned.layer.inner.push_back(later[i]->output(0));
    planned.layer.output = planned.output;
    planned.outputSlot = planned.innerSlots.back();
    planned.innerSlots.pop_back();
    planned.layerInnerSlots = planned.innerSlots.size();
    planned.layerSteps = planned.laterSteps.size();
    planned.layerOutputSlot = planned.outputSlot;
    planned.chain = std::move(chain);
    gp.steps[static_cast<size_t>(head)].chain = static_cast<int32_t>(gp.chains.size());
    gp.chains.push_back(std::move(planned));
  }
}

namespace {

// The one scale (float) or zero point (8-bit integer) of a QuantizeLinear or DequantizeLinear
// input: a constant of one element, else null.
const Array* scalarConstant(const GraphPlan& gp, const ValueRef& ref) {
  if (ref.kind != ValueRef::Kind::Constant) return nullptr;
  const Array& a = gp.constants[static_cast<size_t>(ref.index)];
  return a.numel() == 1 && a.rank() <= 1 ? &a : nullptr;
}

bool isEightBit(DataType t) {
  return t == DataType::Int8 || t == DataType::UInt8;
}

// Whether a QuantizeLinear or DequantizeLinear node works per tensor (no blocks; the output type
// that of the zero point).
bool perTensorNode(const Node& node, int64_t opset, DataType zeroPointType) {
  if (opset < 21) return true;
  if (node.attrInt("block_size", 0) != 0) return false;
  const int64_t outputDtype = node.attrInt("output_dtype", 0);
  return outputDtype == 0 || dataTypeFromInt(outputDtype) == zeroPointType;
}

Array runFakeQuantize(const Array& x, const PlannedFakeQuant& fq, ThreadPool* pool) {
  Array y(DataType::Float, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  parallelFor(pool, x.numel(), kElementwiseGrain, [&](int64_t i0, int64_t i1) {
    fakeQuantizeRow(xp + i0, yp + i0, i1 - i0, fq.quantize, fq.dequantizeScale,
                    fq.dequantizeZeroPoint);
  });
  return y;
}

}  // namespace

void Interpreter::Plan::planFakeQuants(GraphPlan& gp, const Graph& graph,
                                       const StepIndex& stepOf) const {
  for (size_t i = 0; i < gp.steps.size(); ++i) {
    Step& q = gp.steps[i];
    const Node& node = *q.node;
    if (!node.is("QuantizeLinear") || q.inputs.size() != 3 || q.outputs.size() != 1) continue;
    const Array* scale = scalarConstant(gp, q.inputs[1]);
    const Array* zero = scalarConstant(gp, q.inputs[2]);
    if (scale == nullptr || zero == nullptr || scale->dataType() != DataType::Float ||
        !isEightBit(zero->dataType()) || !perTensorNode(node, q.opset, zero->dataType())) {
      continue;
    }
    const Value* integers = node.output(0);
    if (integers->isGraphOutput() || integers->uses().size() != 1) continue;
    const Node* dq = integers->uses()[0].user;
    auto dqStep = stepOf.find(dq);
    if (dq->graph() != &graph || !dq->is("DequantizeLinear") || integers->uses()[0].index != 0 ||
        dqStep == stepOf.end()) {
      continue;
    }
    const Step& d = gp.steps[static_cast<size_t>(dqStep->second)];
    if (d.inputs.size() < 2 || d.outputs.size() != 1 || d.outputs[0] < 0) continue;
    const Array* dqScale = scalarConstant(gp, d.inputs[1]);
    const Array* dqZero = d.inputs.size() > 2 ? scalarConstant(gp, d.inputs[2]) : nullptr;
    const bool dqZeroAbsent = d.inputs.size() < 3 || d.inputs[2].kind == ValueRef::Kind::Absent;
    if (dqScale == nullptr || dqScale->dataType() != DataType::Float ||
        (!dqZeroAbsent && (dqZero == nullptr || dqZero->dataType() != zero->dataType())) ||
        !perTensorNode(*dq, d.opset, zero->dataType())) {
      continue;
    }
    PlannedFakeQuant planned;
    planned.dequantizeStep = dqStep->second;
    planned.integerSlot = q.outputs[0];
    planned.outputSlot = d.outputs[0];
    planned.quantize =
        quantizeParams(scale->data<float>()[0], static_cast<int32_t>(zero->getInt64(0)),
                       quantRange(zero->dataType()));
    planned.dequantizeScale = dqScale->data<float>()[0];
    planned.dequantizeZeroPoint = dqZeroAbsent ? 0 : static_cast<int32_t>(dqZero->getInt64(0));
    q.fakeQuant = static_cast<int32_t>(gp.fakeQuants.size());
    gp.fakeQuants.push_back(planned);
  }
}

// A planned QuantizeLinear -> DequantizeLinear pair whose input is a float Conv's output (or a
// chain's) that nothing else reads becomes the last stage of that Conv's epilogue: the
// activations of a Q/DQ model are then written once, fake-quantized, instead of written, read
// and written again. A Conv that heads no chain gets a chain of its own.
void Interpreter::Plan::planEpilogueFakeQuants(GraphPlan& gp, const Graph& graph,
                                               const StepIndex& stepOf) const {
  std::unordered_map<const Value*, int32_t> chainOf;
  for (size_t c = 0; c < gp.chains.size(); ++c) {
    chainOf[gp.chains[c].output] = static_cast<int32_t>(c);
  }
  for (size_t i = 0; i < gp.steps.size(); ++i) {
    const Step& q = gp.steps[i];
    if (q.fakeQuant < 0) continue;
    const Value* x = q.node->input(0);
    const Node* producer = x->producer();
    if (producer == nullptr || producer->graph() != &graph || x->isGraphOutput() ||
        x->uses().size() != 1) {
      continue;
    }
    int32_t chainIndex = -1;
    if (auto c = chainOf.find(x); c != chainOf.end()) {
      chainIndex = c->second;
    } else if (producer->is("Conv") && producer->domain().empty() && x == producer->output(0)) {
      const auto head = stepOf.find(producer);
      if (head == stepOf.end()) continue;
      Step& conv = gp.steps[static_cast<size_t>(head->second)];
      if (conv.chain >= 0 || conv.outputs.size() != 1 || conv.outputs[0] < 0) continue;
      PlannedChain own;
      own.chain.conv = producer;
      own.outputSlot = conv.outputs[0];
      own.output = x;
      own.layer.head = producer;
      own.layer.output = x;
      own.layerOutputSlot = own.outputSlot;
      conv.chain = static_cast<int32_t>(gp.chains.size());
      chainIndex = conv.chain;
      gp.chains.push_back(std::move(own));
    } else {
      continue;
    }
    PlannedChain& chain = gp.chains[static_cast<size_t>(chainIndex)];
    const PlannedFakeQuant& fq = gp.fakeQuants[static_cast<size_t>(q.fakeQuant)];
    chain.layerEpilogue = chain.chain.epilogue;
    FakeQuantStage& stage = chain.chain.epilogue.fakeQuant;
    stage.active = true;
    stage.quantize = fq.quantize;
    stage.dequantizeScale = fq.dequantizeScale;
    stage.dequantizeZeroPoint = fq.dequantizeZeroPoint;
    chain.laterSteps.push_back(static_cast<int32_t>(i));
    chain.laterSteps.push_back(fq.dequantizeStep);
    chain.innerSlots.push_back(chain.outputSlot);
    chain.innerSlots.push_back(fq.integerSlot);
    chain.outputSlot = fq.outputSlot;
    chain.output = gp.steps[static_cast<size_t>(fq.dequantizeStep)].node->output(0);
  }
}

const std::vector<char>& Interpreter::Plan::wantedIn(const GraphPlan& plan) {
  auto [it, inserted] = wantedSlots.try_emplace(&plan);
  std::vector<char>& wanted = it->second;
  if (!inserted || observer == nullptr || observer->wanted().empty()) return wanted;
  for (const Value* v : observer->wanted()) {
    if (auto slot = plan.slotOf.find(v); slot != plan.slotOf.end()) {
      if (wanted.empty()) wanted.assign(static_cast<size_t>(plan.numSlots), 0);
      wanted[static_cast<size_t>(slot->second)] = 1;
    } else if (auto c = plan.constantOf.find(v); c != plan.constantOf.end()) {
      observer->captured(*v, plan.constants[static_cast<size_t>(c->second)]);
    }
  }
  return wanted;
}

std::vector<Array> Interpreter::Plan::execute(
    Interpreter& self, const GraphPlan& plan, std::vector<Array>& slots,
    const std::function<const Array*(const Value*)>& outer, CaptureObserver* observer) {
  std::function<const Array*(const Value*)> lookup = [&](const Value* v) -> const Array* {
    if (auto it = plan.slotOf.find(v); it != plan.slotOf.end()) {
      const Array& a = slots[static_cast<size_t>(it->second)];
      return a.valid() ? &a : nullptr;
    }
    if (auto c = plan.constantOf.find(v); c != plan.constantOf.end()) {
      return &plan.constants[static_cast<size_t>(c->second)];
    }
    return outer ? outer(v) : nullptr;
  };
  auto resolve = [&](const ValueRef& ref, const Node* node, int64_t opset) -> const Array* {
    switch (ref.kind) {
      case ValueRef::Kind::Absent:
        return nullptr;
      case ValueRef::Kind::Slot: {
        const Array& a = slots[static_cast<size_t>(ref.index)];
        if (a.valid()) return &a;
        break;
      }
      case ValueRef::Kind::Constant:
        return &plan.constants[static_cast<size_t>(ref.index)];
      case ValueRef::Kind::Outer:
        if (const Array* a = outer ? outer(ref.value) : nullptr) return a;
        break;
    }
    std::string cause = fmt::format("input '{}' has no value", ref.value->name());
    if (node == nullptr) throw Error(ErrorKind::Input, {}, {}, cause);
    throw nodeError(*node, opset, cause);
  };

  static const std::vector<char> kNone;
  const std::vector<char>& wanted = observer != nullptr ? wantedIn(plan) : kNone;
  if (!wanted.empty()) {
    // Inputs are reported on every execution: a body's inputs change from iteration to
    // iteration.
    for (int32_t slot : plan.inputSlots) {
      if (wanted[static_cast<size_t>(slot)] && slots[static_cast<size_t>(slot)].valid()) {
        for (const Value* v : plan.graph->inputs()) {
          if (plan.slotOf.at(v) == slot) observer->captured(*v, slots[static_cast<size_t>(slot)]);
        }
      }
    }
  }

  // A chain runs unfused when the observer wants a value inside it (and when runConv finds
  // that its epilogue does not fit the run's tensors); without its QuantizeLinear ->
  // DequantizeLinear pair when only the pair's input or integers are wanted.
  auto wantedInChain = [&](const PlannedChain& chain, size_t from, size_t to) {
    return !wanted.empty() &&
           std::any_of(chain.innerSlots.begin() + static_cast<std::ptrdiff_t>(from),
                       chain.innerSlots.begin() + static_cast<std::ptrdiff_t>(to),
                       [&](int32_t slot) { return wanted[static_cast<size_t>(slot)] != 0; });
  };
  std::vector<char> skipped(plan.chains.empty() && plan.fakeQuants.empty() ? 0 : plan.steps.size(),
                            0);
  auto release = [&](const Step& step) {
    for (int32_t slot : step.freeAfter) {
      Array& a = slots[static_cast<size_t>(slot)];
      if (tracker && a.valid() && !tracker->excluded(a)) tracker->remove(a);
      a = Array();
    }
  };

  std::vector<const Array*> inputs;
  std::vector<Array> outputs;
  for (size_t stepIndex = 0; stepIndex < plan.steps.size(); ++stepIndex) {
    const Step& step = plan.steps[stepIndex];
    if (!skipped.empty() && skipped[stepIndex]) {
      release(step);
      continue;
    }
    const Node& node = *step.node;
    inputs.clear();
    for (const ValueRef& ref : step.inputs) inputs.push_back(resolve(ref, &node, step.opset));
    if (step.tensorsOnly) checkTensorInputs(node, step.opset, inputs);
    // A QuantizeLinear -> DequantizeLinear pair runs as one pass unless the integers are wanted.
    const PlannedFakeQuant* fakeQuant =
        step.fakeQuant >= 0 ? &plan.fakeQuants[static_cast<size_t>(step.fakeQuant)] : nullptr;
    if (fakeQuant != nullptr &&
        ((!wanted.empty() && wanted[static_cast<size_t>(fakeQuant->integerSlot)]) ||
         inputs[0] == nullptr || inputs[0]->dataType() != DataType::Float)) {
      fakeQuant = nullptr;
    }
    outputs.assign(step.outputs.size(), Array());
    const PlannedChain* chain = step.chain >= 0 ? &plan.chains[static_cast<size_t>(step.chain)]
                                                : nullptr;  // planned only when fusing
    bool withoutPair = false;
    if (chain != nullptr) {
      if (wantedInChain(*chain, 0, chain->layerInnerSlots)) {
        chain = nullptr;
      } else if (wantedInChain(*chain, chain->layerInnerSlots, chain->innerSlots.size())) {
        withoutPair = true;
        if (chain->layerSteps == 0) chain = nullptr;  // a Conv and the pair alone: plain steps
      }
    }
    KernelContext ctx{node, inputs, outputs, step.opset, threads, pool.get(), self, lookup};
    try {
      if (chain != nullptr) {
        const Array* residual = nullptr;
        if (chain->residual.kind != ValueRef::Kind::Absent) {
          residual = resolve(chain->residual, chain->chain.add, step.opset);
        }
        // A residual that is no tensor: unfused, the Add step reports it.
        if (residual != nullptr && !residual->isTensor()) {
          chain = nullptr;
        } else if (!runConv(ctx, withoutPair ? &chain->layerEpilogue : &chain->chain.epilogue,
                            residual)) {
          chain = nullptr;
        }
      }
      if (fakeQuant != nullptr) {
        outputs[0] = runFakeQuantize(*inputs[0], *fakeQuant, pool.get());
      } else if (chain == nullptr) {
        (*step.kernel)(ctx);
      }
    } catch (const Error& e) {
      if (!e.subject().empty()) throw;
      throw nodeError(node, step.opset, e.cause(), e.kind());
    } catch (const std::bad_alloc&) {
      throw nodeError(node, step.opset, "out of memory");
    } catch (const std::exception& e) {
      throw nodeError(node, step.opset, e.what(), ErrorKind::Internal);
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      int32_t slot = step.outputs[i];
      if (slot < 0) continue;
      if (!outputs[i].valid()) {
        throw nodeError(node, step.opset, fmt::format("the kernel produced no output {}", i),
                        ErrorKind::Internal);
      }
      const Value* value = node.output(i);
      if (chain != nullptr) {  // the chain's last node's output, computed here
        slot = withoutPair ? chain->layerOutputSlot : chain->outputSlot;
        value = withoutPair ? chain->layer.output : chain->output;
      } else if (fakeQuant != nullptr) {  // the DequantizeLinear's output
        slot = fakeQuant->outputSlot;
        value = plan.steps[static_cast<size_t>(fakeQuant->dequantizeStep)].node->output(0);
      }
      Array& dst = slots[static_cast<size_t>(slot)];
      dst = std::move(outputs[i]);
      if (tracker && !tracker->excluded(dst)) tracker->add(dst);
      if (!wanted.empty() && wanted[static_cast<size_t>(slot)]) observer->captured(*value, dst);
    }
    if (chain != nullptr) {
      const size_t steps = withoutPair ? chain->layerSteps : chain->laterSteps.size();
      for (size_t l = 0; l < steps; ++l) skipped[static_cast<size_t>(chain->laterSteps[l])] = 1;
    }
    if (fakeQuant != nullptr) skipped[static_cast<size_t>(fakeQuant->dequantizeStep)] = 1;
    release(step);
  }

  std::vector<Array> results;
  results.reserve(plan.outputs.size());
  for (const ValueRef& ref : plan.outputs) {
    if (ref.kind == ValueRef::Kind::Absent) {
      results.emplace_back();
      continue;
    }
    const Array* a = resolve(ref, nullptr, 0);
    results.push_back(*a);
  }
  // Whatever is still held (outputs, unused inputs) leaves the frame now.
  for (Array& a : slots) {
    if (tracker && a.valid() && !tracker->excluded(a)) tracker->remove(a);
    a = Array();
  }
  return results;
}

uint64_t defaultMaxTensorBytes() {
  uint64_t set = processDefaultMaxTensorBytes.load(std::memory_order_relaxed);
  return set != 0 ? set : computedMaxTensorBytes();
}

void setDefaultMaxTensorBytes(uint64_t bytes) {
  processDefaultMaxTensorBytes.store(bytes, std::memory_order_relaxed);
}

Interpreter::Interpreter(const Graph& graph, RunOptions options)
    : graph_(graph), options_(options), plan_(std::make_unique<Plan>()) {
  int threads = options_.threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  plan_->threads = threads;
  plan_->fuse = options_.fuse;
  if (threads > 1) plan_->pool = std::make_unique<ThreadPool>(threads);
  plan_->prepare(*this, graph, KernelRegistry::builtin(), options_.maxTensorBytes);
}

Interpreter::~Interpreter() {
  // Arrays returned by runs may outlive the interpreter; their blocks are then freed, not kept.
  plan_->buffers->release();
}

std::vector<FusedLayer> Interpreter::fusedLayers() const {
  std::vector<FusedLayer> layers;
  auto it = plan_->graphs.find(&graph_);
  if (it == plan_->graphs.end()) return layers;
  for (const PlannedChain& chain : it->second->chains) {
    if (!chain.layer.inner.empty()) layers.push_back(chain.layer);  // not a Conv + pair alone
  }
  return layers;
}

namespace {

void checkInputType(const Value& input, const Array& array, const std::string& file) {
  const ValueType& type = input.type();
  if (!type.isTensor()) return;
  auto fail = [&](const std::string& cause) {
    throw Error(ErrorKind::Input, file, fmt::format("input '{}'", input.name()), cause);
  };
  if (!array.isTensor()) {
    fail(fmt::format("expected a tensor, got a {} value", valueKindName(array.kind())));
  }
  if (type.elemType != DataType::Undefined && type.elemType != array.dataType()) {
    fail(fmt::format("expected element type {}, got {}", dataTypeName(type.elemType),
                     dataTypeName(array.dataType())));
  }
  if (!type.shape) return;
  const std::vector<Dim>& dims = *type.shape;
  if (static_cast<int64_t>(dims.size()) != array.rank()) {
    fail(fmt::format("expected rank {}, got shape [{}]", dims.size(),
                     fmt::join(array.shape(), ",")));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].value && *dims[i].value != array.shape()[i]) {
      fail(fmt::format("dimension {} must be {}, got shape [{}]", i, *dims[i].value,
                       fmt::join(array.shape(), ",")));
    }
  }
}

}  // namespace

std::vector<Array> Interpreter::run(const std::map<std::string, Array>& inputs,
                                    CaptureObserver* observer) {
  const GraphPlan& plan = *plan_->graphs.at(&graph_);
  const std::string& file = graph_.model().sourcePath;
  std::vector<Array> slots(static_cast<size_t>(plan.numSlots));
  MemoryTracker tracker;
  for (const Array& c : plan.constants) tracker.exclude(c);

  size_t matched = 0;
  const std::vector<Value*>& graphInputs = graph_.inputs();
  for (size_t i = 0; i < graphInputs.size(); ++i) {
    const Value* v = graphInputs[i];
    Array& slot = slots[static_cast<size_t>(plan.inputSlots[i])];
    if (auto it = inputs.find(v->name()); it != inputs.end()) {
      checkInputType(*v, it->second, file);
      slot = it->second;
      tracker.exclude(slot);
      ++matched;
    } else if (plan.inputDefaults[i] >= 0) {
      slot = plan.constants[static_cast<size_t>(plan.inputDefaults[i])];
    } else {
      throw Error(ErrorKind::Input, file, fmt::format("input '{}'", v->name()),
                  "no value was given for this graph input");
    }
  }
  if (matched != inputs.size()) {
    for (const auto& entry : inputs) {
      const std::string& name = entry.first;  // clang 14 cannot capture structured bindings
      bool known = std::any_of(graphInputs.begin(), graphInputs.end(),
                               [&](const Value* v) { return v->name() == name; });
      if (!known) {
        throw Error(ErrorKind::Input, file, fmt::format("input '{}'", name),
                    "the graph has no input of this name");
      }
    }
  }

  AllocationLimitScope limit(options_.maxTensorBytes);
  BufferPoolScope buffers(plan_->buffers.get());
  plan_->tracker = &tracker;
  plan_->observer = observer;
  plan_->wantedSlots.clear();
  struct ResetRun {
    Plan* plan;
    ~ResetRun() {
      plan->tracker = nullptr;
      plan->observer = nullptr;
      plan->wantedSlots.clear();
    }
  } reset{plan_.get()};
  std::vector<Array> results = plan_->execute(*this, plan, slots, {}, observer);
  peakBytes_ = tracker.peak();
  return results;
}

std::vector<Array> Interpreter::runSubgraph(
    const Graph& graph, const std::vector<Array>& inputs,
    const std::function<const Array*(const Value*)>& outerLookup) {
  auto it = plan_->graphs.find(&graph);
  if (it == plan_->graphs.end()) {
    throw Error(ErrorKind::Internal, graph.model().sourcePath,
                fmt::format("graph '{}'", graph.name),
                "this subgraph was not prepared by the interpreter");
  }
  const GraphPlan& plan = *it->second;
  if (inputs.size() != plan.inputSlots.size()) {
    const Node* parent = graph.parentNode();
    throw Error(ErrorKind::Input, graph.model().sourcePath,
                parent ? parent->describe() : fmt::format("graph '{}'", graph.name),
                fmt::format("subgraph '{}' takes {} inputs, {} given", graph.name,
                            plan.inputSlots.size(), inputs.size()));
  }
  std::vector<Array> slots(static_cast<size_t>(plan.numSlots));
  for (size_t i = 0; i < inputs.size(); ++i) {
    Array& slot = slots[static_cast<size_t>(plan.inputSlots[i])];
    slot = inputs[i];
    // Balanced by the frame's release of the slot; the caller keeps its own reference counted.
    if (plan_->tracker && slot.valid() && !plan_->tracker->excluded(slot))
      plan_->tracker->add(slot);
  }
  return plan_->execute(*this, plan, slots, outerLookup, plan_->observer);
}

}  // namespace qopt::interp
