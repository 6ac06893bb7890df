// static-quant: turns ONNX Runtime's dynamic quantization (DynamicQuantizeLinear ->
// MatMulInteger / ConvInteger -> Cast -> Mul by x_scale * w_scale) into static Q/DQ: a float
// MatMul or Conv reading a QuantizeLinear -> DequantizeLinear pair on its activation, whose scale
// comes from calibration (same calibrators as insert-qdq), and a DequantizeLinear of the stored
// integer weights with their original scales. Deployment targets without dynamic quantization
// (TensorRT) can then run the model in INT8, and the activation scale no longer costs a
// reduction per inference.
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "DynamicPattern.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Error.h"
#include "qopt/opset/OpsetUpgrade.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/qdq/Calibrate.h"
#include "qopt/qdq/CalibrationOptions.h"
#include "qopt/qdq/QdqEmitter.h"
#include "qopt/qdq/QuantNumbers.h"

namespace qopt {
namespace {

using quant::CalibratorKind;
using staticquant::DynamicQuantized;

// The stored weight as static Q/DQ wants it: int8 with zero points 0 and per-tensor or
// per-output-channel scales.
struct StaticWeight {
  Tensor values;
  std::vector<float> scales;
  int64_t axis = -1;
  bool requantized = false;
};

StaticWeight staticWeight(const DynamicQuantized& match, const std::string& what) {
  const Tensor& q = match.weightValues;
  int64_t rank = static_cast<int64_t>(q.dims().size());
  bool conv = match.integerOp->is("ConvInteger");
  int64_t outputAxis = conv ? 0 : rank - 1;
  std::vector<float> scales = match.weightScale.toFloats();
  int64_t channels = rank > 0 ? q.dims()[static_cast<size_t>(outputAxis)] : 1;
  StaticWeight out;
  if (scales.size() > 1) {
    if (static_cast<int64_t>(scales.size()) != channels) {
      throw Error(ErrorKind::Input, "", what,
                  fmt::format("{} weight scales for {} output channels", scales.size(), channels));
    }
    out.axis = outputAxis;
  }
  std::vector<int64_t> zeroPoints;
  if (match.weightZeroPoint) zeroPoints = match.weightZeroPoint->toInt64s();
  if (zeroPoints.size() > 1 && zeroPoints.size() != scales.size()) {
    throw Error(ErrorKind::Input, "", what, "the weight zero point and scale differ in size");
  }
  bool zeroCentred = true;
  for (int64_t zp : zeroPoints) zeroCentred = zeroCentred && zp == 0;
  if (q.dataType() == DataType::Int8 && zeroCentred) {
    out.values = q;
    out.scales = std::move(scales);
    return out;
  }
  // uint8 or non-zero zero points: neither TensorRT nor int8 symmetric Q/DQ takes them, so
  // the weight is dequantized exactly and quantized again, int8 symmetric per output channel.
  std::vector<int64_t> values = q.toInt64s();
  std::vector<double> dequantized(values.size());
  int64_t inner = 1;
  for (int64_t d = outputAxis + 1; d < rank; ++d) inner *= q.dims()[static_cast<size_t>(d)];
  for (size_t i = 0; i < values.size(); ++i) {
    size_t c =
        scales.size() > 1 ? static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels) : 0;
    int64_t zp = zeroPoints.empty() ? 0 : zeroPoints[zeroPoints.size() > 1 ? c : 0];
    dequantized[i] = static_cast<double>(values[i] - zp) * static_cast<double>(scales[c]);
  }
  Tensor floats = Tensor::fromDoubles(DataType::Float, q.dims(), dequantized);
  qdq::QuantizedWeight requantized = qdq::quantizeWeight(floats, rank > 1 ? outputAxis : -1, what);
  out.values = std::move(requantized.values);
  out.scales = std::move(requantized.scales);
  out.axis = requantized.axis;
  out.requantized = true;
  return out;
}

class StaticQuantPass : public Pass {
 public:
  StaticQuantPass()
      : Pass("static-quant",
             "Replaces dynamic quantization (DynamicQuantizeLinear with MatMulInteger/ConvInteger) "
             "by calibrated static Q/DQ on float MatMul/Conv") {}

  std::vector<ModelProperty> provides() const override { return {ModelProperty::Quantized}; }

  void validateOptions() const override { calibration_.validate(*this); }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    result.statistics["dynamic-ops-found"] = 0;
    result.statistics["converted"] = 0;
    result.statistics["activation-qdq-pairs"] = 0;
    Graph& graph = model.graph();
    std::vector<DynamicQuantized> matches;
    for (Node* node : graph.allNodes()) {  // bodies included: each op converted where it is
      if (!node->is("MatMulInteger") && !node->is("ConvInteger")) continue;
      result.statistics.add("dynamic-ops-found");
      std::string why;
      if (std::optional<DynamicQuantized> match = staticquant::matchDynamicQuantized(node, why)) {
        matches.push_back(std::move(*match));
      } else {
        result.missed(node->describe(), "left dynamic: " + why);
      }
    }
    if (matches.empty()) return result;

    Target target = target_.resolve(context);
    std::unordered_map<const Node*, size_t> order;
    size_t position = 0;
    for (Node* node : graph.allNodes()) order[node] = position++;

