#include "qopt/analysis/QuantizedLayers.h"

#include <fmt/format.h>

#include "ConstantValue.h"
#include "qopt/analysis/Precision.h"
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

std::vector<QuantizedLayer> findQuantizedLayers(const Graph& graph) {
  std::vector<QuantizedLayer> layers;
  size_t position = 0;
  for (Node* node : graph.nodes()) {
    bool floatOp =
        node->is("Conv") || node->is("ConvTranspose") || node->is("Gemm") || node->is("MatMul");
    if (floatOp && weightInputIndex(*node) && readsDequantize(*node)) {
      layers.push_back({node, position, layerName(*node)});
    }
    ++position;
  }
  return layers;
}

Node* nodeAtPosition(const Graph& graph, size_t position) {
  size_t i = 0;
  for (Node* node : graph.nodes()) {
    if (i++ == position) return node;
  }
  return nullptr;
}

Tensor dequantizeConstant(const Node& dq) {
  std::optional<Tensor> x = fold::constantThroughCasts(dq.input(0));
  std::optional<Tensor> scale = fold::constantThroughCasts(dq.input(1));
  if (!x || !scale) throw dequantizeError(dq, "its data or scale is not a constant");
  std::optional<Tensor> zeroPoint;
  if (dq.input(2) != nullptr) {
    zeroPoint = fold::constantThroughCasts(dq.input(2));
    if (!zeroPoint) throw dequantizeError(dq, "its zero point is not a constant");
  }
  const std::vector<int64_t>& dims = x->dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  const std::vector<double> xs = x->toDoubles();
  const std::vector<double> ss = scale->toDoubles();
  const std::vector<double> zs = zeroPoint ? zeroPoint->toDoubles() : std::vector<double>();
  if (ss.empty()) throw dequantizeError(dq, "its scale is empty");
  if (zeroPoint && zs.size() != ss.size()) {
    throw dequantizeError(dq, "its zero point and scale have different sizes");
  }
  int64_t axis = dq.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  const int64_t block = dq.attrInt("block_size", 0);
  const bool perTensor = ss.size() == 1 && block == 0;
  if (!perTensor && (axis < 0 || axis >= rank)) {
    throw dequantizeError(dq, fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  int64_t outer = 1, axisDim = 1, inner = 1;
  if (!perTensor) {
    for (int64_t i = 0; i < axis; ++i) outer *= dims[static_cast<size_t>(i)];
    axisDim = dims[static_cast<size_t>(axis)];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= dims[static_cast<size_t>(i)];
  }
  const int64_t paramAxis = block > 0 ? (axisDim + block - 1) / block : axisDim;
  const size_t expected =
      block > 0 ? static_cast<size_t>(outer * paramAxis * inner) : static_cast<size_t>(axisDim);
  if (!perTensor && ss.size() != expected) {
    throw dequantizeError(dq, fmt::format("scale has {} values, expected {}", ss.size(), expected));
  }
  std::vector<double> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t p = 0;
    if (!perTensor) {
      const int64_t flat = static_cast<int64_t>(i);
      const int64_t o = flat / (axisDim * inner);
      const int64_t a = (flat / inner) % axisDim;
      const int64_t n = flat % inner;
      p = block > 0 ? static_cast<size_t>((o * paramAxis + a / block) * inner + n)
                    : static_cast<size_t>(a);
    }
    out[i] = (xs[i] - (zs.empty() ? 0.0 : zs[p])) * ss[p];
  }
  return Tensor::fromDoubles(scale->dataType(), dims, out);
}

BypassResult returnToFloat(Node& node, FloatFallback fallback) {
  BypassResult result;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    Value* in = node.input(i);
    Node* dq = in != nullptr ? in->producer() : nullptr;
    if (dq == nullptr || !dq->is("DequantizeLinear")) continue;
    Node* q = dq->input(0)->producer();
    if (q != nullptr && q->is("QuantizeLinear")) {
      node.setInput(i, q->input(0));
      fold::eraseIfUnused(in);
      ++result.activationsBypassed;
    } else if (isBuildTimeConstant(dq->input(0))) {
      Tensor values = dequantizeConstant(*dq);
      fold::installConstant({Use{&node, static_cast<uint32_t>(i)}}, std::move(values),
                            in->name() + "_dequantized");
      ++result.constantsDequantized;
    } else {
      result.kept.push_back(fmt::format(
          "input {} ('{}') is a DequantizeLinear of a run-time tensor no QuantizeLinear produced",
          i, in->name()));
    }
  }
  if (fallback == FloatFallback::Float16) runInFloat16(node);
  return result;
}

}  // namespace qopt::analysis
