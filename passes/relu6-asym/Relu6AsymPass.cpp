// relu6-asym: quantizes the outputs of ReLU6 (and, on request, other activations with a known
// non-negative range) over that range only, instead of a symmetric range that wastes the negative
// half of the integer codes.
//
// target ort/generic: uint8, scale hi/255, zero point 0 (ReLU6: 6/255, half the step of int8
// 6/127), and the Clip goes when the quantized range [s*(0-zp), s*(255-zp)] lies inside the clip
// bounds, as ONNX Runtime's Clip/QuantizeLinear fusion decides: the QuantizeLinear clamps the same.
// target tensorrt: TensorRT reads a uint8 zero point as int8 (or rejects uint8), so a uint8 ReLU6
// would clip at 127*6/255 = 2.99. There it is int8 with amax hi (6/127) and the Clip stays.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "BoundedActivation.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/pass/Target.h"
#include "qopt/qdq/NodeParams.h"

namespace qopt {
namespace {

using qdq::QuantParams;
using relu6::BoundedActivation;

const std::vector<std::string> kFamilies = {"relu6", "relu", "sigmoid", "hardsigmoid"};

class Relu6AsymPass : public Pass {
 public:
  Relu6AsymPass()
      : Pass("relu6-asym",
             "Quantizes ReLU6 (and other bounded activations) over their own non-negative range") {}

  PassResult run(Model& model, PassContext& context) override {
    for (const std::string& family : *ranges_) {
      if (std::find(kFamilies.begin(), kFamilies.end(), family) == kFamilies.end()) {
        failOption("ranges",
                   fmt::format("'{}' is not one of relu6, relu, sigmoid, hardsigmoid", family));
      }
    }
    target_ = target_option_.resolve(context);
    PassResult result;
    for (const char* name :
         {"rewritten", "already-set", "inserted", "inputs-rewritten", "clips-removed"}) {
      result.statistics[name] = 0;
    }
    if (target_.isTensorRT()) result.statistics["clips-kept-for-tensorrt"] = 0;

    std::vector<BoundedActivation> found;
    model.graph().walk([&](Node* node) {
      if (auto act = relu6::matchBoundedActivation(node, *ranges_)) found.push_back(*act);
    });
    for (BoundedActivation& act : found) {
      result.statistics.add("found-" + act.form);
      handle(act, result);
    }
    result.changed = result.statistics.get("rewritten") + result.statistics.get("inserted") +
                         result.statistics.get("inputs-rewritten") +
                         result.statistics.get("clips-removed") >
                     0;
    return result;
  }

 private:
  static std::string subjectOf(const BoundedActivation& act) {
    return act.nodes.back()->describe();
  }

  /// The parameters this target wants for values in [0, hi].
  QuantParams paramsFor(double hi, const QuantParams* like) const {
    DataType scaleType = like ? like->scaleType : DataType::Float;
    QuantParams p = target_.isTensorRT()
                        ? qdq::paramsForRange(0, hi, DataType::Int8, true, scaleType)
                        : qdq::paramsForRange(0, hi, DataType::UInt8, true, scaleType);
    if (like) p.scaleDims = like->scaleDims;
    return p;
  }

  std::vector<Node*> quantizersOf(const BoundedActivation& act) const {
    std::vector<Node*> qs;
    for (const Use& use : act.output->uses()) {
      if (qdq::isQuantize(use.user) && use.index == 0) qs.push_back(use.user);
    }
    return qs;
  }

