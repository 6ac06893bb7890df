#include "qopt/analysis/QuantizedLayers.h"

#include <unordered_set>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "qopt/analysis/Precision.h"
#include "qopt/constants/ConstantCone.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {

namespace {

bool readsDequantize(const Node& node) {
  for (const Value* in : node.inputs()) {
    if (in != nullptr && in->producer() != nullptr && in->producer()->is("DequantizeLinear")) {
      return true;
    }
  }
  return false;
}

Error dequantizeError(const Node& dq, const std::string& cause) {
  return Error(ErrorKind::Input, dq.graph()->model().sourcePath, dq.describe(), cause);
}

ValueType withElemType(const ValueType& type, DataType elem) {
  ValueType out = type.isTensor() ? type : ValueType::tensor(elem);
  out.elemType = elem;
  return out;
}

// Runs `node` in float16: float constants become float16 constants, other inputs are cast, and
// every output is cast back to float for the readers (which keep reading float).
void runInFloat16(Node& node) {
  Graph& graph = *node.graph();
  Model& model = graph.model();
  const std::string base = layerName(node);
  for (size_t i = 0; i < node.numInputs(); ++i) {
    Value* in = node.input(i);
    if (in == nullptr) continue;
    if (std::optional<Tensor> constant = fold::constantOf(in)) {
      if (constant->dataType() == DataType::Float16) continue;
      Tensor half = Tensor::fromDoubles(DataType::Float16, constant->dims(), constant->toDoubles());
      fold::installConstant({Use{&node, static_cast<uint32_t>(i)}}, std::move(half),
                            in->name() + "_fp16");
      continue;
    }
    Node* cast = graph.createNode("Cast", {in}, 1, &node);
    cast->setName(model.uniqueNodeName(base + "_input_to_fp16"));
    cast->setAttr(Attribute::makeInt("to", static_cast<int64_t>(DataType::Float16)));
    cast->output(0)->setType(withElemType(in->type(), DataType::Float16));
    node.setInput(i, cast->output(0));
  }
  for (Value* out : node.outputs()) {
    if (out->isAbsent()) continue;
    ValueType floatType = withElemType(out->type(), DataType::Float);
    Node* cast = graph.createNode("Cast", {out}, 1, node.next());
    cast->setName(model.uniqueNodeName(base + "_output_to_fp32"));
    cast->setAttr(Attribute::makeInt("to", static_cast<int64_t>(DataType::Float)));
    cast->output(0)->setType(floatType);
    out->replaceAllUsesExcept(cast->output(0), cast);
    out->setType(withElemType(out->type(), DataType::Float16));
  }
}

}  // namespace

// QuantizeLinear's input has its scale's type and DequantizeLinear's output its own scale's
// (opset 19: float32, float16 or bfloat16); a layer that read a float16 DequantizeLinear fed by
// a float32 QuantizeLinear (to-fp16 keeps float32 graph inputs) reads the value before the pair
// through a Cast to the type it read.
Value* inDequantizedType(const Node& q, const Node& dq, Value* value, Node* before) {
  const std::optional<Tensor> qScale = fold::qdqParameter(q.input(1));
  const std::optional<Tensor> dqScale = fold::qdqParameter(dq.input(1));
  if (!qScale || !dqScale || qScale->dataType() == dqScale->dataType()) return value;
  Graph& graph = *before->graph();  // the reader's graph: `value` may be of an enclosing one
  Node* cast = graph.createNode("Cast", {value}, 1, before);
  cast->setName(graph.model().uniqueNodeName(dq.name() + "_bypass_cast"));
  cast->setAttr(Attribute::makeInt("to", static_cast<int64_t>(dqScale->dataType())));
  cast->output(0)->setType(withElemType(value->type(), dqScale->dataType()));
  return cast->output(0);
}

std::vector<QuantizedLayer> findQuantizedLayers(const Graph& graph) {
  std::vector<QuantizedLayer> layers;
  size_t position = 0;
  for (Node* node : graph.allNodes()) {
    if (isWeightedOp(*node) && weightInputIndex(*node) && readsDequantize(*node)) {
      layers.push_back({node, position, layerName(*node)});
    }
    ++position;
  }
  return layers;
}

Node* nodeAtPosition(const Graph& graph, size_t position) {
  const std::vector<Node*> all = graph.allNodes();
  return position < all.size() ? all[position] : nullptr;
}

std::vector<Node*> nodesAtPositions(const Graph& graph, std::span<const size_t> positions) {
  const std::vector<Node*> all = graph.allNodes();
  std::vector<Node*> nodes;
  for (size_t position : positions) {
    if (position >= all.size()) {
      throw Error(ErrorKind::Internal, graph.model().sourcePath, {},
                  fmt::format("no node at position {}", position));
    }
    nodes.push_back(all[position]);
  }
  return nodes;
}

