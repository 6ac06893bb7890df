#include "qopt/qdq/QdqEmitter.h"

#include <memory>
#include <utility>

namespace qopt::qdq {
namespace {

Tensor zeroPoints(DataType type, std::vector<int64_t> dims, size_t count, int64_t value) {
  std::vector<int64_t> values(count, value);
  return Tensor::fromInt64s(type, std::move(dims), values);
}

Node* makeNode(Graph& graph, const std::string& opType, const std::string& baseName,
               std::initializer_list<Value*> inputs, const std::string& outputName, Node* before) {
  Model& model = graph.model();
  Node* node = graph.createEmptyNode(opType, {}, before);
  node->setName(model.uniqueNodeName(baseName + "_" + opType));
  for (Value* input : inputs) node->addInput(input);
  node->addOutput(model.uniqueValueName(outputName));
  return node;
}

// Scales take the type of the tensor they quantize: DequantizeLinear yields the scale's type, so
// a float16 model stays float16 through its Q/DQ pairs (opset 19 allows it).
Tensor scaleTensor(DataType floatType, std::vector<int64_t> dims,
                   const std::vector<float>& scales) {
  if (floatType == DataType::Float) return Tensor::fromFloats(std::move(dims), scales);
  std::vector<double> values(scales.begin(), scales.end());
  return Tensor::fromDoubles(floatType, std::move(dims), values);
}

}  // namespace

Value* insertActivationPair(Graph& graph, Value* x, const ActivationParams& params, Node* before) {
  const std::string& base = x->name();
  const DataType integerType = params.type;
  const DataType floatType = floatTypeOf(x);
  Value* scaleValue =
      addNamedInitializer(graph, base + "_scale", scaleTensor(floatType, {}, {params.scale}));
  Value* zeroValue = addNamedInitializer(graph, base + "_zero_point",
                                         zeroPoints(integerType, {}, 1, params.zeroPoint));
  Node* q = makeNode(graph, "QuantizeLinear", base, {x, scaleValue, zeroValue}, base + "_quantized",
                     before);
  ValueType quantizedType = x->type();
  if (quantizedType.isTensor()) quantizedType.elemType = integerType;
  q->output(0)->setType(quantizedType);
  Node* dq = makeNode(graph, "DequantizeLinear", base, {q->output(0), scaleValue, zeroValue},
                      base + "_dequantized", before);
  ValueType dequantizedType = x->type();
  if (dequantizedType.isTensor()) dequantizedType.elemType = floatType;
  dq->output(0)->setType(dequantizedType);
  return dq->output(0);
}

Value* insertConstantDequantize(Graph& graph, const std::string& baseName, Tensor values,
                                const std::vector<float>& scales, int64_t axis, Node* before,
                                DataType floatType) {
  std::vector<int64_t> dims = values.dims();
  DataType integerType = values.dataType();
  std::vector<int64_t> scaleDims;
  if (axis >= 0) scaleDims.push_back(static_cast<int64_t>(scales.size()));
  Value* quantized = addNamedInitializer(graph, baseName + "_quantized", std::move(values));
  Value* scaleValue =
      addNamedInitializer(graph, baseName + "_scale", scaleTensor(floatType, scaleDims, scales));
  Value* zeroValue = addNamedInitializer(graph, baseName + "_zero_point",
                                         zeroPoints(integerType, scaleDims, scales.size(), 0));
  Node* dq = makeNode(graph, "DequantizeLinear", baseName, {quantized, scaleValue, zeroValue},
                      baseName + "_dequantized", before);
  if (axis >= 0) dq->setAttr(Attribute::makeInt("axis", axis));
  dq->output(0)->setType(ValueType::tensor(floatType, dims));
  return dq->output(0);
}

}  // namespace qopt::qdq
