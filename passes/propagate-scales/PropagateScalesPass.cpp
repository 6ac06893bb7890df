// propagate-scales: moves QuantizeLinear backward and DequantizeLinear forward through ops that
// commute with quantization (CommutingOps.h), so that the target sees one quantized tensor where
// it can fuse, as ONNX Runtime's QDQ propagation and TensorRT's Q/DQ optimizer do.
//
// The rewrites, for per-tensor parameters p:
//   DQ forward:  DQ(p) -> op -> y        becomes  op on the integers -> DQ(p) -> y
//   Q backward:  x -> op -> Q(p) (only)  becomes  x -> Q(p) -> op on the integers
//   pair:        DQ(p) -> Q(p)           becomes  nothing: Q(DQ(q)) == q
//   duplicates:  Q(p)(x) twice becomes one (DQ(p)(q) twice too, with unique-dq=false)
//   unique DQ:   a DequantizeLinear read by several nodes is copied so each has its own, which
//                ONNX Runtime's node units and TensorRT's fusions expect.
// A DQ(p) -> op -> Q(p) sandwich is DQ forward followed by the pair rule: the op runs on integers.
// All of these are exact. Where the target needs equal parameters and they differ (Concat inputs
// and output, the two sides of an op, and residual Add inputs with unify-add), the widest range
// replaces them: that changes numerics, and the statistics count each quantization changed.
// The main graph is rewritten; If/Loop/Scan bodies are left as they are.
#include <fmt/format.h>

#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "CommutingOps.h"
#include "ScaleUnification.h"
#include "qopt/constants/ConstantCone.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/qdq/NodeParams.h"

namespace qopt {
namespace {

using qdq::QuantGroup;
using qdq::QuantParams;

class PropagateScalesPass : public GraphPass {
 public:
  PropagateScalesPass()
      : GraphPass("propagate-scales",
                  "Moves Q/DQ through ops that commute with quantization and unifies scales "
                  "where the target needs them equal") {}

  PassResult prepare(Model& model, PassContext&) override {
    PassResult result;
    for (const char* name : {"dq-moved-forward", "q-moved-backward", "dq-q-pairs-removed",
                             "duplicates-removed", "scales-unified", "dq-copied-per-consumer"}) {
      result.statistics[name] = 0;
    }
    opset_ = model.opsetVersion("").value_or(1);
    refusals_.clear();
    // Scales that QAT exports compute in the graph become the constants they always are, so
    // pairs that read them can move and unify like any other.
    result.statistics["parameters-folded"] = fold::foldQdqParameterCones(model, result);
    result.changed = result.statistics.get("parameters-folded") > 0;
    return result;
  }

  // A move or a merge pairs a Q or DQ with nodes of its own graph only: an integer tensor
  // crossing into an If or Loop body is what TensorRT's control flow refuses.
  PassResult runOnGraph(Graph& graph, PassContext&) override {
    PassResult result;
    bool changed = true;
    int round = 0;
    for (; changed && round < *max_rounds_; ++round) {
      changed = false;
      changed |= sweepForward(graph, result);
      changed |= sweepBackward(graph, result);
      changed |= removePairs(graph, result);
      changed |= removeDuplicates(graph, result);
    }
    if (changed) {
      result.note(graph.parentNode()
                      ? fmt::format("body '{}' of {}", graph.name, graph.parentNode()->describe())
                      : std::string("graph"),
                  fmt::format("stopped after {} rounds (max-rounds) with moves left", round));
    }
    if (*unique_dq_) copyDqPerConsumer(graph, result);
    for (Node* node : graph.nodes()) {  // graph order: remarks print the same on every run
      auto refusal = refusals_.find(node);
      if (refusal != refusals_.end() && isStillFloat(*node)) {
        result.missed(node->describe(), refusal->second);
      }
    }
    for (const auto& [name, count] : result.statistics.entries()) {
      if (count > 0) result.changed = true;
    }
    return result;
  }

 private:
  // ---- DequantizeLinear forward --------------------------------------------------------------

