#include "ControlFlowChecks.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
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

// TensorRT builds an ONNX Loop or Scan as an ILoop: carried values become IRecurrenceLayers,
// scan inputs IIteratorLayers and the node's outputs ILoopOutputLayers. Tensors of enclosing graphs
// that the body reads are used in place, through no boundary layer, and are not checked here.

// onnx-tensorrt reads a constant trip count of 2^31-1 or more as "no trip count" (exporters write
// INT64_MAX for while loops).
constexpr int64_t kNoTripCount = 2147483647;

// Scan output lengths the parser uses when a Loop has no trip count to size them by.
constexpr int64_t kPlaceholderScanLength = 1024;

// onnx-tensorrt resolves Scan's negative axes against this many dimensions, not the tensor's rank.
constexpr int64_t kTrtMaxDims = 8;

const Graph* bodyOf(const Node& node) {
  const Attribute* body = node.findAttr("body");
  return body != nullptr ? body->g.get() : nullptr;
}

std::string shapeText(const std::vector<Dim>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ",";
    text += shape[i].isKnown() ? std::to_string(*shape[i].value)
                               : (shape[i].param.empty() ? "?" : shape[i].param);
  }
  return text + "]";
}

const std::vector<Dim>* shapeOf(const Value* value) {
  if (value == nullptr || !value->type().isTensor() || !value->type().shape) return nullptr;
  return &*value->type().shape;
}

// Whether a tensor of `shape` certainly holds other than one element (what the parser turns into
// a 0-D scalar).
bool notOneElement(const std::vector<Dim>& shape) {
  for (const Dim& d : shape) {
    if (d.isKnown() && *d.value != 1) return true;
  }
  return false;
}

// Whether two shapes certainly differ: other ranks, or an axis known in both with other sizes.
bool shapesDiffer(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() != b.size()) return true;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].isKnown() && b[i].isKnown() && *a[i].value != *b[i].value) return true;
  }
  return false;
}

// An IRecurrenceLayer's next value must have its initial value's dimensions.
// `initial` is null where the body's state has another shape than the node's (Scan-8's batch).
void checkCarried(const Node& node, const Value* initial, const Value* bodyInput,
                  const Value* bodyOutput, std::vector<Finding>& findings) {
  const std::vector<Dim>* next = shapeOf(bodyOutput);
  const std::vector<Dim>* first = shapeOf(initial);
  if (first == nullptr) first = shapeOf(bodyInput);
  if (next == nullptr || first == nullptr || !shapesDiffer(*first, *next)) return;
  findings.push_back(makeFinding(
      Severity::Error, "loop-carried-shape", node,
      fmt::format("carried value '{}' starts as {} and the body gives back {} ('{}'); TensorRT "
                  "keeps a carried value's shape the same on every iteration",
                  bodyInput != nullptr ? bodyInput->name() : initial->name(), shapeText(*first),
                  shapeText(*next), bodyOutput->name()),
      "carry a tensor of fixed shape (pad to the largest size and carry the length separately), "
      "or unroll the loop"));
}

// The tensors of a loop's boundary layers (carried, iterated or output) are bool, int32, int64,
// float16, float32 or bfloat16, as at an If.
class BoundaryTypes {
 public:
  BoundaryTypes(const Node& node, std::vector<Finding>& findings)
      : node_(node), findings_(findings) {}

  /// `outer`, the node's own value for `value`, is looked at when the body leaves the type open.
  void check(const Value* value, const char* how, const Value* outer = nullptr) {
    if (value == nullptr || value->isAbsent()) return;
    DataType type = elementType(*value);
    if (type == DataType::Undefined && outer != nullptr && !outer->isAbsent()) {
      type = elementType(*outer);
    }
    if (!refusedAtIf(type) || !reported_.insert(value->name()).second) return;
    const bool quantized =
        type == DataType::Int8 || type == DataType::UInt8 || type == DataType::Float8E4M3FN;
    findings_.push_back(makeFinding(
        Severity::Error, "loop-boundary-type", node_,
        fmt::format("'{}' ({}) {}; tensors carried, iterated or output by TensorRT's loop are "
                    "bool, int32, int64, float16, float32 or bfloat16",
                    value->name(), dataTypeName(type), how),
        quantized ? "keep each QuantizeLinear -> DequantizeLinear pair inside the body, so that "
                    "what is carried or leaves the loop is float"
                  : "Cast it to a type the loop takes"));
  }

 private:
  const Node& node_;
  std::vector<Finding>& findings_;
  std::set<std::string> reported_;
};

// Whether the body needs `value` from the parser: a node reads it, or it is one of the body's
// outputs from `firstLookedUpOutput` on, which the parser looks up.
bool readInBody(const Value* value, const Graph& body, size_t firstLookedUpOutput) {
  if (value == nullptr) return false;
  if (value->hasUses()) return true;
  const std::vector<Value*>& outs = body.outputs();
  for (size_t i = firstLookedUpOutput; i < outs.size(); ++i) {
    if (outs[i] == value) return true;
  }
  return false;
}

