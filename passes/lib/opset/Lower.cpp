// Lowering the opset: inputs that older versions held as attributes must be constants and move
// back; attributes that older versions lack must hold their defaults and are dropped; ops that
// older opsets lack are refused unless an older op computes the same (ScatterElements is
// Scatter, Resize is Upsample under conditions). Anything else is refused, naming the node.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "NodeRewriter.h"
#include "qopt/constants/ConstantValue.h"

namespace qopt::opset {
namespace {

bool isReduce(const std::string& op) {
  return op.rfind("Reduce", 0) == 0;
}

bool isSoftmaxFamily(const std::string& op) {
  return op == "Softmax" || op == "LogSoftmax" || op == "Hardmax";
}

// Attributes added to an op after opset 7 (or, with `values`, given new values), with the
// values that mean "as before". Lowering below `version` refuses any other value, and drops a
// new attribute that holds its neutral value.
struct NewAttribute {
  std::string_view op;  // "Reduce*" for every Reduce op but ReduceSum, "*RNN" for LSTM/GRU/RNN
  std::string_view name;
  int64_t version;
  std::string_view neutral;  // the attribute's value as text: "0", "none", "1*" (all ones)
  bool values = false;       // the attribute existed before `version`; only values were added
};

constexpr NewAttribute kNewAttributes[] = {
    {"MaxPool", "ceil_mode", 10, "0"},
    {"MaxPool", "dilations", 10, "1*"},
    {"AveragePool", "ceil_mode", 10, "0"},
    {"AveragePool", "dilations", 19, "1*"},
    {"TopK", "largest", 11, "1"},
    {"TopK", "sorted", 11, "1"},
    {"DepthToSpace", "mode", 11, "DCR"},
    {"ArgMax", "select_last_index", 12, "0"},
    {"ArgMin", "select_last_index", 12, "0"},
    {"ReduceSum", "noop_with_empty_axes", 13, "0"},
    {"Reshape", "allowzero", 14, "0"},
    {"BatchNormalization", "training_mode", 14, "0"},
    {"*RNN", "layout", 14, "0"},
    {"Shape", "start", 15, "0"},
    {"Shape", "end", 15, "\x01"},  // no neutral value: any 'end' is refused
    {"ScatterElements", "reduction", 16, "none"},
    {"ScatterND", "reduction", 16, "none"},
    {"Reduce*", "noop_with_empty_axes", 18, "0"},
    {"Resize", "antialias", 18, "0"},
    {"Resize", "keep_aspect_ratio_policy", 18, "stretch"},
    {"Resize", "axes", 18, "\x01"},
    {"Pad", "mode", 19, "constant|reflect|edge", true},  // 'wrap' came at 19
    {"QuantizeLinear", "saturate", 19, "1"},
    {"Cast", "saturate", 19, "1"},
    {"QuantizeLinear", "block_size", 21, "0"},
    {"DequantizeLinear", "block_size", 21, "0"},
    {"QuantizeLinear", "output_dtype", 21, "0"},
};

bool matchesOp(std::string_view pattern, const std::string& op) {
  if (pattern == "Reduce*") return isReduce(op) && op != "ReduceSum";
  if (pattern == "*RNN") return op == "LSTM" || op == "GRU" || op == "RNN";
  return pattern == op;
}

std::string attributeText(const Attribute& a) {
  switch (a.kind) {
    case AttrKind::Int:
      return std::to_string(a.i);
    case AttrKind::String:
      return a.s;
    case AttrKind::Ints:
      return fmt::format("{}", fmt::join(a.ints, ","));
    default:
      return "?";
  }
}

bool isNeutral(const Attribute& a, std::string_view neutral) {
  if (neutral == "1*") {
    return a.kind == AttrKind::Ints &&
           std::all_of(a.ints.begin(), a.ints.end(), [](int64_t v) { return v == 1; });
  }
  const std::string text = attributeText(a);
  size_t start = 0;
  while (start <= neutral.size()) {  // '|' separates values that all mean "as before"
    const size_t end = std::min(neutral.find('|', start), neutral.size());
    if (neutral.substr(start, end - start) == text) return true;
    start = end + 1;
  }
  return false;
}

// The element types that appeared after opset 7, with their opset.
std::optional<int64_t> typeIntroducedIn(DataType type) {
  switch (type) {
    case DataType::BFloat16:
      return 13;
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
      return 19;
    case DataType::UInt4:
    case DataType::Int4:
      return 21;
    case DataType::Float4E2M1:
      return 23;
    default:
      return std::nullopt;
  }
}

// The number of elements of a value, from its constant or its type; nullopt when unknown.
std::optional<int64_t> elementCount(const Value* v) {
  if (v == nullptr) return std::nullopt;
  if (std::optional<Tensor> t = fold::constantOf(v)) {
    return static_cast<int64_t>(t->numElements());
  }
  if (!rankOf(v)) return std::nullopt;
  int64_t n = 1;
  for (const Dim& d : *v->type().shape) {
    if (!d.value) return std::nullopt;
    n *= *d.value;
  }
  return n;
}

// The axes that name dimensions, from attributes or (at 13/18 and later) constant inputs.
std::vector<int64_t> axesOf(const Node& node) {
  std::vector<int64_t> axes;
  if (node.hasAttr("axis")) axes.push_back(node.attrInt("axis", 0));
  for (int64_t a : node.attrInts("axes")) axes.push_back(a);
  const std::string& op = node.opType();
  const size_t input = op == "Slice"                                            ? 3
                       : (op == "Squeeze" || op == "Unsqueeze" || isReduce(op)) ? 1
                                                                                : 0;
  if (input > 0 && node.numInputs() > input && node.input(input) != nullptr) {
    if (std::optional<Tensor> t = fold::constantOf(node.input(input))) {
      for (int64_t a : t->toInt64s()) axes.push_back(a);
    }
  }
  return axes;
}

// The rank negative axes count from: the output's for Unsqueeze, the first input's otherwise.
std::optional<int64_t> axesRank(const Node& node) {
  std::optional<int64_t> rank = rankOf(node.input(0));
  if (rank && node.opType() == "Unsqueeze") {
    return *rank + static_cast<int64_t>(axesOf(node).size());
  }
  return rank;
}

}  // namespace

std::optional<std::string> Lowerer::refusal(const Node& node) const {
  const std::string& op = node.opType();
  if (std::optional<int64_t> since = introducedIn(op); since && *since > to_) {
    const bool replaceable = (op == "ScatterElements" && to_ >= 9) || op == "Resize";
    if (!replaceable) return fmt::format("{} first appears at opset {}", op, *since);
  }
  if (std::optional<std::string> why = newAttributeRefusal(node)) return why;
  if (std::optional<std::string> why = inputsRefusal(node)) return why;
  if (op == "Resize") return resizeRefusal(node);
  return std::nullopt;
}

std::optional<std::string> Lowerer::newAttributeRefusal(const Node& node) const {
  for (const NewAttribute& rule : kNewAttributes) {
    if (!crosses(rule.version) || !matchesOp(rule.op, node.opType())) continue;
    const Attribute* a = node.findAttr(rule.name);
    if (a != nullptr && !isNeutral(*a, rule.neutral)) {
      return fmt::format("attribute {}={} needs opset {}", rule.name, attributeText(*a),
                         rule.version);
    }
  }
  if (node.opType() == "Cast" || node.opType() == "QuantizeLinear" ||
      node.opType() == "DequantizeLinear") {
    DataType type = node.opType() == "Cast" ? static_cast<DataType>(node.attrInt("to", 0))
                                            : elementTypeOf(node.input(2));
    if (node.opType() == "DequantizeLinear" && type == DataType::Undefined) {
      type = elementTypeOf(node.input(0));
    }
    if (std::optional<int64_t> since = typeIntroducedIn(type); since && *since > to_) {
      return fmt::format("type {} needs opset {}", dataTypeName(type), *since);
    }
  }
  return std::nullopt;
}

std::optional<std::string> Lowerer::inputsRefusal(const Node& node) const {
  const std::string& op = node.opType();
  auto needConstant = [&](size_t index, std::string_view what,
                          int64_t version) -> std::optional<std::string> {
    if (!hasInput(node, index) || fold::isConstantValue(node.input(index))) return std::nullopt;
    return fmt::format(
        "{} (input {}) is computed, and opsets before {} take it as a constant "
        "attribute",
        what, index, version);
  };
  std::optional<std::string> why;
  if (crosses(13) && (op == "Split" || op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum")) {
    why = needConstant(1, op == "Split" ? "split" : "axes", 13);
  }
  if (!why && crosses(18) && isReduce(op) && op != "ReduceSum") why = needConstant(1, "axes", 18);
  if (!why && isReduce(op) && crosses(op == "ReduceSum" ? 13 : 18) && !hasInput(node, 1) &&
      node.attrInt("noop_with_empty_axes", 0) != 0) {
    why = "noop_with_empty_axes=1 without axes has no older equivalent";
  }
  if (!why && crosses(10) && op == "Slice") {
    for (size_t i = 1; i <= 3 && !why; ++i) why = needConstant(i, "starts/ends/axes", 10);
    if (!why && hasInput(node, 4)) {
      std::optional<std::vector<int64_t>> steps = constantInts(node, 4);
      if (!steps || std::any_of(steps->begin(), steps->end(), [](int64_t s) { return s != 1; })) {
        why = "Slice steps other than 1 need opset 10";
      }
    }
  }
  if (!why && crosses(10) && op == "TopK") why = needConstant(1, "k", 10);
  if (!why && crosses(11) && op == "Clip") {
    why = needConstant(1, "min", 11);
    if (!why) why = needConstant(2, "max", 11);
    const DataType t = elementTypeOf(node.input(0));
    if (!why && t != DataType::Float && t != DataType::Float16 && t != DataType::Double &&
        t != DataType::Undefined) {
      why = fmt::format("Clip on {} needs opset 11", dataTypeName(t));
    }
  }
  if (!why && crosses(11) && op == "Pad") {
    why = needConstant(1, "pads", 11);
    if (!why) why = needConstant(2, "constant_value", 11);
  }
  if (!why && crosses(18) && op == "Pad" && hasInput(node, 3)) {
    why = needConstant(3, "axes", 18);
    if (!why && !rankOf(node.input(0))) why = "Pad axes need the input's rank, which is unknown";
  }
  if (!why && crosses(12) && op == "Dropout") {
    why = needConstant(1, "ratio", 12);
    if (!why && hasInput(node, 2)) {
      std::optional<std::vector<int64_t>> training = constantInts(node, 2);
      if (!training || (!training->empty() && (*training)[0] != 0)) {
        why = "Dropout in training mode needs opset 12";
      }
    }
  }
  if (!why && crosses(13) && (op == "QuantizeLinear" || op == "DequantizeLinear")) {
    std::optional<int64_t> n = elementCount(node.input(1));
    if (!n || *n != 1) why = "per-axis scales need opset 13";
  }
  if (!why && crosses(19) && (op == "QuantizeLinear" || op == "DequantizeLinear")) {
    const DataType scale = elementTypeOf(node.input(1));
    if (scale != DataType::Float && scale != DataType::Undefined) {
      why = fmt::format("{} scales need opset 19", dataTypeName(scale));
    }
  }
  if (!why && crosses(13) && isSoftmaxFamily(op) && !rankOf(node.input(0)) &&
      !(node.attrInt("axis", -1) == -1 && to_ >= 11)) {
    why = "the input's rank is unknown, and opsets before 13 coerce the input to 2-D at the axis";
  }
  if (!why && crosses(18) && op == "Split" && node.hasAttr("num_outputs")) {
    std::optional<int64_t> rank = rankOf(node.input(0));
    int64_t axis = node.attrInt("axis", 0);
    if (rank && axis < 0) axis += *rank;
    if (!rank || axis < 0 || axis >= *rank || !(*node.input(0)->type().shape)[axis].value) {
      why = "Split num_outputs needs the split dimension's size, which is unknown";
    }
  }
  if (!why && crosses(20) && op == "GridSample") {
    std::optional<int64_t> rank = rankOf(node.input(0));
    if (!rank || *rank != 4) why = "GridSample before opset 20 takes 4-D inputs only";
  }
  if (!why && crosses(21) && op == "GroupNormalization") {
    const int64_t groups = node.attrInt("num_groups", 1);
    for (size_t i : {size_t{1}, size_t{2}}) {
      std::optional<std::vector<double>> v = constantDoubles(node, i);
      if (!v || groups <= 0 || v->size() % static_cast<size_t>(groups) != 0) {
        why = "GroupNormalization's per-channel scale and bias must be constants";
        break;
      }
      const size_t per = v->size() / static_cast<size_t>(groups);
      for (size_t c = 0; c < v->size() && !why; ++c) {
        if ((*v)[c] != (*v)[c - c % per]) {
          why = "per-channel scale or bias that differs inside a group needs opset 21";
        }
      }
      if (why) break;
    }
  }
  return why;
}

std::optional<std::string> Lowerer::resizeRefusal(const Node& node) const {
  if (crosses(19) && node.attrString("coordinate_transformation_mode") == "half_pixel_symmetric") {
    return "coordinate_transformation_mode half_pixel_symmetric needs opset 19";
  }
  const size_t scalesInput = from_ >= 11 ? 2 : 1;
  if (crosses(11)) {
    const std::string mode = node.attrString("mode", "nearest");
    if (mode != "nearest" && mode != "linear") return fmt::format("mode '{}' needs opset 11", mode);
    const std::string coordinates = node.attrString("coordinate_transformation_mode", "half_pixel");
    if (coordinates != "asymmetric") {
      return fmt::format(
          "coordinate_transformation_mode '{}' needs opset 11 (older Resize and "
          "Upsample use asymmetric coordinates)",
          coordinates);
    }
    if (mode == "nearest" && node.attrString("nearest_mode", "round_prefer_floor") != "floor") {
      return "nearest_mode other than floor needs opset 11";
    }
    if (node.attrInt("exclude_outside", 0) != 0) return "exclude_outside=1 needs opset 11";
    std::optional<std::vector<double>> scales = constantDoubles(node, scalesInput);
    if (hasInput(node, 3) || !hasInput(node, scalesInput) || (scales && scales->empty())) {
      return "a Resize given output sizes needs opset 11";
    }
  }
  if (crosses(10) && to_ < 9 && !constantDoubles(node, scalesInput)) {
    return "Upsample before opset 9 takes constant scales";
  }
  return std::nullopt;
}

void Lowerer::convert(Node& node) {
  const std::string op = node.opType();
  dropDefaultAttributes(node);
  if (op == "GroupNormalization" && crosses(21)) groupNormBelow21(node);
  if (op == "GridSample" && crosses(20)) {
    const std::string mode = node.attrString("mode", "linear");
    const std::string renamed = mode == "linear" ? "bilinear" : mode == "cubic" ? "bicubic" : mode;
    node.setAttr(Attribute::makeString("mode", renamed));
    if (renamed != mode) note(node, fmt::format("mode '{}' renamed '{}'", mode, renamed));
  }
  if (crosses(18)) {
    if (isReduce(op) && op != "ReduceSum") inputToAttribute(node, 1, "axes");
    if (op == "Split" && node.hasAttr("num_outputs")) splitBelow18(node);
  }
  if (op == "Pad" && (crosses(18) || crosses(11))) padDown(node);
  if (crosses(13)) {
    if (op == "Split") inputToAttribute(node, 1, "split");
    if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") {
      inputToAttribute(node, 1, "axes");
    }
    if (isSoftmaxFamily(op)) softmaxBelow13(node);
    if ((op == "QuantizeLinear" || op == "DequantizeLinear") && node.removeAttr("axis")) {
      note(node, "attribute 'axis' dropped: the scale is one element");
    }
  }
  if (crosses(12) && op == "Dropout") {
    if (std::optional<std::vector<double>> ratio = constantDoubles(node, 1)) {
      node.setAttr(Attribute::makeFloat("ratio", static_cast<float>((*ratio)[0])));
    }
    dropInput(node, 2);
    dropInput(node, 1);
    note(node, "input 'ratio' moved to an attribute");
  }
  if (crosses(11)) {
    if (op == "Clip") {
      if (std::optional<std::vector<double>> min = constantDoubles(node, 1)) {
        node.setAttr(Attribute::makeFloat("min", static_cast<float>((*min)[0])));
      }
      if (std::optional<std::vector<double>> max = constantDoubles(node, 2)) {
        node.setAttr(Attribute::makeFloat("max", static_cast<float>((*max)[0])));
      }
      dropInput(node, 2);
      dropInput(node, 1);
      note(node, "inputs 'min'/'max' moved to attributes");
    }
    if (op == "Gemm" && !hasInput(node, 2)) {
      node.setInput(2, scalar(node, baseName(node, "C"), constantTypeFor(node.input(0)), 0.0));
      note(node, "zero C added: C is optional only from opset 11");
    }
    if (op == "ScatterElements") {
      node.setOpType("Scatter");
      note(node, "ScatterElements renamed Scatter");
    }
    normalizeNegativeAxes(node);
  }
  if (op == "Resize") resizeDown(node);
  if (crosses(10)) {
    if (op == "Slice") {
      inputToAttribute(node, 3, "axes");
      inputToAttribute(node, 2, "ends");
      inputToAttribute(node, 1, "starts");
      dropInput(node, 4);
    }
    if (op == "TopK") {
      if (std::optional<std::vector<int64_t>> k = constantInts(node, 1)) {
        node.setAttr(Attribute::makeInt("k", (*k)[0]));
      }
      dropInput(node, 1);
      note(node, "input 'k' moved to an attribute");
    }
  }
}

void Lowerer::dropDefaultAttributes(Node& node) {
  for (const NewAttribute& rule : kNewAttributes) {
    if (!rule.values && crosses(rule.version) && matchesOp(rule.op, node.opType()) &&
        node.removeAttr(rule.name)) {
      note(node, fmt::format("attribute '{}' (its default) dropped", rule.name));
    }
  }
}

// Opset 11 defined negative axes; older definitions did not say, and runtimes read them as 11
// does. With the rank known they are made non-negative; otherwise they stay, with a remark.
void Lowerer::normalizeNegativeAxes(Node& node) {
  std::optional<int64_t> rank = axesRank(node);
  if (!rank) {
    const std::vector<int64_t> axes = axesOf(node);
    if (std::any_of(axes.begin(), axes.end(), [](int64_t a) { return a < 0; })) {
      note(node, "negative axes kept: the input's rank is unknown");
    }
    return;
  }
  bool changed = false;
  if (const Attribute* a = node.findAttr("axis"); a != nullptr && a->i < 0) {
    node.setAttr(Attribute::makeInt("axis", a->i + *rank));
    changed = true;
  }
  if (node.hasAttr("axes")) {
    std::vector<int64_t> axes = node.attrInts("axes");
    for (int64_t& a : axes) {
      if (a < 0) {
        a += *rank;
        changed = true;
      }
    }
    node.setAttr(Attribute::makeInts("axes", std::move(axes)));
  }
  if (changed) note(node, fmt::format("negative axes counted from rank {}", *rank));
}

// From 13 these ops work on one axis; before, on the input coerced to 2-D at `axis`. Over the
// last axis the two agree; any other axis is moved last by a Transpose and back.
void Lowerer::softmaxBelow13(Node& node) {
  int64_t axis = node.attrInt("axis", -1);  // 13's default; before 13 it was 1
  std::optional<int64_t> known = rankOf(node.input(0));
  if (!known) {  // axis -1 at 11 or 12 (refusal() checked): the coerced view is the same
    node.setAttr(Attribute::makeInt("axis", -1));
    note(node, "axis -1: the coerced 2-D view is the same");
    return;
  }
  const int64_t rank = *known;
  if (axis < 0) axis += rank;
  node.setAttr(Attribute::makeInt("axis", rank - 1));
  if (axis == rank - 1) {
    note(node, fmt::format("axis {} is the last of rank {}: meaning unchanged", axis, rank));
    return;
  }
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + axis);
  perm.push_back(axis);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  Graph& graph = *node.graph();
  Node* before = graph.createNode("Transpose", {node.input(0)}, 1, &node);
  before->setName(model_.uniqueNodeName(baseName(node, "to_last")));
  before->setAttr(Attribute::makeInts("perm", perm));
  before->output(0)->setName(model_.uniqueValueName(before->name()));
  Node* after = graph.createNode("Transpose", {node.output(0)}, 1, node.next());
  after->setName(model_.uniqueNodeName(baseName(node, "from_last")));
  after->setAttr(Attribute::makeInts("perm", inverse));
  // The node's output keeps its name, type and readers: they move to the Transpose after it.
  Value* out = node.output(0);
  Value* moved = after->output(0);
  const std::string name = out->name();
  ValueType type = out->type();
  const std::string subject = node.describe();
  out->replaceAllUsesExcept(moved, after);  // a graph output's name moves with it
  out->setName(model_.uniqueValueName(name + "_last"));
  if (moved->name() != name) moved->setName(name);
  moved->setType(type);
  if (type.shape) {
    std::vector<Dim> dims;
    for (int64_t p : perm) dims.push_back((*type.shape)[static_cast<size_t>(p)]);
    type.shape = std::move(dims);
  }
  for (Value* v : {out, before->output(0)}) {
    v->setType(type);
    v->inValueInfo = type.isTensor();
  }
  node.setInput(0, before->output(0));
  rewrites.emplace_back(
      subject,
      fmt::format("axis {} moved last by Transposes: opsets before 13 coerce to 2-D", axis));
}

