#include "ControlFlowChecks.h"

#include <fmt/format.h>

#include <set>
#include <string>

#include "QdqChecks.h"
#include "qopt/constants/ConstantValue.h"

namespace qopt::checktrt {
namespace {

// Whether a tensor of `type` cannot cross an If's boundary: TensorRT takes bool, int32, float16,
// float32 and bfloat16 there, and its ONNX parser reads int64 as int32.
bool refusedAtIf(DataType type) {
  return type != DataType::Undefined && type != DataType::Bool && type != DataType::Int32 &&
         type != DataType::Int64 && type != DataType::Float16 && type != DataType::Float &&
         type != DataType::BFloat16;
}

// The declared element type, else a QuantizeLinear's output type, which exporters and passes
// leave undeclared.
DataType elementType(const Value& value) {
  const DataType declared = value.type().isTensor() ? value.type().elemType : DataType::Undefined;
  const Node* producer = value.producer();
  if (declared != DataType::Undefined || producer == nullptr || !producer->is("QuantizeLinear")) {
    return declared;
  }
  return quantizedType(*producer);
}

void checkIf(const Node& node, std::vector<Finding>& findings) {
  const Value* cond = node.input(0);
  if (cond != nullptr && cond->type().isTensor()) {
    const ValueType& type = cond->type();
    if (type.shape && !type.shape->empty()) {
      findings.push_back(makeFinding(
          Severity::Error, "if-condition-not-scalar", node,
          fmt::format("its condition '{}' has rank {}; TensorRT's If takes a scalar (0-D) bool",
                      cond->name(), type.shape->size()),
          "Reshape or Squeeze the condition to a scalar before the If"));
    }
    if (type.elemType != DataType::Undefined && type.elemType != DataType::Bool) {
      findings.push_back(
          makeFinding(Severity::Error, "if-condition-not-bool", node,
                      fmt::format("its condition '{}' is {}; TensorRT's If takes bool",
                                  cond->name(), dataTypeName(type.elemType)),
                      "compare or Cast the condition to bool before the If"));
    }
  }
  // The values of enclosing graphs the branches read, and the If's outputs, cross its boundary.
  std::set<std::string> reported;
  auto crossing = [&](const Value* value, const char* how) {
    // Constants are weights, built into the engine: only run-time tensors cross.
    if (fold::isConstantValue(value)) return;
    const DataType type = elementType(*value);
    if (!refusedAtIf(type) || !reported.insert(value->name()).second) return;
    findings.push_back(makeFinding(
        Severity::Error, "if-boundary-type", node,
        fmt::format("'{}' ({}) {}; tensors crossing TensorRT's If boundary are bool, int32, "
                    "float16, float32 or bfloat16",
                    value->name(), dataTypeName(type), how),
        type == DataType::Int8 || type == DataType::UInt8 || type == DataType::Float8E4M3FN
            ? "keep each QuantizeLinear -> DequantizeLinear pair on one side of the boundary "
              "(quantize inside the branch, or dequantize before it)"
            : "Cast it to a type the boundary takes"));
  };
  for (const Value* outer : Graph::implicitInputs(&node))
    crossing(outer, "is read inside a branch");
  for (const Value* out : node.outputs()) {
    if (!out->isAbsent()) crossing(out, "is an output of the If");
  }
  // Branch outputs of different ranks: only a condition known when the engine is built allows it.
  const Attribute* thenBranch = node.findAttr("then_branch");
  const Attribute* elseBranch = node.findAttr("else_branch");
  if (thenBranch == nullptr || elseBranch == nullptr || !thenBranch->g || !elseBranch->g ||
      (cond != nullptr && fold::isConstantValue(cond))) {
    return;
  }
  const std::vector<Value*>& a = thenBranch->g->outputs();
  const std::vector<Value*>& b = elseBranch->g->outputs();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const auto& sa = a[i]->type().shape;
    const auto& sb = b[i]->type().shape;
    if (!a[i]->type().isTensor() || !b[i]->type().isTensor() || !sa || !sb ||
        sa->size() == sb->size()) {
      continue;
    }
    findings.push_back(makeFinding(
        Severity::Error, "if-branch-rank", node,
        fmt::format("output {} has rank {} in then_branch and {} in else_branch; TensorRT needs "
                    "equal ranks unless the condition is a build-time constant",
                    i, sa->size(), sb->size()),
        "bind the inputs the condition depends on (specialize) and fold the If (fold-constants)"));
  }
}

}  // namespace

void checkControlFlow(const Model& model, std::vector<Finding>& findings) {
  model.graph().walk([&](const Node* node) {
    if (node->is("If")) checkIf(*node, findings);
  });
}

}  // namespace qopt::checktrt