void checkLoop(const Node& node, std::vector<Finding>& findings) {
  const Graph* body = bodyOf(node);
  if (body == nullptr) return;
  const std::vector<Value*>& bodyIn = body->inputs();
  const std::vector<Value*>& bodyOut = body->outputs();
  const Value* tripCount = node.input(0);
  const Value* cond = node.input(1);

  bool countsTrips = tripCount != nullptr;
  if (countsTrips) {
    std::optional<Tensor> m = fold::constantOf(tripCount);
    if (m && isInteger(m->dataType()) && m->numElements() == 1) {
      countsTrips = m->toInt64s()[0] < kNoTripCount;
    }
  }
  if (!countsTrips && cond == nullptr) {
    findings.push_back(makeFinding(
        Severity::Error, "loop-no-trip-limit", node,
        tripCount == nullptr
            ? std::string("it has neither a trip count nor a condition; TensorRT's loop needs "
                          "one of them to stop")
            : fmt::format("its trip count '{}' is a constant of 2^31-1 or more, which TensorRT's "
                          "parser reads as no trip count, and it has no condition; TensorRT's "
                          "loop needs one of them to stop",
                          tripCount->name()),
        "give the Loop a trip count below 2^31-1 or a condition input"));
  }

  auto scalarLimit = [&](const Value* value, const char* what, const char* id) {
    const std::vector<Dim>* shape = shapeOf(value);
    if (shape == nullptr || !notOneElement(*shape)) return;
    findings.push_back(makeFinding(
        Severity::Error, id, node,
        fmt::format("its {} '{}' has shape {}; TensorRT's parser takes a single element", what,
                    value->name(), shapeText(*shape)),
        "Reshape it to a scalar (or one element)"));
  };
  if (countsTrips) scalarLimit(tripCount, "trip count", "loop-trip-count-not-scalar");
  if (cond != nullptr) {
    scalarLimit(cond, "condition", "loop-condition-not-scalar");
    if (!bodyOut.empty()) {
      scalarLimit(bodyOut[0], "body's condition output", "loop-condition-not-scalar");
    }
  }

  // The parser binds the body's iteration number only to a trip count it keeps, and its
  // condition input only to a condition the Loop has: a body reading either without it fails.
  auto unbound = [&](size_t index, const char* what, const char* missing) {
    if (index >= bodyIn.size() || !readInBody(bodyIn[index], *body, 1)) return;
    findings.push_back(makeFinding(
        Severity::Error, "loop-unbound-body-input", node,
        fmt::format("the body reads its {} '{}' but the Loop has {}; the parser then gives the "
                    "body no value for it",
                    what, bodyIn[index]->name(), missing),
        index == 0 ? "give the Loop a trip count below 2^31-1, or count iterations in a carried "
                     "value of your own"
                   : "give the Loop a condition input (a constant true if it has none)"));
  };
  const std::string noCount = tripCount == nullptr
                                  ? std::string("no trip count")
                                  : fmt::format(
                                        "a trip count ('{}') of 2^31-1 or more, which TensorRT's "
                                        "parser drops",
                                        tripCount->name());
  if (!countsTrips) unbound(0, "iteration number", noCount.c_str());
  if (cond == nullptr) unbound(1, "condition input", "no condition input");

  const size_t carried = node.numInputs() > 2 ? node.numInputs() - 2 : 0;
  BoundaryTypes types(node, findings);
  for (size_t i = 0; i < carried; ++i) {
    const Value* initial = node.input(2 + i);
    const Value* in = 2 + i < bodyIn.size() ? bodyIn[2 + i] : nullptr;
    const Value* out = 1 + i < bodyOut.size() ? bodyOut[1 + i] : nullptr;
    if (initial != nullptr && out != nullptr) checkCarried(node, initial, in, out, findings);
    types.check(initial, "is a carried value's initial value");
    types.check(out, "is carried from one iteration to the next", node.output(i));
  }
  for (size_t i = 1 + carried; i < bodyOut.size(); ++i) {
    types.check(bodyOut[i], "is a scan output of the body", node.output(i - 1));
  }

  // Without a trip count the parser sizes scan outputs with a placeholder length.
  if (countsTrips) return;
  for (size_t i = carried; i < node.numOutputs(); ++i) {
    const Value* out = node.output(i);
    if (out == nullptr || out->isAbsent() || (!out->hasUses() && !out->isGraphOutput())) continue;
    findings.push_back(makeFinding(
        Severity::Warning, "loop-scan-output-length", node,
        fmt::format("scan output '{}' is used but the Loop has {}; the parser then gives "
                    "it a fixed length of {} along axis 0, whatever the number of iterations",
                    out->name(), noCount, kPlaceholderScanLength),
        "give the Loop a trip count below 2^31-1 (an upper bound, with the condition to stop "
        "early), or carry the results in a tensor of fixed shape"));
  }
}

