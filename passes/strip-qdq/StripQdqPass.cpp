// strip-qdq: returns a Q/DQ model to float. Every QuantizeLinear -> DequantizeLinear pair on an
// activation goes (its readers read the float tensor, through a Relu or Clip where the quantized
// range clamped it), weights and biases behind DequantizeLinear become float initializers, and the
// activation scales that were removed are written as a TensorRT calibration cache and a scales
// file, so that an implicit-INT8 build of the float model uses the same ranges. Integer ops
// (QLinearConv, MatMulInteger, ...) are not Q/DQ pairs on a float path: left alone, reported.
#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "ObservedRanges.h"
#include "QuantRange.h"
#include "Stripper.h"
#include "qopt/constants/ConstantCone.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/pass/Target.h"
#include "qopt/quant/CalibCache.h"
#include "qopt/quant/ScalesFile.h"

namespace qopt {
namespace {

bool isIntegerOp(const Node& node) {
  static constexpr std::string_view kOps[] = {"QLinearConv",
                                              "QLinearMatMul",
                                              "MatMulInteger",
                                              "ConvInteger",
                                              "DynamicQuantizeLinear",
                                              "QLinearAdd",
                                              "QLinearMul",
                                              "QLinearConcat",
                                              "QLinearGlobalAveragePool",
                                              "QLinearSigmoid",
                                              "QLinearLeakyRelu",
                                              "QLinearAveragePool",
                                              "QLinearSoftmax",
                                              "QGemm",
                                              "DynamicQuantizeMatMul"};
  const bool known = node.domain().empty() || node.domain() == "com.microsoft";
  return known && std::find(std::begin(kOps), std::end(kOps), node.opType()) != std::end(kOps);
}

class StripQdqPass : public Pass {
 public:
  StripQdqPass()
      : Pass("strip-qdq",
             "Removes QuantizeLinear/DequantizeLinear pairs and writes their scales as a "
             "TensorRT calibration cache") {}

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    for (const char* counter :
         {"pairs-removed", "weights-folded", "weights-restored", "relu-inserted", "clip-inserted",
          "dequantize-kept", "integer-ops-left"}) {
      result.statistics[counter] = 0;
    }
    // Scales that QAT exports compute in the graph become the constants they always are.
    result.statistics["parameters-folded"] = fold::foldQdqParameterCones(model, result);
    std::vector<Node*> dequantizes;
    std::vector<Node*> integerOps;
    model.graph().walk([&](Node* node) {
      if (node->opType() == "DequantizeLinear") dequantizes.push_back(node);
      if (isIntegerOp(*node)) integerOps.push_back(node);
    });
    stripqdq::ObservedRanges observed;
    if (*clamp_ && *samples_ > 0 && !context.data.calibData.empty()) {
      observed =
          stripqdq::observeQuantizedInputs(model, context, static_cast<size_t>(*samples_), result);
    }
    stripqdq::Stripper stripper(model, *clamp_, &observed, result);
    for (Node* dq : dequantizes) result.changed |= stripper.strip(*dq);

    for (Node* node : integerOps) {
      result.missed(node->describe(), "left alone: an integer op, not a Q/DQ pair on a float path");
    }
    result.statistics["integer-ops-left"] = static_cast<int64_t>(integerOps.size());
    if (!integerOps.empty()) {
      context.diagnostics().warning(fmt::format(
          "strip-qdq: {} integer op(s) left as they are (first: {}); the model is not float",
          integerOps.size(), integerOps.front()->describe()));
    }
    int64_t quantizeLeft = 0;
    model.graph().walk([&](Node* node) {
      if (node->opType() != "QuantizeLinear") return;
      ++quantizeLeft;
      for (const Node* user : node->output(0)->users()) {
        if (user->opType() != "DequantizeLinear") {
          result.missed(node->describe(),
                        fmt::format("kept: {} reads its integers", user->describe()));
          break;
        }
      }
    });
    result.statistics["quantize-left"] = quantizeLeft;

    writeOutputs(stripper, context, result);
    return result;
  }

 private:
  void writeOutputs(const stripqdq::Stripper& stripper, PassContext& context,
                    PassResult& result) const {
    quant::CalibrationCache cache;
    const Target target = target_.resolve(context);
    cache.versionCode = target.trtVersion.cacheVersionCode();
    cache.algorithm = std::string(quant::cacheAlgorithmFor(""));
    std::vector<quant::ScaleEntry> entries;
    for (const stripqdq::RemovedScale& removed : stripper.removedScales()) {
      const stripqdq::QuantParams& p = removed.params;
      quant::ScaleEntry entry = scaleEntry(removed.value->name(), p, "");
      entries.push_back(entry);
      if (!p.perTensor()) {
        result.missed(fmt::format("tensor '{}'", removed.value->name()),
                      "not in the calibration cache: per-axis activation scales have no entry");
        continue;
      }
      cache.entries.push_back(
          {removed.value->name(), static_cast<float>(stripqdq::cacheAmax(p, 0) / 127.0)});
    }
    for (const auto& [name, p] : stripper.weightScales()) {
      entries.push_back(scaleEntry(name, p, "weights"));
    }
    result.statistics["cache-entries"] = static_cast<int64_t>(cache.entries.size());
    Json published = Json::object();
    published["cache-entries"] = Json(static_cast<int64_t>(cache.entries.size()));
    if (!cache_->empty()) {
      quant::writeCalibrationCache(cache, *cache_);
      published["cache"] = Json(*cache_);
    }
    if (!scales_->empty()) {
      quant::writeScales(entries, *scales_);
      published["scales"] = Json(*scales_);
    }
    context.results()["strip-qdq"] = std::move(published);
  }

  static quant::ScaleEntry scaleEntry(const std::string& tensor, const stripqdq::QuantParams& p,
                                      std::string calibrator) {
    quant::ScaleEntry entry;
    entry.tensor = tensor;
    for (size_t k = 0; k < p.scales.size(); ++k) entry.amax.push_back(stripqdq::cacheAmax(p, k));
    entry.scale = p.scales;
    entry.zeroPoint = p.zeroPoints;
    entry.type = stripqdq::typeWord(p.type);
    entry.axis = p.axis;
    entry.calibrator = std::move(calibrator);
    return entry;
  }

  Option<std::string> cache_{*this, "cache", "",
                             "Write the removed activation scales as a TensorRT calibration cache "
                             "here (empty: not written)"};
  Option<std::string> scales_{*this, "scales", "",
                              "Write every removed scale (activations and weights) as a qopt "
                              "scales JSON file here (empty: not written)"};
  Option<bool> clamp_{*this, "clamp", true,
                      "Insert a Relu or Clip where the removed quantization clamped a tensor"};
  Option<int64_t> samples_{*this, "samples", 8,
                           "Samples of --calib-data (when given) that show which bounds the "
                           "quantized ranges cut off (0: data not used)"};
  TargetOption target_{*this};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("strip-qdq", QOPT_VERSION_STRING, qopt::StripQdqPass)
