#include "Placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "qopt/constants/ConstantValue.h"
#include "qopt/qdq/SmallLayers.h"
#include "qopt/qdq/TransformerPatterns.h"

namespace qopt::qdq {
namespace {

bool isWeightedOp(const Node& node) {
  return node.is("Conv") || node.is("ConvTranspose") || node.is("Gemm") || node.is("MatMul");
}

bool isPool(const Node& node) {
  return node.is("AveragePool") || node.is("GlobalAveragePool");
}

std::string describeInput(const Node& node, size_t input) {
  return fmt::format("input {} ('{}') of {}", input, node.input(input)->name(), node.describe());
}

class Planner {
 public:
  Planner(Graph& graph, const PlacementOptions& options, PassResult& result)
      : graph_(graph), options_(options), result_(result) {}

  Placement run() {
    size_t position = 0;
    for (Node* node : graph_.nodes()) order_[node] = position++;
    patterns_ = findTransformerPatterns(graph_);
    notePatterns();
    for (Node* node : graph_.nodes()) {
      // A body is planned by the same rules, its sites read inside it (a value of an enclosing
      // graph that a body's layer reads gets its own Q/DQ pair in that body).
      for (Graph* body : node->subgraphs()) absorb(Planner(*body, options_, result_).run());
      if (!isPlacementCandidate(*node)) continue;
      if (options_.fp8 && (isPool(*node) || node->is("ConvTranspose"))) {
        staysFloat(node, "FP8",
                   "not quantized: FP8 quantizes Conv, Gemm, MatMul and "
                   "residual Add inputs only");
        continue;
      }
      if (isExcluded(*node)) {
        plan_.excludedNodes.push_back(node);
        staysFloat(node, "exclude-nodes or exclude-ops", "excluded: stays float");
        continue;
      }
      if (std::string where = patterns_.floatInteriorOf(node); !where.empty()) {
        staysFloat(node, "inside a pattern TensorRT runs in float",
                   fmt::format("not quantized: inside {}, which TensorRT runs in float", where));
        continue;
      }
      if (options_.excludeMha && patterns_.attentionOf(node) != nullptr) {
        plan_.excludedNodes.push_back(node);
        staysFloat(node, "exclude-mha", "excluded (exclude-mha): attention MatMul stays float");
        continue;
      }
      if (std::optional<std::string> why = gainsNothing(*node)) {
        plan_.excludedNodes.push_back(node);
        staysFloat(node, "TensorRT gains nothing (min-channels)",
                   "stays float: TensorRT gains nothing: " + *why);
        continue;
      }
      if (isWeightedOp(*node)) {
        if (!planWeighted(node)) staysFloat(node, "no input it can quantize", "");
      } else if (node->is("Add")) {
        planResidualAdd(node);
      } else if (isPool(*node)) {
        if (planActivation(node, 0)) markQuantized(node);
      }
    }
    return std::move(plan_);
  }

 private:
  // A remark for `node` (unless `remark` is empty) and, for a compute layer, its reason in
  // Placement::floatLayers.
  void staysFloat(const Node* node, const std::string& reason, const std::string& remark) {
    if (!remark.empty()) result_.missed(node->describe(), remark);
    if (isWeightedOp(*node)) plan_.floatLayers.emplace_back(node, reason);
  }

  void absorb(Placement body) {
    const size_t weightOffset = plan_.weights.size();
    for (BiasSite& bias : body.biases) bias.weight += weightOffset;
    auto append = [](auto& to, auto& from) {
      to.insert(to.end(), std::make_move_iterator(from.begin()),
                std::make_move_iterator(from.end()));
    };
    append(plan_.activations, body.activations);
    append(plan_.weights, body.weights);
    append(plan_.biases, body.biases);
    append(plan_.quantizedNodes, body.quantizedNodes);
    append(plan_.excludedNodes, body.excludedNodes);
    append(plan_.floatLayers, body.floatLayers);
  }

  bool isExcluded(const Node& node) const {
    if (options_.excludeOps.count(node.opType()) > 0) return true;
    if (!options_.excludeNodes) return false;
    // Unnamed nodes (ONNX text has no node names) are known by their first output.
    const std::string& name =
        !node.name().empty() || node.numOutputs() == 0 ? node.name() : node.output(0)->name();
    return std::regex_match(name, *options_.excludeNodes);
  }

