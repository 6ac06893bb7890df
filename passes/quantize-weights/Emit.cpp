#include "Emit.h"

#include <utility>

#include "qopt/constants/ConstantValue.h"
#include "qopt/quant/GraphValues.h"

namespace qopt::wq {
namespace {

using quant::addNamedInitializer;

int64_t bytesOf(DataType type) {
  return type == DataType::Float ? 4 : 2;
}

std::string baseNameOf(const WeightSite& site) {
  const Value* w = site.node->input(site.weightIndex);
  return w->name().empty() ? site.node->name() : w->name();
}

}  // namespace

int64_t emitQdq(const WeightSite& site, const BlockQuantized& q) {
  Graph& graph = *site.node->graph();
  Model& model = graph.model();
  const std::string base = baseNameOf(site);
  const DataType codeType = q.symmetric ? DataType::Int4 : DataType::UInt4;
  // Blocked along K: axis 0 of a [K, N] weight, axis 1 of Gemm's transposed [N, K].
  const int64_t axis = site.transposed ? 1 : 0;
  std::vector<int64_t> paramDims = site.transposed ? std::vector<int64_t>{q.cols, q.blocks}
                                                   : std::vector<int64_t>{q.blocks, q.cols};
  Value* codes = addNamedInitializer(
      graph, base + "_int4",
      Tensor::fromInt64s(codeType, site.storedDims, qdqCodes(q, site.transposed)));
  Value* scales = addNamedInitializer(
      graph, base + "_scale",
      Tensor::fromDoubles(site.floatType, paramDims, qdqScales(q, site.transposed)));
  Value* zeros = addNamedInitializer(
      graph, base + "_zero_point",
      Tensor::fromInt64s(codeType, paramDims, qdqZeroPoints(q, site.transposed)));
  Node* dq = graph.createEmptyNode("DequantizeLinear", {}, site.node);
  dq->setName(model.uniqueNodeName(base + "_DequantizeLinear"));
  dq->addInput(codes);
  dq->addInput(scales);
  dq->addInput(zeros);
  dq->addOutput(model.uniqueValueName(base + "_dequantized"));
  dq->setAttr(Attribute::makeInt("axis", axis));
  dq->setAttr(Attribute::makeInt("block_size", q.blockSize));
  dq->output(0)->setType(ValueType::tensor(site.floatType, site.storedDims));
  Value* old = site.node->input(site.weightIndex);
  // The float weight stays known for the codes: a layer returned to float later
  // (mixed-precision, sensitivity) gets it back rather than the codes dequantized.
  if (TensorPtr values = fold::sharedConstantOf(old)) {
    model.recordUnrounded(*codes->initializer(), std::move(values));
  }
  site.node->setInput(site.weightIndex, dq->output(0));
  fold::eraseIfUnused(old);
  const int64_t params = q.blocks * q.cols;
  return (q.rows * q.cols + 1) / 2 + params * bytesOf(site.floatType) + (params + 1) / 2;
}

int64_t emitOrt(const WeightSite& site, const BlockQuantized& q,
                const std::optional<std::vector<double>>& bias) {
  Node* old = site.node;
  Graph& graph = *old->graph();
  Model& model = graph.model();
  if (!model.opsetVersion("com.microsoft")) model.setOpsetVersion("com.microsoft", 1);
  const std::string base = baseNameOf(site);
  OrtPacked packed = packForOrt(q);
  const int64_t blob = q.blockSize / 2;
  std::vector<Value*> inputs;
  Value* activation = old->input(0);  // AWQ may have put a Mul before it
  inputs.push_back(activation);
  inputs.push_back(addNamedInitializer(
      graph, base + "_nbits",
      Tensor::fromPod<uint8_t>(DataType::UInt8, {q.cols, q.blocks, blob}, packed.b)));
  inputs.push_back(
      addNamedInitializer(graph, base + "_scale",
                          Tensor::fromDoubles(site.floatType, {q.cols * q.blocks}, packed.scales)));
  inputs.push_back(packed.zeroPoints.empty()
                       ? nullptr
                       : addNamedInitializer(
                             graph, base + "_zero_point",
                             Tensor::fromPod<uint8_t>(
                                 DataType::UInt8, {static_cast<int64_t>(packed.zeroPoints.size())},
                                 packed.zeroPoints)));
  if (bias) {
    inputs.push_back(nullptr);  // g_idx
    inputs.push_back(addNamedInitializer(graph, base + "_bias",
                                         Tensor::fromDoubles(site.floatType, {q.cols}, *bias)));
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();

  Node* node = graph.createEmptyNode("MatMulNBits", "com.microsoft", old);
  node->setName(old->name().empty() ? model.uniqueNodeName(base + "_MatMulNBits") : "");
  for (Value* input : inputs) node->addInput(input);
  node->setAttr(Attribute::makeInt("K", q.rows));
  node->setAttr(Attribute::makeInt("N", q.cols));
  node->setAttr(Attribute::makeInt("bits", 4));
  node->setAttr(Attribute::makeInt("block_size", q.blockSize));
  Value* oldOut = old->output(0);
  const std::string outName = oldOut->name();
  const std::string nodeName = old->name();
  Value* out = node->addOutput(model.uniqueValueName(outName + "_nbits"));
  out->setType(oldOut->type());
  std::vector<Value*> oldInputs(old->inputs().begin(), old->inputs().end());
  oldOut->replaceAllUsesWith(out);
  graph.eraseNode(old);
  // The product keeps the names the float one had: reports and later passes find it again.
  if (out->name() != outName) out->setName(outName);
  if (!nodeName.empty()) node->setName(nodeName);
  for (Value* v : oldInputs) {
    if (v != nullptr && v != activation) fold::eraseIfUnused(v);
  }
  const int64_t params = q.cols * q.blocks;
  return static_cast<int64_t>(packed.b.size()) + params * bytesOf(site.floatType) +
         static_cast<int64_t>(packed.zeroPoints.size());
}

}  // namespace qopt::wq