  /// The DequantizeLinear nodes feeding every data input of `op`, or empty.
  static std::vector<Node*> dequantizedInputs(const Node& op) {
    std::vector<Node*> dqs;
    for (size_t i : qdq::dataInputs(op)) {
      Node* producer = op.input(i) ? op.input(i)->producer() : nullptr;
      if (!qdq::isDequantize(producer) || producer->graph() != op.graph()) return {};
      dqs.push_back(producer);
    }
    return dqs;
  }

  /// The QuantizeLinear nodes reading every output of `op`, or empty.
  static std::vector<Node*> quantizedOutputs(const Node& op) {
    std::vector<Node*> qs;
    for (size_t o = 0; o < op.numOutputs(); ++o) {
      const Value* out = op.output(o);
      if (out->isAbsent() || (o > 0 && op.is("MaxPool"))) continue;
      if (out->isGraphOutput() || !out->hasUses()) return {};
      for (const Use& use : out->uses()) {
        if (!qdq::isQuantize(use.user) || use.index != 0 || use.user->graph() != op.graph()) {
          return {};
        }
        qs.push_back(use.user);
      }
    }
    return qs;
  }

  /// Reads the parameters of `nodes`; all must be readable and equal. nullopt with `why` else.
  static std::optional<QuantParams> commonParams(const std::vector<Node*>& nodes, std::string* why,
                                                 bool* differ = nullptr) {
    std::optional<QuantParams> common;
    for (Node* node : nodes) {
      std::string reason;
      std::optional<QuantParams> p = qdq::readQuantParams(*node, &reason);
      if (!p) {
        *why = fmt::format("kept in float: {}: {}", node->describe(), reason);
        return std::nullopt;
      }
      if (common && !common->sameAs(*p)) {
        *why = fmt::format("kept in float: its quantizations differ ({} and {})",
                           common->describe(), p->describe());
        if (differ) *differ = true;
        return std::nullopt;
      }
      if (!common) common = p;
    }
    return common;
  }

  bool sweepForward(Graph& graph, PassResult& result) {
    bool changed = false;
    for (Node* op : candidates(graph)) {
      std::vector<Node*> dqs = dequantizedInputs(*op);
      if (dqs.empty()) continue;
      if (std::any_of(dqs.begin(), dqs.end(),
                      [](Node* dq) { return fold::isConstantValue(dq->input(0)); })) {
        continue;  // stored weights stay next to their consumers
      }
      std::string why;
      bool differ = false;
      std::optional<QuantParams> p = commonParams(dqs, &why, &differ);
      if (!p && differ && unifyAround(*op, result)) {
        changed = true;
        p = commonParams(dqs, &why);
      }
      if (!p) {
        if (differ && !*unify_concat_) {
          result.missed(op->describe(), why.substr(why.find(':') + 2) +
                                            ": each input is requantized (unify-concat=true "
                                            "gives them one scale)");
        }
        refusals_[op] = why;
        continue;
      }
      if (std::string no = qdq::whyNotCommuting(*op, *p, opset_); !no.empty()) {
        refusals_[op] = no;
        continue;
      }
      if (outputsQuantizedDifferently(*op, *p)) {
        if (unifyAround(*op, result)) {
          changed = true;
          p = commonParams(dqs, &why);
          if (!p) continue;
        } else if (!*unify_pairs_) {
          result.missed(op->describe(),
                        "its input and output quantizations differ: a "
                        "requantization stays after it (unify-pairs=true gives "
                        "them one scale)");
        }
      }
      moveDqForward(*op, dqs, *p);
      result.statistics.add("dq-moved-forward");
      result.applied(op->describe(), "runs on the integers; DequantizeLinear moved after it");
      changed = true;
    }
    return changed;
  }

  /// Whether `op`'s outputs go to QuantizeLinear nodes whose parameters are not all `p`.
  static bool outputsQuantizedDifferently(const Node& op, const QuantParams& p) {
    for (Node* q : quantizedOutputs(op)) {
      std::optional<QuantParams> pq = qdq::readQuantParams(*q);
      if (pq && !pq->sameAs(p)) return true;
    }
    return false;
  }

