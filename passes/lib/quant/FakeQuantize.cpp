#include "FakeQuantize.h"

#include <vector>

#include "qopt/ir/Error.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::quant {
namespace {

// The com.microsoft QuantizeLinear/DequantizeLinear (opset 1 of that domain) run as the default
// domain's opset 21 in the interpreter: the probe works whatever the model's own opset (9 has no
// QuantizeLinear) and takes float16 scales for a float16 tensor.
constexpr const char* kQdqDomain = "com.microsoft";

}  // namespace

void prepareQdqDomain(Model& model) {
  if (!model.opsetVersion(kQdqDomain)) model.setOpsetVersion(kQdqDomain, 1);
}

Node* addProbeNode(Graph& graph, const std::string& op, const std::string& domain, Node* before,
                   const std::string& base) {
  Node* node = graph.createEmptyNode(op, domain, before);
  node->setName(graph.model().uniqueNodeName(base));
  return node;
}

Value* fakeQuantize(Graph& graph, Value* x, const FakeQuantization& q, Node* before) {
  const DataType floatType = floatTypeOf(x);
  const DataType integerType = q.isUnsigned ? DataType::UInt8 : DataType::Int8;
  const std::string base = x->name() + "_auto";
  Value* scale = addNamedInitializer(
      graph, base + "_scale", Tensor::fromDoubles(floatType, {}, std::vector<double>{q.scale}));
  Value* zero =
      addNamedInitializer(graph, base + "_zero_point",
                          Tensor::fromInt64s(integerType, {}, std::vector<int64_t>{q.zeroPoint}));
  Node* quantize =
      addProbeNode(graph, "QuantizeLinear", kQdqDomain, before, base + "_QuantizeLinear");
  for (Value* in : {x, scale, zero}) quantize->addInput(in);
  Value* quantized = quantize->addOutput(graph.model().uniqueValueName(base + "_quantized"));
  ValueType type = x->type();
  if (type.isTensor()) type.elemType = integerType;
  quantized->setType(type);
  Node* dequantize =
      addProbeNode(graph, "DequantizeLinear", kQdqDomain, before, base + "_DequantizeLinear");
  for (Value* in : {quantized, scale, zero}) dequantize->addInput(in);
  Value* out = dequantize->addOutput(graph.model().uniqueValueName(base + "_dequantized"));
  out->setType(x->type());
  return out;
}

std::unordered_map<const Node*, Node*> nodeCorrespondence(const Model& model, Model& copy) {
  // A clone keeps the node order, bodies included: the i-th node of one is the i-th of the
  // other.
  std::unordered_map<const Node*, Node*> nodeOf;
  const std::vector<Node*> copies = copy.graph().allNodes();
  size_t i = 0;
  for (const Node* node : model.graph().allNodes()) {
    if (i >= copies.size() || copies[i]->opType() != node->opType()) {
      throw Error(ErrorKind::Internal, model.sourcePath, node->describe(),
                  "the probe's copy of the graph differs");
    }
    nodeOf[node] = copies[i++];
  }
  return nodeOf;
}

}  // namespace qopt::quant