namespace {

// Where the scale and zero point of element i are, for per-tensor, per-axis and blocked
// QuantizeLinear/DequantizeLinear: x is viewed as [outer, axisDim, inner].
struct ParamLayout {
  bool perTensor = true;
  int64_t axisDim = 1, inner = 1, block = 0, paramAxis = 1;

  size_t paramOf(size_t i) const {
    if (perTensor) return 0;
    const int64_t flat = static_cast<int64_t>(i);
    const int64_t o = flat / (axisDim * inner);
    const int64_t a = (flat / inner) % axisDim;
    const int64_t n = flat % inner;
    return block > 0 ? static_cast<size_t>((o * paramAxis + a / block) * inner + n)
                     : static_cast<size_t>(a);
  }
};

ParamLayout paramLayout(const Node& node, const std::vector<int64_t>& dims, size_t scales) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = node.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  ParamLayout l;
  l.block = node.attrInt("block_size", 0);
  l.perTensor = scales == 1 && l.block == 0;
  if (l.perTensor) return l;
  if (axis < 0 || axis >= rank) {
    throw dequantizeError(node, fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[static_cast<size_t>(i)];
  l.axisDim = dims[static_cast<size_t>(axis)];
  for (int64_t i = axis + 1; i < rank; ++i) l.inner *= dims[static_cast<size_t>(i)];
  l.paramAxis = l.block > 0 ? (l.axisDim + l.block - 1) / l.block : l.axisDim;
  const size_t expected = l.block > 0 ? static_cast<size_t>(outer * l.paramAxis * l.inner)
                                      : static_cast<size_t>(l.axisDim);
  if (scales != expected) {
    throw dequantizeError(node, fmt::format("scale has {} values, expected {}", scales, expected));
  }
  return l;
}

struct QuantParams {
  std::vector<double> scales;
  std::vector<double> zeroPoints;  // empty: all 0
  std::optional<Tensor> zeroPoint;
};

QuantParams quantParams(const Node& node) {
  QuantParams p;
  std::optional<Tensor> scale = fold::qdqParameter(node.input(1));
  if (!scale) throw dequantizeError(node, "its scale is not a constant");
  p.scales = scale->toDoubles();
  if (p.scales.empty()) throw dequantizeError(node, "its scale is empty");
  if (node.input(2) != nullptr) {
    p.zeroPoint = fold::qdqParameter(node.input(2));
    if (!p.zeroPoint) throw dequantizeError(node, "its zero point is not a constant");
    p.zeroPoints = p.zeroPoint->toDoubles();
    if (p.zeroPoints.size() != p.scales.size()) {
      throw dequantizeError(node, "its zero point and scale have different sizes");
    }
  }
  return p;
}

// The integers QuantizeLinear gives for constant inputs (QAT exports store float weights and
// quantize them in the graph): round half to even, add the zero point, saturate.
Tensor quantizeConstant(const Node& q) {
  std::optional<Tensor> x = fold::constantThroughCasts(q.input(0));
  if (!x) throw dequantizeError(q, "its input is not a constant");
  QuantParams p = quantParams(q);
  DataType type = p.zeroPoint ? p.zeroPoint->dataType() : DataType::UInt8;
  if (const Attribute* a = q.findAttr("output_dtype"); a && a->i != 0) {
    if (std::optional<DataType> t = dataTypeFromInt(a->i)) type = *t;
  }
  if (!isInteger(type)) {
    throw dequantizeError(q,
                          fmt::format("quantizes to {}, not an integer type", dataTypeName(type)));
  }
  const int bits = dataTypeBits(type);
  const double lo = isSignedInteger(type) ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double hi =
      isSignedInteger(type) ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  ParamLayout layout = paramLayout(q, x->dims(), p.scales.size());
  std::vector<double> xs = x->toDoubles();
  std::vector<double> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const size_t k = layout.paramOf(i);
    const double zp = p.zeroPoints.empty() ? 0.0 : p.zeroPoints[k];
    out[i] = std::clamp(std::nearbyint(xs[i] / p.scales[k]) + zp, lo, hi);
  }
  return Tensor::fromDoubles(type, x->dims(), out);
}

// The stored (quantized) data DequantizeLinear reads: a constant, or QuantizeLinear of one.
std::optional<Tensor> quantizedData(const Value* value) {
  if (std::optional<Tensor> t = fold::constantThroughCasts(value)) return t;
  const Node* q = value->producer();
  if (q != nullptr && q->is("QuantizeLinear") && isBuildTimeConstant(q->input(0))) {
    return quantizeConstant(*q);
  }
  return std::nullopt;
}

}  // namespace