  void moveDqForward(Node& op, const std::vector<Node*>& dqs, const QuantParams& p) {
    std::vector<size_t> inputs = qdq::dataInputs(op);
    Node& like = *dqs.front();
    for (size_t k = 0; k < inputs.size(); ++k) op.setInput(inputs[k], dqs[k]->input(0));
    qdq::adaptToIntegers(op, p);
    Graph& graph = *op.graph();
    for (size_t o = 0; o < op.numOutputs(); ++o) {
      Value* out = op.output(o);
      if (out->isAbsent() || (o > 0 && op.is("MaxPool"))) continue;
      if (out->type().isTensor()) out->mutableType().elemType = p.type;
      if (!out->hasUses() && !out->isGraphOutput()) continue;  // an unused Split output
      std::vector<Value*> dqInputs{out, like.input(1)};
      if (like.input(2)) dqInputs.push_back(like.input(2));
      Node* dq =
          graph.createNode("DequantizeLinear", std::span<Value* const>(dqInputs), 1, op.next());
      dq->output(0)->setName(graph.model().uniqueValueName(out->name() + "_dequantized"));
      if (out->type().isTensor()) {
        ValueType floatType = out->type();
        floatType.elemType =
            like.output(0)->type().isTensor() ? like.output(0)->type().elemType : DataType::Float;
        dq->output(0)->setType(floatType);
      }
      out->replaceAllUsesExcept(dq->output(0), dq);
    }
    std::vector<Value*> old;
    for (Node* dq : dqs) old.push_back(dq->output(0));
    fold::eraseIfUnused(old);
  }

  // ---- QuantizeLinear backward ---------------------------------------------------------------

  bool sweepBackward(Graph& graph, PassResult& result) {
    bool changed = false;
    std::vector<Node*> ops = candidates(graph);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      Node* op = *it;
      if (!isStillFloat(*op)) continue;
      std::vector<Node*> qs = quantizedOutputs(*op);
      if (qs.empty()) continue;
      std::string why;
      bool differ = false;
      std::optional<QuantParams> p = commonParams(qs, &why, &differ);
      if (!p && differ && op->is("Split") && unifyAround(*op, result)) {
        changed = true;
        p = commonParams(qs, &why);
      }
      if (!p) {
        refusals_[op] = why;
        continue;
      }
      if (std::string no = qdq::whyNotCommuting(*op, *p, opset_); !no.empty()) {
        refusals_[op] = no;
        continue;
      }
      moveQBackward(*op, qs, *p);
      result.statistics.add("q-moved-backward");
      result.applied(op->describe(), "runs on the integers; QuantizeLinear moved before it");
      changed = true;
    }
    return changed;
  }

  void moveQBackward(Node& op, const std::vector<Node*>& qs, const QuantParams& p) {
    Graph& graph = *op.graph();
    Node& like = *qs.front();
    for (size_t i : qdq::dataInputs(op)) {
      Value* x = op.input(i);
      std::vector<Value*> qInputs{x, like.input(1)};
      if (like.input(2)) qInputs.push_back(like.input(2));
      Node* q = graph.createNode("QuantizeLinear", std::span<Value* const>(qInputs), 1, &op);
      for (const Attribute& attr : like.attributes()) {
        if (attr.kind == AttrKind::Int) q->setAttr(Attribute::makeInt(attr.name, attr.i));
      }
      q->output(0)->setName(graph.model().uniqueValueName(x->name() + "_quantized"));
      if (x->type().isTensor()) {
        ValueType t = x->type();
        t.elemType = p.type;
        q->output(0)->setType(t);
      }
      op.setInput(i, q->output(0));
    }
    qdq::adaptToIntegers(op, p);
    for (size_t o = 0; o < op.numOutputs(); ++o) {
      Value* out = op.output(o);
      if (out->isAbsent() || (o > 0 && op.is("MaxPool"))) continue;
      if (out->type().isTensor()) out->mutableType().elemType = p.type;
    }
    for (Node* q : qs) {
      Value* integers = q->input(0);
      q->output(0)->replaceAllUsesWith(integers);
      fold::eraseIfUnused(q->output(0));
    }
  }

  // ---- Unification -----------------------------------------------------------------------------