  void handle(BoundedActivation& act, PassResult& result) {
    std::vector<Node*> qs = quantizersOf(act);
    if (qs.empty()) {
      if (!*quantize_unquantized_) {
        result.missed(subjectOf(act),
                      "left alone: its output is not quantized "
                      "(quantize-unquantized=true inserts the pair)");
        return;
      }
      if (std::isinf(act.hi)) {
        result.missed(subjectOf(act),
                      "left alone: a Relu's range is only known from the quantization after it");
        return;
      }
      qs.push_back(insertPair(act));
      result.statistics.add("inserted");
      result.applied(subjectOf(act), fmt::format("quantized its output as {}",
                                                 paramsFor(act.hi, nullptr).describe()));
    } else {
      std::vector<Node*> rewritten;
      for (Node* q : qs) {
        if (rewrite(act, *q, result)) rewritten.push_back(q);
      }
      if (rewritten.size() != qs.size()) return;
    }
    if (!act.isClip) return;
    rewriteInputQuantization(act, qs, result);
    if (target_.isTensorRT()) {
      if (std::isinf(act.hi)) return;
      result.statistics.add("clips-kept-for-tensorrt");
      result.note(subjectOf(act),
                  "kept the clip and used int8: TensorRT reads a uint8 zero point as int8, so a "
                  "uint8 ReLU6 would clip at 127*6/255 = 2.99");
      return;
    }
    removeClipIfCovered(act, qs, result);
  }

  bool rewrite(const BoundedActivation& act, Node& q, PassResult& result) {
    std::string why;
    std::optional<QuantParams> old = qdq::readQuantParams(q, &why);
    if (!old) {
      result.missed(q.describe(), "left alone: " + why);
      return false;
    }
    if (!old->perTensor()) {
      result.missed(q.describe(), "left alone: an activation quantized per axis");
      return false;
    }
    std::optional<std::vector<Node*>> dqs = qdq::dequantizersOf(q);
    if (!dqs) {
      result.missed(q.describe(),
                    "left alone: its output is read by nodes other than "
                    "DequantizeLinear, whose types would change");
      return false;
    }
    double hi = act.hi;
    if (std::isinf(hi)) {
      hi = old->highest();  // a Relu: the calibrated range of the quantization after it
      if (!(hi > 0)) {
        result.missed(q.describe(), "left alone: its calibrated range has no positive part");
        return false;
      }
    }
    QuantParams wanted = paramsFor(hi, &*old);
    if (wanted.sameAs(*old)) {
      result.statistics.add("already-set");
      return true;
    }
    std::vector<Node*> group{&q};
    group.insert(group.end(), dqs->begin(), dqs->end());
    qdq::writeQuantParams(group, wanted, act.output->name());
    result.statistics.add("rewritten");
    result.applied(q.describe(), fmt::format("{} output: {} instead of {}", act.form,
                                             wanted.describe(), old->describe()));
    return true;
  }

  /// ONNX Runtime's QDQ models also quantize what a ReLU6 reads (Conv -> Q -> DQ -> Clip), often
  /// with the same symmetric int8 step; that rounding would stay as coarse as before. When that
  /// quantization feeds nothing but the activation, only its [lo, hi] part ever matters, so it
  /// takes the activation's new parameters too (the two then form a DQ -> Q pair with equal
  /// parameters, which propagate-scales removes).
  void rewriteInputQuantization(const BoundedActivation& act, const std::vector<Node*>& qs,
                                PassResult& result) {
    Node* dq = act.input->producer();
    if (!qdq::isDequantize(dq) || dq->input(0) == nullptr) return;
    Node* q = dq->input(0)->producer();
    if (!qdq::isQuantize(q)) return;
    std::optional<QuantParams> wanted = qdq::readQuantParams(*qs.front());
    for (Node* other : qs) {
      std::optional<QuantParams> p = qdq::readQuantParams(*other);
      if (!wanted || !p || !p->sameAs(*wanted)) return;
    }
    std::optional<QuantParams> old = qdq::readQuantParams(*q);
    std::optional<std::vector<Node*>> dqs = qdq::dequantizersOf(*q);
    if (!old || !old->perTensor() || !dqs || old->sameAs(*wanted)) return;
    for (Node* reader : *dqs) {
      const Value* out = reader->output(0);
      if (out->isGraphOutput()) return;
      for (const Use& use : out->uses()) {
        if (std::find(act.nodes.begin(), act.nodes.end(), use.user) == act.nodes.end()) {
          result.missed(q->describe(), fmt::format("kept as {}: {} also reads it", old->describe(),
                                                   use.user->describe()));
          return;
        }
      }
    }
    std::vector<Node*> group{q};
    group.insert(group.end(), dqs->begin(), dqs->end());
    qdq::writeQuantParams(group, *wanted, q->output(0)->name());
    result.statistics.add("inputs-rewritten");
    result.applied(q->describe(), fmt::format("quantizes only what the {} reads: {} instead of {}",
                                              act.form, wanted->describe(), old->describe()));
  }

