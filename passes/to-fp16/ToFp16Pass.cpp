// to-fp16: converts float32 compute to float16 (or bfloat16), keeping op types that are unsafe
// or unsupported in half precision in float32 (OpPolicy.cpp says why for each), with Casts at
// the borders. TensorRT 11 has no FP16 builder flag: the precision must be in the ONNX types.
#include <fmt/format.h>

#include <regex>

#include "qopt/half/Converter.h"
#include "qopt/half/ObservedMagnitudes.h"
#include "qopt/half/OpPolicy.h"
#include "qopt/half/QdqPrecision.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/opset/OpsetUpgrade.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class ToFp16Pass : public Pass {
 public:
  ToFp16Pass()
      : Pass("to-fp16",
             "Converts float32 compute to float16 (or bfloat16), with Casts where float32 stays") {}

  void validateOptions() const override {
    try {
      std::regex check(*blockNodes_);
    } catch (const std::regex_error& e) {
      failOption("block-nodes",
                 fmt::format("'{}' is not a regular expression: {}", *blockNodes_, e.what()));
    }
  }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    for (const char* counter : {"nodes-converted", "nodes-kept-float32", "tensors-converted",
                                "initializers-converted", "constants-converted", "casts-inserted",
                                "cast-pairs-removed", "identity-casts-removed", "values-clamped"}) {
      result.statistics[counter] = 0;
    }
    tofp16::ConversionOptions options;
    options.half = *bfloat16_ ? DataType::BFloat16 : DataType::Float16;
    options.keepIoTypes = *keepIoTypes_;
    options.blockedOps.insert(blockOps_->begin(), blockOps_->end());
    if (!blockNodes_->empty()) options.blockedNodes.emplace(*blockNodes_);
    const int64_t opset = model.opsetVersion("").value_or(0);
    if (*bfloat16_ && opset < 13) {
      throw Error(ErrorKind::Input, model.sourcePath, "opset_import",
                  fmt::format("bfloat16 needs opset 13 or later (the model imports {})", opset));
    }
    options.halfQdq = *halfQdq_ && halfQdqOpset(model, result, context);
    if (*rangeCheck_ && options.half == DataType::Float16) {
      options.observed = tofp16::observeMagnitudes(model, context, result);
    }
    tofp16::Converter converter(model, std::move(options), result);
    converter.run();
    result.changed = result.statistics.get("tensors-converted") > 0 ||
                     result.statistics.get("initializers-converted") > 0 ||
                     result.statistics.get("constants-converted") > 0;
    if (!converter.clamped().empty()) {
      std::string names;
      for (const auto& [name, count] : converter.clamped()) {
        names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", name, count);
      }
      context.diagnostics().warning(
          fmt::format("to-fp16: {} value(s) beyond float16's range clamped to +-65504 in: {}",
                      result.statistics.get("values-clamped"), names));
    }
    Json published = Json::object();
    for (const auto& [name, value] : result.statistics.entries()) published[name] = Json(value);
    context.results()["to-fp16"] = std::move(published);
    return result;
  }

 private:
  // Q/DQ take half scales from opset 19: a model with Q/DQ below it is raised through the opset
  // converter. Where that is refused, the Q/DQ and the layers they feed stay float32 (they keep
  // their INT8 fusion; only the rest runs in half), with a warning.
  bool halfQdqOpset(Model& model, PassResult& result, PassContext& context) const {
    if (!tofp16::hasQdq(model.graph())) return true;
    try {
      qdq::raiseOpset(model, tofp16::kHalfQdqOpset, "half Q/DQ scales", result);
      return true;
    } catch (const Error& e) {
      context.diagnostics().warning(fmt::format(
          "to-fp16: the opset cannot be raised to {} for half Q/DQ scales ({}): Q/DQ and the "
          "layers they feed stay float32",
          tofp16::kHalfQdqOpset, e.what()));
      return false;
    }
  }

  Option<bool> keepIoTypes_{*this, "keep-io-types", true,
                            "Keep float32 graph inputs and outputs (Casts at the interface)"};
  ListOption<std::string> blockOps_{*this, "block-ops", tofp16::defaultBlockedOps(),
                                    "Op types kept in float32"};
  Option<std::string> blockNodes_{*this, "block-nodes", "",
                                  "Keep nodes whose name (an unnamed node: its first output's "
                                  "name) matches this ECMAScript regular expression, searched "
                                  "anywhere in the name, in float32"};
  Option<bool> bfloat16_{*this, "bfloat16", false, "Convert to bfloat16 instead of float16"};
  Option<bool> halfQdq_{*this, "half-qdq", true,
                        "Give QuantizeLinear/DequantizeLinear half scales (raising the opset to "
                        "19), so quantized layers keep their INT8 fusion in a strongly typed "
                        "network; false keeps Q/DQ and the layers they feed in float32"};
  Option<bool> rangeCheck_{*this, "range-check", true,
                           "Run the model once (on --calib-data, else random inputs) and keep "
                           "in float32 the nodes whose tensors come within 2x of float16's "
                           "range"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("to-fp16", QOPT_VERSION_STRING, qopt::ToFp16Pass)