void checkScan(const Node& node, int64_t opset, std::vector<Finding>& findings) {
  const Graph* body = bodyOf(node);
  if (body == nullptr) return;
  const std::vector<Value*>& bodyIn = body->inputs();
  const std::vector<Value*>& bodyOut = body->outputs();
  // Scan-8 takes sequence_lens first and scans axis 1 of batched inputs.
  const size_t offset = opset == 8 ? 1 : 0;
  if (offset == 1 && node.input(0) != nullptr) {
    findings.push_back(makeFinding(
        Severity::Error, "scan-sequence-lens", node,
        fmt::format("it has a sequence_lens input '{}'; TensorRT's parser does not take it",
                    node.input(0)->name()),
        "drop sequence_lens when every sequence has the full length; otherwise mask the steps past "
        "each sequence's end in the body"));
  }
  const int64_t scanInputs = node.attrInt("num_scan_inputs", 0);
  const int64_t inputs = static_cast<int64_t>(node.numInputs()) - static_cast<int64_t>(offset);
  const int64_t states = std::max<int64_t>(0, inputs - scanInputs);
  if (states == 0) {
    findings.push_back(makeFinding(
        Severity::Error, "scan-no-state", node,
        "it carries no state variable; TensorRT's parser fails on a Scan without one",
        "carry a dummy state variable through the body (an Identity of a small constant)"));
  }

  auto negativeAxes = [&](const char* attr, size_t count, auto rankOf) {
    const std::vector<int64_t> axes = node.attrInts(attr);
    for (size_t i = 0; i < axes.size() && i < count; ++i) {
      if (axes[i] >= 0) continue;
      const std::optional<int64_t> rank = rankOf(i);
      if (rank && *rank == kTrtMaxDims) continue;
      const int64_t read = axes[i] + kTrtMaxDims;
      findings.push_back(makeFinding(
          Severity::Error, "scan-negative-axis", node,
          rank
              ? fmt::format("{}[{}] is {}; TensorRT's parser counts a negative axis from {} "
                            "dimensions, not from the tensor's {}, and reads axis {} instead of {}",
                            attr, i, axes[i], kTrtMaxDims, *rank, read, axes[i] + *rank)
              : fmt::format("{}[{}] is {}; TensorRT's parser counts a negative axis from {} "
                            "dimensions, not from the tensor's rank, and reads axis {}",
                            attr, i, axes[i], kTrtMaxDims, read),
          "write the axis as a non-negative number (the rank plus the negative axis)"));
    }
  };
  const size_t nScanIn = static_cast<size_t>(std::max<int64_t>(0, scanInputs));
  negativeAxes("scan_input_axes", nScanIn, [&](size_t i) -> std::optional<int64_t> {
    const std::vector<Dim>* shape = shapeOf(node.input(offset + states + i));
    return shape ? std::optional<int64_t>(static_cast<int64_t>(shape->size())) : std::nullopt;
  });
  const size_t nScanOut = node.numOutputs() > static_cast<size_t>(states)
                              ? node.numOutputs() - static_cast<size_t>(states)
                              : 0;
  negativeAxes("scan_output_axes", nScanOut, [&](size_t i) -> std::optional<int64_t> {
    const size_t index = static_cast<size_t>(states) + i;
    if (const std::vector<Dim>* shape = shapeOf(node.output(index))) {
      return static_cast<int64_t>(shape->size());
    }
    // Each iteration's slice lacks the scanned axis.
    const std::vector<Dim>* slice = shapeOf(index < bodyOut.size() ? bodyOut[index] : nullptr);
    return slice ? std::optional<int64_t>(static_cast<int64_t>(slice->size()) + 1) : std::nullopt;
  });

  BoundaryTypes types(node, findings);
  for (size_t i = 0; i < static_cast<size_t>(states); ++i) {
    const Value* initial = node.input(offset + i);
    const Value* in = i < bodyIn.size() ? bodyIn[i] : nullptr;
    const Value* out = i < bodyOut.size() ? bodyOut[i] : nullptr;
    if (out != nullptr) checkCarried(node, offset == 0 ? initial : nullptr, in, out, findings);
    types.check(initial, "is a state variable's initial value");
    types.check(out, "is carried from one iteration to the next", node.output(i));
  }
  for (size_t i = 0; i < nScanIn; ++i) {
    types.check(node.input(offset + states + i), "is scanned by the loop");
  }
  for (size_t i = states; i < bodyOut.size(); ++i) {
    types.check(bodyOut[i], "is a scan output of the body", node.output(i));
  }
}

}  // namespace

void checkControlFlow(const Model& model, std::vector<Finding>& findings) {
  const int64_t opset = model.opsetVersion().value_or(0);
  model.graph().walk([&](const Node* node) {
    if (node->is("If")) {
      checkIf(*node, findings);
    } else if (node->is("Loop")) {
      checkLoop(*node, findings);
    } else if (node->is("Scan")) {
      checkScan(*node, opset, findings);
    }
  });
}

}  // namespace qopt::checktrt