  Node* insertPair(const BoundedActivation& act) {
    Node* last = act.nodes.back();
    Graph& graph = *last->graph();
    Value* x = act.output;
    std::string baseName = x->name();  // before a graph output's name moves to the new DQ
    Node* q = graph.createNode("QuantizeLinear", {x}, 1, last->next());
    Node* dq = graph.createNode("DequantizeLinear", {q->output(0)}, 1, q->next());
    q->output(0)->setName(graph.model().uniqueValueName(baseName + "_quantized"));
    dq->output(0)->setName(graph.model().uniqueValueName(baseName + "_dequantized"));
    q->output(0)->setType(x->type());
    dq->output(0)->setType(x->type());
    DataType scaleType = DataType::Float;
    if (x->type().isTensor() && isFloatingPoint(x->type().elemType)) {
      scaleType = x->type().elemType;
    }
    QuantParams p = paramsFor(act.hi, nullptr);
    p.scaleType = scaleType;
    x->replaceAllUsesExcept(dq->output(0), q);
    std::vector<Node*> group{q, dq};
    qdq::writeQuantParams(group, p, baseName);
    return q;
  }

  /// ONNX Runtime's rule: the QuantizeLinear clamps to [s*(qmin-zp), s*(qmax-zp)]; when that lies
  /// inside the clip bounds (float epsilon allowed), the clip changes nothing the QuantizeLinear
  /// keeps, and the QuantizeLinear can read the clip's input.
  void removeClipIfCovered(const BoundedActivation& act, const std::vector<Node*>& qs,
                           PassResult& result) {
    if (!act.removable || act.output->isGraphOutput()) {
      result.missed(subjectOf(act), "kept the clip: its values are also read elsewhere");
      return;
    }
    for (const Use& use : act.output->uses()) {
      if (std::find(qs.begin(), qs.end(), use.user) == qs.end() || use.index != 0) {
        result.missed(subjectOf(act), fmt::format("kept the clip: {} reads its output unquantized",
                                                  use.user->describe()));
        return;
      }
    }
    constexpr float kEpsilon = std::numeric_limits<float>::epsilon();
    for (Node* q : qs) {
      std::optional<QuantParams> p = qdq::readQuantParams(*q);
      if (!p) return;
      float lower = static_cast<float>(p->scale()) * static_cast<float>(p->qmin() - p->zeroPoint());
      float upper = static_cast<float>(p->scale()) * static_cast<float>(p->qmax() - p->zeroPoint());
      float lo = static_cast<float>(act.lo);
      float hi =
          std::isinf(act.hi) ? std::numeric_limits<float>::infinity() : static_cast<float>(act.hi);
      if (kEpsilon < lo - lower || kEpsilon < upper - hi) {
        result.missed(subjectOf(act),
                      fmt::format("kept the clip: {} covers [{:g}, {:g}], beyond [{:g}, {:g}]",
                                  q->describe(), lower, upper, lo, hi));
        return;
      }
    }
    std::string subject = subjectOf(act);
    for (Node* q : qs) q->setInput(0, act.input);
    fold::eraseIfUnused(act.output);
    result.statistics.add("clips-removed");
    result.applied(subject, fmt::format("removed ({}): the quantization after it clamps to the "
                                        "same range, and now reads '{}'",
                                        act.form, act.input->name()));
  }

  TargetOption target_option_{*this};
  ListOption<std::string> ranges_{*this,
                                  "ranges",
                                  {"relu6"},
                                  "Activations to quantize over their own range: relu6, relu "
                                  "(range from the quantization after it), sigmoid, hardsigmoid"};
  Option<bool> quantize_unquantized_{
      *this, "quantize-unquantized", false,
      "Also quantize bounded activations whose output is not quantized yet"};
  Target target_;
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("relu6-asym", QOPT_VERSION_STRING, qopt::Relu6AsymPass)
