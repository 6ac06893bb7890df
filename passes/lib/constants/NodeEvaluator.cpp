#include "qopt/constants/NodeEvaluator.h"

#include <fmt/format.h>

#include <memory>

#include "qopt/interp/Interpreter.h"

namespace qopt::fold {

std::vector<Tensor> evaluateNode(const Node& node, const std::vector<std::optional<Tensor>>& inputs,
                                 uint64_t maxBytes) {
  // A model holding just this node, its inputs as initializers and its outputs as outputs: the
  // interpreter then needs nothing but its public interface.
  const Model& source = node.graph()->model();
  Model scratch;
  scratch.irVersion = source.irVersion;
  scratch.opsetImports = source.opsetImports;
  scratch.sourcePath = source.sourcePath;
  Graph& graph = scratch.graph();
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      values.push_back(nullptr);
      continue;
    }
    auto tensor = std::make_shared<Tensor>(*inputs[i]);  // shares the bytes
    tensor->setName(fmt::format("input{}", i));
    values.push_back(graph.addInitializer(std::move(tensor)));
  }
  Node* copy = graph.createNode(node.opType(), values, node.numOutputs(), nullptr, node.domain());
  copy->setName(node.name());
  ValueMap none;
  for (const Attribute& attr : node.attributes()) copy->setAttr(attr.clone(copy, none));
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    copy->output(i)->setType(node.output(i)->type());
    graph.addOutput(copy->output(i));
  }

  interp::RunOptions options;
  options.threads = 1;
  options.maxTensorBytes = maxBytes;
  interp::Interpreter interpreter(graph, options);
  std::vector<interp::Array> arrays = interpreter.run({});
  std::vector<Tensor> outputs;
  outputs.reserve(arrays.size());
  for (const interp::Array& array : arrays) outputs.push_back(array.toTensor());
  return outputs;
}

}  // namespace qopt::fold