  /// Gives the quantizations around `op` (DQ inputs and Q outputs) the widest of their ranges,
  /// when the options ask for it. True when anything changed.
  bool unifyAround(Node& op, PassResult& result) {
    bool isConcat = op.is("Concat");
    if (isConcat ? !*unify_concat_ : !*unify_pairs_) return false;
    std::vector<QuantGroup> groups;
    std::string why;
    // Keeps a readable group; else records why `op` stays in float.
    auto take = [&](std::optional<QuantGroup> g) {
      if (!g) {
        refusals_[&op] = "kept in float: its quantizations differ and cannot be unified: " + why;
        return false;
      }
      groups.push_back(*g);
      return true;
    };
    for (Node* dq : dequantizedInputs(op)) {
      if (!take(qdq::groupOfDequantize(*dq, &why))) return false;
    }
    for (Node* q : quantizedOutputs(op)) {
      if (!take(qdq::groupOfQuantize(*q, &why))) return false;
    }
    return unify(op, groups, result);
  }

  bool unify(Node& op, const std::vector<QuantGroup>& groups, PassResult& result) {
    std::vector<QuantParams> params;
    for (const QuantGroup& g : groups) params.push_back(g.params);
    std::string why;
    std::optional<QuantParams> wide = qdq::widestParams(params, &why);
    if (!wide) {
      refusals_[&op] = "kept in float: its quantizations differ and cannot be unified: " + why;
      return false;
    }
    qdq::UnifyOutcome outcome = qdq::unifyGroups(groups, *wide);
    if (outcome.changed == 0) return false;
    result.statistics.add("scales-unified", outcome.changed);
    result.note(op.describe(),
                fmt::format("unified {} quantizations to {}: the step grows up to {:.3g}x, "
                            "which changes results (verify shows the cost)",
                            outcome.changed, wide->describe(), outcome.stepGrowth));
    return true;
  }

  bool unifyResidualAdds(Graph& graph, PassResult& result) {
    bool changed = false;
    for (Node* add : graph.nodes()) {
      if (!add->is("Add") || add->numInputs() != 2) continue;
      std::vector<QuantGroup> groups;
      for (size_t i = 0; i < 2; ++i) {
        Node* dq = add->input(i) ? add->input(i)->producer() : nullptr;
        if (!qdq::isDequantize(dq) || dq->graph() != &graph ||
            fold::isConstantValue(dq->input(0))) {
          break;
        }
        std::string why;
        std::optional<QuantGroup> g = qdq::groupOfDequantize(*dq, &why);
        if (!g) break;
        groups.push_back(*g);
      }
      if (groups.size() == 2 && !groups[0].params.sameAs(groups[1].params)) {
        changed |= unify(*add, groups, result);
      }
    }
    return changed;
  }

  // ---- Clean-up
  // ----------------------------------------------------------------------------------

  bool removePairs(Graph& graph, PassResult& result) {
    bool changed = *unify_add_ && unifyResidualAdds(graph, result);
    for (Node* q : graph.nodes()) {
      if (!qdq::isQuantize(q) || q->output(0)->isGraphOutput()) continue;
      Node* dq = q->input(0) ? q->input(0)->producer() : nullptr;
      if (!qdq::isDequantize(dq) || dq->graph() != &graph) continue;
      std::optional<QuantParams> pq = qdq::readQuantParams(*q);
      std::optional<QuantParams> pd = qdq::readQuantParams(*dq);
      if (!pq || !pd || !pq->sameAs(*pd)) continue;
      q->output(0)->replaceAllUsesWith(dq->input(0));
      fold::eraseIfUnused(q->output(0));
      result.statistics.add("dq-q-pairs-removed");
      changed = true;
    }
    return changed;
  }

  /// Same op, same input, same parameters and attributes: one node computes it.
  static bool duplicates(const Node& a, const Node& b) {
    if (a.opType() != b.opType() || a.input(0) != b.input(0)) return false;
    std::optional<QuantParams> pa = qdq::readQuantParams(a);
    std::optional<QuantParams> pb = qdq::readQuantParams(b);
    if (!pa || !pb || !pa->sameAs(*pb)) return false;
    if (a.attrInt("saturate", 1) != b.attrInt("saturate", 1)) return false;
    return a.output(0)->type().elemType == b.output(0)->type().elemType ||
           !a.output(0)->type().isTensor() || !b.output(0)->type().isTensor();
  }