void Lowerer::splitBelow18(Node& node) {
  const int64_t rank = *rankOf(node.input(0));
  int64_t axis = node.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  const int64_t size = *(*node.input(0)->type().shape)[static_cast<size_t>(axis)].value;
  const int64_t parts = node.attrInt("num_outputs", 1);
  node.removeAttr("num_outputs");
  if (size % parts == 0) {
    note(node, "attribute 'num_outputs' dropped: the split is even");
    return;
  }
  // From 18 an uneven split makes the last part smaller; before, the sizes are spelled out.
  const int64_t chunk = (size + parts - 1) / parts;
  std::vector<int64_t> sizes(static_cast<size_t>(parts), chunk);
  sizes.back() = size - chunk * (parts - 1);
  if (to_ >= 13) {
    node.setInput(1, int64s(node, baseName(node, "split"), sizes));
  } else {
    node.setAttr(Attribute::makeInts("split", sizes));
  }
  note(node, fmt::format("num_outputs={} spelled out as sizes {}", parts, fmt::join(sizes, ",")));
}

void Lowerer::padDown(Node& node) {
  if (crosses(18) && hasInput(node, 3)) {
    // Pads given for some axes become pads for every axis.
    const int64_t rank = *rankOf(node.input(0));
    std::vector<int64_t> axes = *constantInts(node, 3);
    std::vector<int64_t> given = *constantInts(node, 1);
    std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
      pads[static_cast<size_t>(a)] = given[i];
      pads[static_cast<size_t>(a + rank)] = given[i + axes.size()];
    }
    Value* old = node.input(1);
    node.setInput(1, int64s(node, baseName(node, "pads"), pads));
    fold::eraseIfUnused(old);
    dropInput(node, 3);
    note(node, "pads for the given axes spelled out for every axis");
  }
  if (crosses(11)) {
    if (std::optional<std::vector<double>> value = constantDoubles(node, 2)) {
      if (!value->empty() && (*value)[0] != 0.0) {
        node.setAttr(Attribute::makeFloat("value", static_cast<float>((*value)[0])));
      }
    }
    dropInput(node, 2);
    inputToAttribute(node, 1, "pads");
  }
}

