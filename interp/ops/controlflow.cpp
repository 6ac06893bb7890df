// Control flow: If, Loop and Scan. Bodies run through Interpreter::runSubgraph with the node's
// outer-scope lookup, so values of enclosing graphs are visible inside them. If outputs and Loop
// carried values may be sequences and optionals; conditions, trip counts and everything Scan
// and scan outputs touch are tensors.
#include <algorithm>

#include "ArrayOps.h"
#include "KernelSupport.h"
#include "qopt/interp/Interpreter.h"

namespace qopt::interp {

namespace {

const Graph& graphAttr(KernelContext& ctx, const char* name) {
  const Attribute* a = ctx.node.findAttr(name);
  if (a == nullptr || a->kind != AttrKind::Graph || !a->g) {
    ctx.fail(fmt::format("the graph attribute '{}' is missing", name));
  }
  return *a->g;
}

void requireTensor(KernelContext& ctx, const Array& a, const std::string& what) {
  if (!a.isTensor()) {
    ctx.fail(fmt::format("{} must be a tensor, got a {} value", what, valueKindName(a.kind())));
  }
}

bool conditionValue(KernelContext& ctx, const Array& a) {
  requireTensor(ctx, a, "the condition");
  if (a.numel() != 1)
    ctx.fail(
        fmt::format("the condition must have one element, got shape {}", shapeString(a.shape())));
  return a.getDouble(0) != 0;
}

/// Element `index` along `axis`, with that axis removed.
Array takeSlice(const Array& a, int64_t axis, int64_t index) {
  Shape shape = a.shape();
  int64_t n = shape[axis];
  shape.erase(shape.begin() + axis);
  Array out(a.dataType(), shape);
  int64_t outer = product(a.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(a.shape(), static_cast<size_t>(axis) + 1);
  for (int64_t o = 0; o < outer; ++o)
    copyElements(a, (o * n + index) * inner, out, o * inner, inner);
  return out;
}

/// Stacks equally shaped `parts` along a new `axis` (in reverse order when `reverse`).
Array stack(KernelContext& ctx, const std::vector<Array>& parts, int64_t axis, bool reverse,
            DataType emptyType, const Shape& emptyShape) {
  int64_t count = static_cast<int64_t>(parts.size());
  Shape partShape = parts.empty() ? emptyShape : parts[0].shape();
  DataType type = parts.empty() ? emptyType : parts[0].dataType();
  int64_t rank = static_cast<int64_t>(partShape.size()) + 1;
  axis = normalizeAxis(axis, rank);
  Shape shape = partShape;
  shape.insert(shape.begin() + axis, count);
  Array out(type, shape);
  int64_t outer = product(partShape, 0, static_cast<size_t>(axis));
  int64_t inner = product(partShape, static_cast<size_t>(axis));
  for (int64_t t = 0; t < count; ++t) {
    const Array& part = parts[static_cast<size_t>(reverse ? count - 1 - t : t)];
    requireTensor(ctx, part, "a scan output");
    if (part.shape() != partShape || part.dataType() != type) {
      ctx.fail(fmt::format("scan output changes shape across iterations: {} then {}",
                           shapeString(partShape), shapeString(part.shape())));
    }
    for (int64_t o = 0; o < outer; ++o)
      copyElements(part, o * inner, out, (o * count + t) * inner, inner);
  }
  return out;
}

/// Type and shape for a scan output that got no iterations: from the body's declared type.
std::pair<DataType, Shape> declaredType(const Value* v) {
  DataType type = v->type().elemType == DataType::Undefined ? DataType::Float : v->type().elemType;
  Shape shape;
  if (auto dims = v->type().staticShape()) shape = Shape(dims->begin(), dims->end());
  return {type, shape};
}

void ifOp(KernelContext& ctx) {
  bool cond = conditionValue(ctx, ctx.in(0));
  const Graph& branch = graphAttr(ctx, cond ? "then_branch" : "else_branch");
  std::vector<Array> results = ctx.interpreter.runSubgraph(branch, {}, ctx.outerLookup);
  if (results.size() != ctx.outputs.size()) {
    ctx.fail(
        fmt::format("the branch has {} outputs, the node {}", results.size(), ctx.outputs.size()));
  }
  for (size_t i = 0; i < results.size(); ++i) ctx.outputs[i] = std::move(results[i]);
}

void loop(KernelContext& ctx) {
  const Graph& body = graphAttr(ctx, "body");
  const Array* maxTrip = ctx.optIn(0);
  const Array* condIn = ctx.optIn(1);
  if (maxTrip != nullptr) requireTensor(ctx, *maxTrip, "the trip count M");
  int64_t tripLimit = INT64_MAX;
  if (maxTrip != nullptr) {
    scalarValue(*maxTrip, "M");  // one element, or the error says so
    // Read as an integer: INT64_MAX, the trip count exporters write for "no limit", is not a
    // double that converts back.
    tripLimit = maxTrip->toInt64Vector()[0];
  }
  if (tripLimit == INT64_MAX && condIn == nullptr) {
    ctx.fail("it has no condition and no trip count below 2^63-1: it never ends");
  }
  bool cond = condIn ? conditionValue(ctx, *condIn) : true;
  size_t carried = ctx.numInputs() >= 2 ? ctx.numInputs() - 2 : 0;
  if (body.outputs().size() < carried + 1) ctx.fail("the body has too few outputs");
  size_t scans = body.outputs().size() - 1 - carried;
  if (ctx.outputs.size() != carried + scans) {
    ctx.fail(fmt::format("the node has {} outputs, the body gives {} carried and {} scan values",
                         ctx.outputs.size(), carried, scans));
  }
  std::vector<Array> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(ctx.in(2 + i));
  std::vector<std::vector<Array>> scanParts(scans);
  std::vector<Array> inputs(2 + carried);
  for (int64_t iter = 0; iter < tripLimit && cond; ++iter) {
    inputs[0] = Array::scalar(DataType::Int64, iter);
    inputs[1] = Array::scalar(DataType::Bool, cond);
    for (size_t i = 0; i < carried; ++i) inputs[2 + i] = std::move(state[i]);
    std::vector<Array> outs = ctx.interpreter.runSubgraph(body, inputs, ctx.outerLookup);
    cond = conditionValue(ctx, outs[0]);
    for (size_t i = 0; i < carried; ++i) state[i] = std::move(outs[1 + i]);
    for (size_t k = 0; k < scans; ++k) scanParts[k].push_back(std::move(outs[1 + carried + k]));
  }
  for (size_t i = 0; i < carried; ++i) ctx.outputs[i] = std::move(state[i]);
  for (size_t k = 0; k < scans; ++k) {
    auto [type, shape] = declaredType(body.outputs()[1 + carried + k]);
    ctx.outputs[carried + k] = stack(ctx, scanParts[k], 0, false, type, shape);
  }
}

/// One Scan over unbatched operands: the final states, then the stacked scan outputs.
std::vector<Array> runScan(KernelContext& ctx, const Graph& body, std::vector<Array> state,
                           const std::vector<Array>& scanInputs, std::vector<int64_t> inAxes,
                           const std::vector<int64_t>& inDirs, const std::vector<int64_t>& outAxes,
                           const std::vector<int64_t>& outDirs) {
  size_t n = state.size();
  size_t m = scanInputs.size();
  size_t scans = outAxes.size();
  int64_t length = -1;
  for (size_t j = 0; j < m; ++j) {
    inAxes[j] = normalizeAxis(inAxes[j], scanInputs[j].rank());
    int64_t len = scanInputs[j].shape()[inAxes[j]];
    if (length >= 0 && len != length) ctx.fail("scan inputs have different lengths");
    length = len;
  }
  std::vector<std::vector<Array>> parts(scans);
  std::vector<Array> inputs(n + m);
  for (int64_t t = 0; t < length; ++t) {
    for (size_t i = 0; i < n; ++i) inputs[i] = std::move(state[i]);
    for (size_t j = 0; j < m; ++j) {
      int64_t index = inDirs[j] != 0 ? length - 1 - t : t;
      inputs[n + j] = takeSlice(scanInputs[j], inAxes[j], index);
    }
    std::vector<Array> outs = ctx.interpreter.runSubgraph(body, inputs, ctx.outerLookup);
    if (outs.size() != n + scans) ctx.fail("the body's outputs do not match the node's");
    for (size_t i = 0; i < n; ++i) {
      requireTensor(ctx, outs[i], "a scan state");
      state[i] = std::move(outs[i]);
    }
    for (size_t k = 0; k < scans; ++k) parts[k].push_back(std::move(outs[n + k]));
  }
  std::vector<Array> results = std::move(state);
  for (size_t k = 0; k < scans; ++k) {
    auto [type, shape] = declaredType(body.outputs()[n + k]);
    results.push_back(stack(ctx, parts[k], outAxes[k], outDirs[k] != 0, type, shape));
  }
  return results;
}

/// Scan 9+: states, then num_scan_inputs scanned inputs, axes and directions per operand.
void scan(KernelContext& ctx) {
  const Graph& body = graphAttr(ctx, "body");
  int64_t numScanInputs = ctx.node.attrInt("num_scan_inputs", -1);
  if (numScanInputs < 1 || static_cast<size_t>(numScanInputs) > ctx.numInputs()) {
    ctx.fail("num_scan_inputs is missing or out of range");
  }
  size_t m = static_cast<size_t>(numScanInputs);
  size_t n = ctx.numInputs() - m;
  size_t scans = ctx.outputs.size() >= n ? ctx.outputs.size() - n : 0;
  std::vector<int64_t> inAxes = ctx.node.attrInts("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> inDirs =
      ctx.node.attrInts("scan_input_directions", std::vector<int64_t>(m, 0));
  std::vector<int64_t> outAxes =
      ctx.node.attrInts("scan_output_axes", std::vector<int64_t>(scans, 0));
  std::vector<int64_t> outDirs =
      ctx.node.attrInts("scan_output_directions", std::vector<int64_t>(scans, 0));
  if (inAxes.size() != m || inDirs.size() != m || outAxes.size() != scans ||
      outDirs.size() != scans) {
    ctx.fail("scan axes/directions attributes do not match the inputs and outputs");
  }
  std::vector<Array> state, scanInputs;
  for (size_t i = 0; i < n; ++i) state.push_back(ctx.in(i));
  for (size_t j = 0; j < m; ++j) scanInputs.push_back(ctx.in(n + j));
  std::vector<Array> results =
      runScan(ctx, body, state, scanInputs, inAxes, inDirs, outAxes, outDirs);
  for (size_t i = 0; i < results.size(); ++i) ctx.outputs[i] = std::move(results[i]);
}

/// Scan 8: every operand has a leading batch axis (scan inputs [batch, sequence, ...]) and an
/// optional first input gives per-batch sequence lengths; each batch entry scans on its own.
void scanBatched(KernelContext& ctx) {
  const Graph& body = graphAttr(ctx, "body");
  int64_t numScanInputs = ctx.node.attrInt("num_scan_inputs", -1);
  if (numScanInputs < 1 || static_cast<size_t>(numScanInputs) + 1 > ctx.numInputs()) {
    ctx.fail("num_scan_inputs is missing or out of range");
  }
  size_t m = static_cast<size_t>(numScanInputs);
  size_t n = ctx.numInputs() - 1 - m;
  size_t scans = ctx.outputs.size() - n;
  std::vector<int64_t> dirs = ctx.node.attrInts("directions", std::vector<int64_t>(m, 0));
  if (dirs.size() != m) ctx.fail("directions does not match the scan inputs");
  int64_t batch = ctx.in(1).rank() > 0 ? ctx.in(1).shape()[0] : 0;
  if (const Array* lens = ctx.optIn(0)) {
    int64_t full = ctx.in(1 + n).rank() > 1 ? ctx.in(1 + n).shape()[1] : 0;
    for (int64_t len : lens->toInt64Vector()) {
      if (len != full) ctx.fail("sequence_lens shorter than the sequence are not supported");
    }
  }
  std::vector<std::vector<Array>> perBatch(n + scans);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Array> state, scanInputs;
    for (size_t i = 0; i < n; ++i) state.push_back(takeSlice(ctx.in(1 + i), 0, b));
    for (size_t j = 0; j < m; ++j) scanInputs.push_back(takeSlice(ctx.in(1 + n + j), 0, b));
    std::vector<Array> results =
        runScan(ctx, body, state, scanInputs, std::vector<int64_t>(m, 0), dirs,
                std::vector<int64_t>(scans, 0), std::vector<int64_t>(scans, 0));
    for (size_t i = 0; i < results.size(); ++i) perBatch[i].push_back(std::move(results[i]));
  }
  for (size_t i = 0; i < n + scans; ++i) {
    auto [type, shape] = declaredType(body.outputs()[i]);
    ctx.outputs[i] = stack(ctx, perBatch[i], 0, false, type, shape);
  }
}

}  // namespace

void registerControlFlowKernels(KernelRegistry& r) {
  r.add({
      {"If", 1, ifOp},
      {"Loop", 1, loop},
      {"Scan", 8, scanBatched},
      {"Scan", 9, scan},
  });
}

}  // namespace qopt::interp