  bool removeDuplicates(Graph& graph, PassResult& result) {
    bool changed = false;
    for (Node* node : graph.nodes()) {
      // With unique-dq, equal DequantizeLinear nodes are what each consumer is meant to have.
      if (!qdq::isQuantize(node) && (!qdq::isDequantize(node) || *unique_dq_)) continue;
      if (node->input(0) == nullptr || node->output(0)->isGraphOutput()) continue;
      for (const Use& use : node->input(0)->uses()) {
        Node* earlier = use.user;
        if (earlier == node || use.index != 0 || !duplicates(*earlier, *node)) continue;
        if (!isBefore(earlier, node)) continue;
        node->output(0)->replaceAllUsesWith(earlier->output(0));
        fold::eraseIfUnused(node->output(0));
        result.statistics.add("duplicates-removed");
        changed = true;
        break;
      }
    }
    return changed;
  }

  void copyDqPerConsumer(Graph& graph, PassResult& result) {
    for (Node* dq : graph.nodes()) {
      if (!qdq::isDequantize(dq)) continue;
      Value* out = dq->output(0);
      std::vector<Node*> users = out->users();
      // The graph output (if any) and the first consumer keep the original.
      size_t keep = out->isGraphOutput() ? 0 : 1;
      for (size_t k = keep; k < users.size(); ++k) {
        Node* user = users[k];
        std::vector<Value*> inputs(dq->inputs().begin(), dq->inputs().end());
        Node* copy =
            graph.createNode("DequantizeLinear", std::span<Value* const>(inputs), 1, dq->next());
        for (const Attribute& attr : dq->attributes()) {
          if (attr.kind == AttrKind::Int) copy->setAttr(Attribute::makeInt(attr.name, attr.i));
        }
        copy->output(0)->setName(graph.model().uniqueValueName(out->name()));
        copy->output(0)->setType(out->type());
        for (size_t i = 0; i < user->numInputs(); ++i) {
          if (user->input(i) == out) user->setInput(i, copy->output(0));
        }
        result.statistics.add("dq-copied-per-consumer");
      }
    }
  }

  // ---- Helpers ---------------------------------------------------------------------------------

  static std::vector<Node*> candidates(const Graph& graph) {
    std::vector<Node*> ops;
    for (Node* node : graph.nodes()) {
      if (qdq::isDataMovementOp(*node)) ops.push_back(node);
    }
    return ops;
  }

  /// Whether a data input of `op` is still float (not an integer it was moved onto).
  static bool isStillFloat(const Node& op) {
    for (size_t i : qdq::dataInputs(op)) {
      const Value* in = op.input(i);
      if (in == nullptr) continue;
      const Node* producer = in->producer();
      if (qdq::isQuantize(producer)) return false;
      if (in->type().isTensor() && isInteger(in->type().elemType)) return false;
    }
    return true;
  }

  static bool isBefore(const Node* a, const Node* b) {
    for (const Node* n = a; n != nullptr; n = n->next()) {
      if (n == b) return true;
    }
    return false;
  }

  Option<bool> unify_concat_{*this, "unify-concat", true,
                             "Give Concat inputs and output one quantization (the widest range)"};
  Option<bool> unify_pairs_{*this, "unify-pairs", true,
                            "Give both sides of an op Q/DQ moves through one quantization"};
  Option<bool> unify_add_{*this, "unify-add", false,
                          "Give the two quantized inputs of an Add one quantization"};
  Option<bool> unique_dq_{*this, "unique-dq", true,
                          "Give each consumer of a DequantizeLinear its own copy"};
  Option<int64_t> max_rounds_{*this, "max-rounds", 16, "Rounds of moves before giving up"};
  int64_t opset_ = 0;
  std::unordered_map<const Node*, std::string> refusals_;
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("propagate-scales", QOPT_VERSION_STRING, qopt::PropagateScalesPass)