  // A remark per recognised transformer pattern, so that -v shows what placement relied on.
  void notePatterns() {
    for (const AttentionBlock& block : patterns_.attention) {
      result_.note(
          block.softmax->describe(),
          fmt::format("attention block: {}{}", block.describe(),
                      options_.excludeMha ? "; the attention MatMuls stay float (exclude-mha)"
                                          : "; both inputs of both attention MatMuls quantized per "
                                            "tensor"));
    }
    for (const FloatPattern& pattern : patterns_.floatPatterns) {
      result_.note(pattern.last->describe(),
                   fmt::format("{}: stays in high precision, no Q/DQ inside", pattern.describe()));
    }
  }

  // The two MatMuls of an attention block are judged together: TensorRT's MHA fusion wants
  // both quantized or neither.
  std::optional<std::string> gainsNothing(const Node& node) const {
    if (!options_.target.isTensorRT() || !isWeightedOp(node)) return std::nullopt;
    const SmallLayerRule rule{options_.minChannels, options_.fp8};
    const AttentionBlock* block = patterns_.attentionOf(&node);
    if (block == nullptr) return smallLayerReason(node, rule);
    for (const Node* matmul : {block->scores, block->context}) {
      std::optional<std::string> why = smallLayerReason(*matmul, rule);
      if (!why || matmul == &node) continue;
      return fmt::format("the other MatMul of its attention block, {}, is a {}; both stay float",
                         matmul->describe(), *why);
    }
    return smallLayerReason(node, rule);
  }

  void markQuantized(Node* node) {
    quantized_.insert(node);
    plan_.quantizedNodes.push_back(node);
  }

  // Whether `value` may get an activation Q/DQ; says why not in a remark.
  bool activationEligible(const Node& node, size_t input) {
    const Value* value = node.input(input);
    if (value == nullptr) return false;
    if (const Node* producer = value->producer();
        producer != nullptr && producer->is("DequantizeLinear")) {
      result_.missed(describeInput(node, input), "already dequantized: left as it is");
      return false;
    }
    // float16 and bfloat16 activations quantize with scales of their own type (opset 19).
    const DataType elemType = value->type().elemType;
    if (value->type().isTensor() && elemType != DataType::Float && elemType != DataType::Float16 &&
        elemType != DataType::BFloat16) {
      result_.missed(describeInput(node, input),
                     fmt::format("not quantized: element type {} (only float, float16 and "
                                 "bfloat16 are)",
                                 dataTypeName(value->type().elemType)));
      return false;
    }
    return true;
  }

  // Adds the use (node, input) to the activation site of its value.
  bool planActivation(Node* node, size_t input) {
    if (!activationEligible(*node, input)) return false;
    Value* value = node->input(input);
    auto [it, inserted] = siteIndex_.try_emplace(value, plan_.activations.size());
    if (inserted) plan_.activations.push_back({value, {}});
    plan_.activations[it->second].uses.push_back({node, static_cast<uint32_t>(input)});
    return true;
  }

  std::optional<size_t> planWeight(Node* node, size_t input) {
    Value* weight = node->input(input);
    std::optional<Tensor> tensor = fold::constantOf(weight);
    if (!tensor || !isFloatingPoint(tensor->dataType())) {
      result_.missed(describeInput(*node, input), "not quantized: not a float constant");
      return std::nullopt;
    }
    int64_t rank = static_cast<int64_t>(tensor->dims().size());
    int64_t axis = weightAxis(*node, input, rank, options_.target);
    plan_.weights.push_back({node, input, weight, axis});
    return plan_.weights.size() - 1;
  }

