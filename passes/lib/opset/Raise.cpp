// Raising the opset: where an op changed between two versions, the node is rewritten so that it
// computes exactly what it computed before.
#include <fmt/format.h>

#include "NodeRewriter.h"
#include "qopt/constants/ConstantValue.h"

namespace qopt::opset {
namespace {

// The Reduce ops whose axes moved from an attribute to an input at 18 (ReduceSum moved at 13).
bool isReduce18(const Node& node) {
  static constexpr std::string_view kOps[] = {"ReduceMean",   "ReduceMax",       "ReduceMin",
                                              "ReduceProd",   "ReduceL1",        "ReduceL2",
                                              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  for (std::string_view op : kOps) {
    if (node.opType() == op) return true;
  }
  return false;
}

// The channel count of GroupNormalization's input, from its type or nothing.
std::optional<int64_t> channelsOf(const Node& node) {
  const Value* x = node.input(0);
  if (!rankOf(x) || *rankOf(x) < 2) return std::nullopt;
  return (*x->type().shape)[1].value;
}

}  // namespace

std::optional<std::string> Raiser::refusal(const Node& node) const {
  const std::string& op = node.opType();
  if (op == "BatchNormalization" && crosses(9) && node.attrInt("spatial", 1) == 0) {
    return "spatial=0 (statistics per element) has no equivalent from opset 9 on";
  }
  if (op == "Scan" && crosses(9)) return "Scan's batch axis was removed at opset 9";
  if (op == "Upsample" && crosses(10)) {
    const std::string mode = node.attrString("mode", "nearest");
    if (mode != "nearest" && mode != "linear") return fmt::format("Upsample mode '{}'", mode);
  }
  if (op == "Resize" && crosses(13) &&
      node.attrString("coordinate_transformation_mode") == "tf_half_pixel_for_nn") {
    return "coordinate_transformation_mode tf_half_pixel_for_nn was removed at opset 13";
  }
  if (op == "GroupNormalization" && crosses(21)) {
    if (!channelsOf(node)) {
      return "GroupNormalization's scale and bias become per-channel at opset 21, and the "
             "input's channel count is unknown";
    }
    const int64_t groups = node.attrInt("num_groups", 1);
    if (groups <= 0 || *channelsOf(node) % groups != 0) {
      return fmt::format("num_groups {} does not divide the {} channels", groups,
                         *channelsOf(node));
    }
    for (size_t i : {size_t{1}, size_t{2}}) {
      std::optional<std::vector<double>> v = constantDoubles(node, i);
      if (!v || v->size() != static_cast<size_t>(groups)) {
        return "GroupNormalization's per-group scale and bias must be constants of num_groups "
               "elements to become per-channel at opset 21";
      }
    }
  }
  return std::nullopt;
}

void Raiser::convert(Node& node) {
  const std::string op = node.opType();
  if (op == "BatchNormalization" && crosses(9) && node.removeAttr("spatial")) {
    note(node, "attribute 'spatial' (1) dropped");
  }
  if (op == "Upsample" && crosses(10)) upsampleToResize(node);
  if (node.opType() == "Slice" && crosses(10)) {
    // starts, ends and axes become inputs 1..3 (axes only when given).
    const bool hadAxes = node.hasAttr("axes");
    attributeToInput(node, "starts", 1);
    attributeToInput(node, "ends", 2);
    if (hadAxes) attributeToInput(node, "axes", 3);
  }
  if (op == "TopK" && crosses(10)) {
    Value* k = int64s(node, baseName(node, "k"), {node.attrInt("k", 1)});
    node.removeAttr("k");
    node.insertInput(1, k);
    note(node, "attribute 'k' moved to input 1");
  }
  if (op == "Scatter" && crosses(11)) {
    node.setOpType("ScatterElements");  // the same op, renamed when Scatter was deprecated
    note(node, "Scatter renamed ScatterElements");
  }
  if (op == "Clip" && crosses(11)) clipBoundsToInputs(node);
  if (op == "Pad" && crosses(11)) padToInputs(node);
  if (node.opType() == "Resize" && crosses(11) && from_ >= 10) resize10To11(node);
  if (op == "Dropout" && crosses(12) && node.hasAttr("ratio")) {
    Value* ratio =
        scalar(node, baseName(node, "ratio"), DataType::Float, node.attrFloat("ratio", 0.5f));
    node.removeAttr("ratio");
    node.addInput(ratio);
    note(node, "attribute 'ratio' moved to input 1");
  }
  if (crosses(13)) {
    if (op == "Split") attributeToInput(node, "split", 1);
    if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") {
      attributeToInput(node, "axes", 1);
    }
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") softmaxTo13(node);
  }
  if (crosses(18) && isReduce18(node)) attributeToInput(node, "axes", 1);
  if (op == "Split" && crosses(18) && !hasInput(node, 1)) {
    // From 18 an even split names its count; before, the output count said it.
    node.setAttr(Attribute::makeInt("num_outputs", static_cast<int64_t>(node.numOutputs())));
    note(node, "equal split: attribute 'num_outputs' added");
  }
  if (op == "GridSample" && crosses(20)) {
    const std::string mode = node.attrString("mode", "bilinear");
    const std::string renamed = mode == "bilinear" ? "linear" : mode == "bicubic" ? "cubic" : mode;
    node.setAttr(Attribute::makeString("mode", renamed));
    if (renamed != mode) note(node, fmt::format("mode '{}' renamed '{}'", mode, renamed));
  }
  if (op == "GroupNormalization" && crosses(21)) groupNormTo21(node);
}

// Upsample (nearest: asymmetric coordinates, floor) becomes Resize-10, which the step to 11
// then gives the same coordinate rules explicitly.
void Raiser::upsampleToResize(Node& node) {
  if (node.hasAttr("scales")) {  // Upsample-7 held the scales as an attribute
    std::vector<float> scales = node.attrFloats("scales");
    std::vector<double> values(scales.begin(), scales.end());
    Value* v = constant(
        node, baseName(node, "scales"),
        Tensor::fromDoubles(DataType::Float, {static_cast<int64_t>(values.size())}, values));
    node.removeAttr("scales");
    node.addInput(v);
  }
  node.setOpType("Resize");
  note(node, "Upsample replaced by Resize");
  if (to_ >= 11) resize10To11(node);
}

// Resize-10 computed with asymmetric coordinates and, for nearest, rounded down: Resize-11
// takes an roi input and says both explicitly.
void Raiser::resize10To11(Node& node) {
  node.insertInput(1, nullptr);
  node.setAttr(Attribute::makeString("coordinate_transformation_mode", "asymmetric"));
  if (node.attrString("mode", "nearest") == "nearest") {
    node.setAttr(Attribute::makeString("nearest_mode", "floor"));
  }
  note(node, "roi input added; asymmetric coordinates (and floor for nearest) made explicit");
}

void Raiser::clipBoundsToInputs(Node& node) {
  const DataType type = constantTypeFor(node.input(0));
  const bool hasMin = node.hasAttr("min");
  const bool hasMax = node.hasAttr("max");
  Value* min =
      hasMin ? scalar(node, baseName(node, "min"), type, node.attrFloat("min", 0)) : nullptr;
  Value* max =
      hasMax ? scalar(node, baseName(node, "max"), type, node.attrFloat("max", 0)) : nullptr;
  node.removeAttr("min");
  node.removeAttr("max");
  if (hasMin || hasMax) node.addInput(min);
  if (hasMax) node.addInput(max);
  note(node, "attributes 'min'/'max' moved to inputs");
}

void Raiser::padToInputs(Node& node) {
  const DataType type = constantTypeFor(node.input(0));
  Value* pads = int64s(node, baseName(node, "pads"), node.attrInts("pads"));
  const bool hasValue = node.hasAttr("value");
  Value* value =
      hasValue ? scalar(node, baseName(node, "value"), type, node.attrFloat("value", 0)) : nullptr;
  node.removeAttr("pads");
  node.removeAttr("value");
  node.addInput(pads);
  if (hasValue) node.addInput(value);
  note(node, "attributes 'pads'/'value' moved to inputs");
}

// Before 13 these ops worked on the input coerced to 2-D at `axis` ([d0*..*d(axis-1),
// d(axis)*..*dn]); from 13 on one axis. Over the last axis the two agree; otherwise the node
// runs on Flatten(x, axis) and the result is reshaped back, which is the old meaning exactly.
void Raiser::softmaxTo13(Node& node) {
  Value* x = node.input(0);
  int64_t axis = node.attrInt("axis", 1);
  if (std::optional<int64_t> rank = rankOf(x)) {
    if (axis < 0) axis += *rank;
    if (axis == *rank - 1) {
      node.setAttr(Attribute::makeInt("axis", axis));
      note(node, fmt::format("axis {} is the last of rank {}: meaning unchanged", axis, *rank));
      return;
    }
  }
  Graph& graph = *node.graph();
  Node* flatten = graph.createNode("Flatten", {x}, 1, &node);
  flatten->setName(model_.uniqueNodeName(baseName(node, "flatten")));
  flatten->output(0)->setName(model_.uniqueValueName(flatten->name()));
  flatten->setAttr(Attribute::makeInt("axis", axis));
  Node* shape = graph.createNode("Shape", {x}, 1, &node);
  shape->setName(model_.uniqueNodeName(baseName(node, "shape")));
  shape->output(0)->setName(model_.uniqueValueName(shape->name()));
  Node* inner = graph.createNode(node.opType(), {flatten->output(0)}, 1, &node);
  inner->setName(model_.uniqueNodeName(baseName(node, "2d")));
  inner->output(0)->setName(model_.uniqueValueName(inner->name()));
  inner->setAttr(Attribute::makeInt("axis", 1));
  // Both are 2-D whatever x's shape: said in their types, so that later passes know the rank.
  ValueType matrix = ValueType::tensor(constantTypeFor(x));
  matrix.shape = std::vector<Dim>(2);
  for (Value* v : {flatten->output(0), inner->output(0)}) {
    v->setType(matrix);
    v->inValueInfo = true;
  }
  // The original node becomes the Reshape: its output keeps its name, type and readers.
  const std::string was = node.opType();
  node.removeAllInputs();
  node.addInput(inner->output(0));
  node.addInput(shape->output(0));
  node.removeAttr("axis");
  node.setOpType("Reshape");
  rewrites.emplace_back(
      fmt::format("node '{}' ({})", node.name().empty() ? node.output(0)->name() : node.name(),
                  was),
      fmt::format("runs on Flatten(axis={}) and is reshaped back: the coerced 2-D meaning of "
                  "opsets before 13",
                  axis));
}

// GroupNormalization-18 scaled and shifted per group, 21 per channel: each group's value is
// repeated over its channels.
void Raiser::groupNormTo21(Node& node) {
  const int64_t channels = *channelsOf(node);
  const int64_t groups = node.attrInt("num_groups", 1);
  for (size_t i : {size_t{1}, size_t{2}}) {
    std::vector<double> perGroup = *constantDoubles(node, i);
    std::vector<double> perChannel;
    perChannel.reserve(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      perChannel.push_back(perGroup[static_cast<size_t>(c / (channels / groups))]);
    }
    Value* old = node.input(i);
    Value* v = constant(node, baseName(node, i == 1 ? "scale" : "bias"),
                        Tensor::fromDoubles(constantTypeFor(old), {channels}, perChannel));
    node.setInput(i, v);
    fold::eraseIfUnused(old);
  }
  note(node, "per-group scale and bias repeated per channel");
}

}  // namespace qopt::opset