    // Activations in first-use order; each gets one Q/DQ pair in each graph that reads it (a
    // body reading a value of an enclosing graph has its own), before the earliest
    // DynamicQuantizeLinear there, shared by every op of that graph that read it.
    using Site = std::pair<std::string, const Graph*>;
    std::vector<std::pair<Value*, const Graph*>> activations;
    std::map<Site, Node*> firstQuantize;
    for (const DynamicQuantized& match : matches) {
      const Graph* where = match.dynamicQuantize->graph();
      auto [it, inserted] =
          firstQuantize.try_emplace(Site{match.input->name(), where}, match.dynamicQuantize);
      if (inserted) {
        activations.emplace_back(match.input, where);
      } else if (order.at(match.dynamicQuantize) < order.at(it->second)) {
        it->second = match.dynamicQuantize;
      }
    }
    std::vector<std::string> names;
    for (const auto& [value, where] : activations) names.push_back(value->name());
    qdq::CalibrationRun calibration =
        qdq::calibrate(model, names, context, static_cast<size_t>(*calibration_.samples), name(),
                       static_cast<int>(*calibration_.threads));

    std::vector<StaticWeight> weights;
    bool perAxis = false;
    for (const DynamicQuantized& match : matches) {
      weights.push_back(staticWeight(match, fmt::format("weight '{}' of {}", match.weight->name(),
                                                        match.integerOp->describe())));
      perAxis = perAxis || weights.back().axis >= 0;
    }
    if (perAxis) {
      qdq::raiseOpset(model, qdq::kPerAxisOpset, "per-channel weight scales", result);
    }

    quant::CalibratorSpec spec;
    spec.kind = *calibrator_;
    spec.percentile = *calibration_.percentile;
    qdq::ActivationScheme scheme = target.kind == TargetKind::Ort
                                       ? qdq::ActivationScheme::UnsignedAsymmetric
                                       : qdq::ActivationScheme::SignedSymmetric;
    std::vector<quant::ScaleEntry> scaleEntries;
    std::map<Site, Value*> dequantizedInputs;
    std::set<std::string> entered;  // one scale entry per value
    for (const auto& [x, where] : activations) {
      qdq::ActivationParams params =
          qdq::activationParams(calibration.statistics.at(x->name()), spec, scheme);
      if (entered.insert(x->name()).second) {
        scaleEntries.push_back(
            qdq::activationScaleEntry(x->name(), params, *calibrator_, calibration.samples));
      }
      Node* first = firstQuantize.at(Site{x->name(), where});
      dequantizedInputs[Site{x->name(), where}] =
          qdq::insertActivationPair(*first->graph(), x, params, first);
      result.statistics.add("activation-qdq-pairs");
      result.applied(fmt::format("tensor '{}'", x->name()),
                     fmt::format("static scale {} from {} calibration", params.scale,
                                 quant::calibratorName(*calibrator_)));
    }

    std::vector<Value*> replaced;
    for (size_t i = 0; i < matches.size(); ++i) {
      const DynamicQuantized& match = matches[i];
      StaticWeight& weight = weights[i];
      Node* before = match.output->producer();
      std::string what = fmt::format("weight '{}'", match.weight->name());
      quant::ScaleEntry entry;
      entry.tensor = match.weight->name();
      entry.scale.assign(weight.scales.begin(), weight.scales.end());
      for (float s : weight.scales) entry.amax.push_back(static_cast<double>(s) * 127.0);
      entry.zeroPoint.assign(weight.scales.size(), 0);
      if (weight.axis >= 0) entry.axis = weight.axis;
      entry.calibrator = "weights";
      scaleEntries.push_back(std::move(entry));
      if (weight.requantized) {
        result.note(what,
                    "uint8 or non-zero zero point: dequantized and requantized as int8 "
                    "symmetric");
      }
      Graph& here = *before->graph();
      Value* dequantizedWeight = qdq::insertConstantDequantize(
          here, match.weight->name(), weight.values, weight.scales, weight.axis, before);
      bool conv = match.integerOp->is("ConvInteger");
      Node* floatOp = here.createEmptyNode(conv ? "Conv" : "MatMul", {}, before);
      const std::string& oldName = match.integerOp->name();
      floatOp->setName(
          model.uniqueNodeName(oldName.empty() ? floatOp->opType() : oldName + "_float"));
      floatOp->addInput(
          dequantizedInputs.at(Site{match.input->name(), match.dynamicQuantize->graph()}));
      floatOp->addInput(dequantizedWeight);
      if (conv) {
        ValueMap none;
        for (const Attribute& attr : match.integerOp->attributes()) {
          floatOp->setAttr(attr.clone(floatOp, none));
        }
      }
      Value* out = floatOp->addOutput(model.uniqueValueName(match.output->name() + "_static"));
      out->setType(match.output->type());
      std::string subject = match.integerOp->describe();
      match.output->replaceAllUsesWith(out);
      replaced.push_back(match.output);
      result.statistics.add("converted");
      result.applied(subject, fmt::format("now {} on static Q/DQ", floatOp->opType()));
    }
    fold::eraseIfUnused(replaced);
    result.changed = true;
    if (!calibration_.scales->empty()) quant::writeScales(scaleEntries, *calibration_.scales);
    if (!calibration_.cache->empty())
      qdq::writeTensorRtCache(scaleEntries, target, *calibrator_, *calibration_.cache);
    return result;
  }

 private:
  EnumOption<CalibratorKind> calibrator_{*this,
                                         "calibrator",
                                         CalibratorKind::Entropy,
                                         "Activation calibrator",
                                         {{CalibratorKind::Max, "max"},
                                          {CalibratorKind::Percentile, "percentile"},
                                          {CalibratorKind::Entropy, "entropy"},
                                          {CalibratorKind::Mse, "mse"}}};
  qdq::CalibrationOptions calibration_{*this};
  TargetOption target_{*this};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("static-quant", QOPT_VERSION_STRING, qopt::StaticQuantPass)
