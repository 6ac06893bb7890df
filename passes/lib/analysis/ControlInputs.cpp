#include "qopt/analysis/ControlInputs.h"

#include <initializer_list>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

namespace qopt::analysis {

namespace {

struct SteeringOperand {
  std::string_view op;
  std::initializer_list<size_t> inputs;
  std::string_view what;
};

// The operands whose values decide control flow or a shape, an axis or a count.
constexpr SteeringOperand kSteering[] = {
    {"If", {0}, "the condition"},
    {"Loop", {0}, "the trip count"},
    {"Loop", {1}, "the condition"},
    {"Reshape", {1}, "the shape"},
    {"Expand", {1}, "the shape"},
    {"Tile", {1}, "the repeats"},
    {"ConstantOfShape", {0}, "the shape"},
    {"Range", {0, 1, 2}, "the range"},
    {"Slice", {1, 2, 3, 4}, "the slice bounds"},
    {"Pad", {1, 3}, "the pads"},
    {"Resize", {1, 2, 3}, "the output size"},
    {"Upsample", {1}, "the scales"},
    {"TopK", {1}, "k"},
    {"OneHot", {1}, "the depth"},
    {"Squeeze", {1}, "the axes"},
    {"Unsqueeze", {1}, "the axes"},
    {"Split", {1}, "the split sizes"},
    {"CenterCropPad", {1}, "the shape"},
    {"ReduceSum", {1}, "the axes"},
    {"ReduceMean", {1}, "the axes"},
    {"ReduceMax", {1}, "the axes"},
    {"ReduceMin", {1}, "the axes"},
    {"ReduceProd", {1}, "the axes"},
    {"NonMaxSuppression", {2, 3, 4}, "the box limits"},
};

// Whether the values of `value` reach the operand: walks back through producers, stopping at
// Shape and Size (only the shape reaches past them), and collects the graph inputs met.
void collectInputs(const Value* value, std::unordered_set<const Value*>& seen,
                   std::vector<const Value*>& inputs) {
  std::vector<const Value*> stack = {value};
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (v == nullptr || !seen.insert(v).second) continue;
    if (v->isGraphInput()) {
      inputs.push_back(v);
      continue;
    }
    const Node* producer = v->producer();
    if (producer == nullptr || producer->is("Shape") || producer->is("Size")) continue;
    for (const Value* in : producer->inputs()) stack.push_back(in);
  }
}

bool steersAsInput(const Value& input) {
  const ValueType& type = input.type();
  if (!type.isTensor()) return true;
  if (!isFloatingPoint(type.elemType)) return true;
  return type.shape && type.shape->empty();
}

}  // namespace

std::map<std::string, std::string> controlInputs(const Graph& graph) {
  std::unordered_set<const Value*> mainInputs;
  for (const Value* input : graph.inputs()) {
    if (!input->isInitializer()) mainInputs.insert(input);
  }
  std::map<std::string, std::string> out;
  for (const Node* node : graph.allNodes()) {
    for (const SteeringOperand& s : kSteering) {
      if (!node->is(s.op)) continue;
      for (size_t i : s.inputs) {
        if (i >= node->numInputs() || node->input(i) == nullptr) continue;
        std::unordered_set<const Value*> seen;
        std::vector<const Value*> reached;
        collectInputs(node->input(i), seen, reached);
        for (const Value* input : reached) {
          if (!mainInputs.count(input) || !steersAsInput(*input)) continue;
          out.emplace(input->name(), fmt::format("{} of {}", s.what, node->describe()));
        }
      }
    }
  }
  return out;
}

}  // namespace qopt::analysis