void Lowerer::resizeDown(Node& node) {
  if (crosses(13) && to_ >= 11) {
    // Resize-11 requires roi and scales: absent ones become empty tensors.
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!hasInput(node, i)) {
        node.setInput(i, constant(node, baseName(node, i == 1 ? "roi" : "scales"),
                                  Tensor(DataType::Float, {0})));
      }
    }
    note(node, "empty roi/scales inputs given: Resize-11 requires them");
  }
  if (crosses(11)) {
    // Resize-10 and Upsample: (X, scales) with asymmetric coordinates and floor for nearest.
    dropInput(node, 3);
    Value* roi = node.input(1);
    node.removeInput(1);
    if (roi != nullptr && !roi->isAbsent()) fold::eraseIfUnused(roi);
    for (const char* attr : {"coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                             "exclude_outside", "extrapolation_value"}) {
      node.removeAttr(attr);
    }
    note(node, "roi dropped; asymmetric coordinates and floor are Resize-10's own");
  }
  if (crosses(10)) {
    node.setOpType("Upsample");
    if (to_ < 9) {
      std::vector<double> scales = *constantDoubles(node, 1);
      node.setAttr(
          Attribute::makeFloats("scales", std::vector<float>(scales.begin(), scales.end())));
      dropInput(node, 1);
    }
    note(node, "Resize replaced by Upsample");
  }
}

// From 21 scale and bias are per channel; before, per group (refusal() checked that each
// group's channels agree).
void Lowerer::groupNormBelow21(Node& node) {
  const int64_t groups = node.attrInt("num_groups", 1);
  for (size_t i : {size_t{1}, size_t{2}}) {
    std::vector<double> perChannel = *constantDoubles(node, i);
    const size_t per = perChannel.size() / static_cast<size_t>(groups);
    std::vector<double> perGroup;
    for (size_t g = 0; g < static_cast<size_t>(groups); ++g)
      perGroup.push_back(perChannel[g * per]);
    Value* old = node.input(i);
    node.setInput(i, constant(node, baseName(node, i == 1 ? "scale" : "bias"),
                              Tensor::fromDoubles(elementTypeOf(old), {groups}, perGroup)));
    fold::eraseIfUnused(old);
  }
  note(node, "per-channel scale and bias taken per group");
}

}  // namespace qopt::opset