Tensor dequantizeConstant(const Node& dq) {
  std::optional<Tensor> x = quantizedData(dq.input(0));
  if (!x) throw dequantizeError(dq, "its data is not a constant");
  QuantParams p = quantParams(dq);
  ParamLayout layout = paramLayout(dq, x->dims(), p.scales.size());
  std::vector<double> xs = x->toDoubles();
  std::vector<double> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const size_t k = layout.paramOf(i);
    out[i] = (xs[i] - (p.zeroPoints.empty() ? 0.0 : p.zeroPoints[k])) * p.scales[k];
  }
  DataType type = fold::qdqParameter(dq.input(1))->dataType();
  return Tensor::fromDoubles(type, x->dims(), out);
}

std::optional<Tensor> unroundedConstant(const Node& dq) {
  const Value* codes = dq.input(0);
  if (codes == nullptr || !codes->isInitializer() || codes->initializer() == nullptr) {
    return std::nullopt;
  }
  TensorPtr original = dq.graph()->model().unrounded(*codes->initializer());
  if (original == nullptr || original->dims() != codes->initializer()->dims()) return std::nullopt;
  std::optional<Tensor> scale = fold::qdqParameter(dq.input(1));
  if (!scale) return std::nullopt;
  if (original->dataType() == scale->dataType()) return *original;
  return Tensor::fromDoubles(scale->dataType(), original->dims(), original->toDoubles());
}

BypassResult returnToFloat(Node& node, FloatFallback fallback) {
  BypassResult result;
  DataType readType = DataType::Float;  // what the layer's activations were dequantized to
  for (size_t i = 0; i < node.numInputs(); ++i) {
    // A bypassed input may itself be a DequantizeLinear(QuantizeLinear(..)) output (re-quantized
    // activations): follow the chain, a few steps at most.
    for (int depth = 0; depth < 8; ++depth) {
      Value* in = node.input(i);
      Node* dq = in != nullptr ? in->producer() : nullptr;
      if (dq == nullptr || !dq->is("DequantizeLinear")) break;
      Node* q = dq->input(0)->producer();
      if (isBuildTimeConstant(dq->input(0))) {
        // A stored weight or bias, also when stored in float and quantized in the graph (QAT):
        // the layer reads the dequantized values.
        std::optional<Tensor> values = unroundedConstant(*dq);
        const bool restored = values.has_value();
        try {
          if (!values) values = dequantizeConstant(*dq);
        } catch (const Error& e) {
          result.kept.push_back(fmt::format("input {} ('{}'): {}", i, in->name(), e.cause()));
          break;
        }
        fold::installConstant({Use{&node, static_cast<uint32_t>(i)}}, std::move(*values),
                              in->name() + "_dequantized");
        ++result.constantsDequantized;
        if (restored) ++result.constantsRestored;
        break;
      }
      if (q == nullptr || !q->is("QuantizeLinear")) {
        result.kept.push_back(fmt::format(
            "input {} ('{}') is a DequantizeLinear of a run-time tensor no QuantizeLinear produced",
            i, in->name()));
        break;
      }
      if (std::optional<Tensor> scale = fold::qdqParameter(dq->input(1))) {
        readType = scale->dataType();
      }
      node.setInput(i, inDequantizedType(*q, *dq, q->input(0), dq));
      fold::eraseIfUnused(in);
      ++result.activationsBypassed;
    }
  }
  // In a model already in half precision (to-fp16) the layer keeps the type it read.
  const bool half = readType == DataType::Float16 || readType == DataType::BFloat16;
  if (fallback == FloatFallback::Float16 && !half) runInFloat16(node);
  return result;
}

void removeQuantization(Graph& graph, const std::unordered_set<const Node*>& keep) {
  std::vector<Node*> readers;
  std::vector<Graph*> graphs = {&graph};
  for (Node* node : graph.allNodes()) {
    for (Graph* body : node->subgraphs()) graphs.push_back(body);
    if (keep.contains(node) || node->is("QuantizeLinear") || node->is("DequantizeLinear")) continue;
    readers.push_back(node);
  }
  // Q/DQ nodes erased on the way are never in `readers`, so every pointer stays valid.
  for (Node* node : readers) returnToFloat(*node);
  for (Graph* g : graphs) {
    for (size_t i = 0; i < g->outputs().size(); ++i) {
      for (int depth = 0; depth < 8; ++depth) {
        Value* out = g->outputs()[i];
        Node* dq = out->producer();
        if (dq == nullptr || !dq->is("DequantizeLinear")) break;
        Node* q = dq->input(0)->producer();
        // A body's output stays a value of the body.
        if (q == nullptr || !q->is("QuantizeLinear") || q->input(0)->graph() != g) break;
        g->setOutput(i, q->input(0));
        fold::eraseIfUnused(out);
      }
    }
  }
}

}  // namespace qopt::analysis