  // Whether the layer is quantized.
  bool planWeighted(Node* node) {
    bool any = false;
    std::optional<size_t> weight;
    for (size_t input = 0; input < std::min<size_t>(node->numInputs(), 2); ++input) {
      Value* value = node->input(input);
      if (value == nullptr) continue;
      if (fold::isConstantValue(value)) {
        if (const Node* producer = value->producer();
            producer != nullptr && producer->is("DequantizeLinear")) {
          result_.missed(describeInput(*node, input), "already dequantized: left as it is");
          continue;
        }
        std::optional<size_t> site = planWeight(node, input);
        if (input == 1) weight = site;
        any = any || site.has_value();
      } else {
        any = planActivation(node, input) || any;
      }
    }
    if (!any) return false;
    markQuantized(node);
    Value* bias = node->input(2);
    if (!options_.quantizeBias || bias == nullptr || !weight ||
        (!node->is("Conv") && !node->is("Gemm")))
      return true;
    Value* activation = node->input(0);
    if (fold::isConstantValue(activation) || siteIndex_.count(activation) == 0) return true;
    std::optional<Tensor> tensor = fold::constantOf(bias);
    const WeightSite& site = plan_.weights[*weight];
    std::optional<Tensor> weightTensor = fold::constantOf(site.weight);
    int64_t channels = site.axis >= 0 ? weightTensor->dims()[static_cast<size_t>(site.axis)] : 1;
    if (!tensor || !isFloatingPoint(tensor->dataType()) || tensor->dims().size() != 1 ||
        (tensor->dims()[0] != channels && site.axis >= 0)) {
      result_.missed(describeInput(*node, 2),
                     "bias stays float: not a 1-D float constant with "
                     "one value per output channel");
      return true;
    }
    plan_.biases.push_back({node, 2, bias, activation, *weight});
    return true;
  }

  // The quantized weighted op whose output `value` is, directly or through an Add of a
  // constant (a bias), when nothing else reads it: the Add can fuse into it.
  const Node* fusableProducer(const Value* value) const {
    for (int step = 0; step < 2; ++step) {
      if (value->isGraphOutput() || value->uses().size() != 1) return nullptr;
      const Node* producer = value->producer();
      if (producer == nullptr) return nullptr;
      if (isWeightedOp(*producer)) return quantized_.count(producer) ? producer : nullptr;
      if (!producer->is("Add") || producer->numInputs() != 2) return nullptr;
      const Value* a = producer->input(0);
      const Value* b = producer->input(1);
      if (fold::isConstantValue(b)) {
        value = a;
      } else if (fold::isConstantValue(a)) {
        value = b;
      } else {
        return nullptr;
      }
    }
    return nullptr;
  }

  void planResidualAdd(Node* add) {
    if (add->numInputs() != 2 || add->input(0) == nullptr || add->input(1) == nullptr) return;
    if (fold::isConstantValue(add->input(0)) || fold::isConstantValue(add->input(1)))
      return;  // a bias
    const Node* fuse0 = fusableProducer(add->input(0));
    const Node* fuse1 = fusableProducer(add->input(1));
    size_t skip = 0;
    if (fuse0 != nullptr && fuse1 != nullptr) {
      // The Add fuses into the later of the two; the earlier branch is the skip.
      skip = order_.at(fuse0) < order_.at(fuse1) ? 0 : 1;
    } else if (fuse0 != nullptr) {
      skip = 1;
    } else if (fuse1 != nullptr) {
      skip = 0;
    } else {
      result_.missed(add->describe(),
                     "not quantized: neither input comes from a quantized Conv, Gemm or MatMul "
                     "it could fuse into");
      return;
    }
    if (planActivation(add, skip)) markQuantized(add);
  }

  Graph& graph_;
  const PlacementOptions& options_;
  PassResult& result_;
  Placement plan_;
  std::unordered_map<const Node*, size_t> order_;
  std::unordered_map<const Value*, size_t> siteIndex_;
  std::unordered_set<const Node*> quantized_;
  TransformerPatterns patterns_;
};

}  // namespace

bool isPlacementCandidate(const Node& node) {
  return isWeightedOp(node) || node.is("Add") || isPool(node);
}

int64_t weightAxis(const Node& node, size_t input, int64_t rank, const Target& target) {
  if (rank < 1) return -1;
  if (node.is("Conv")) return input == 1 ? 0 : -1;
  if (node.is("ConvTranspose")) {
    if (input != 1 || rank < 2) return -1;
    // TensorRT 8.x kernels expect the ConvTranspose weight's axis 0, later versions axis 1.
    return target.isTensorRT() && !target.trtAtLeast(9) ? 0 : 1;
  }
  if (node.is("Gemm")) {
    if (input != 1 || rank != 2) return -1;
    return node.attrInt("transB", 0) != 0 ? 0 : 1;
  }
  if (node.is("MatMul")) {
    // A constant second input: its last axis is the output axis. A constant first input (rare)
    // has no axis that maps to output channels alone.
    if (input != 1 || rank < 2) return -1;
    return rank - 1;
  }
  return -1;
}

Placement planPlacement(Graph& graph, const PlacementOptions& options, PassResult& result) {
  return Planner(graph, options, result).run();
}

}  // namespace qopt::qdq
