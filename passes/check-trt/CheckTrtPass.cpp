// check-trt: a read-only pass that lists every construct TensorRT would reject or silently read
// differently (zero points, UINT8, scales, per-channel axes, INT32 biases, opset), the placement
// that leaves a Q/DQ model mostly in float or slower than FP16, and the builder flags the model
// needs, for one TensorRT version, and for FP8 models the version and GPU FP8 needs (Fp8Checks.h).
// One line per finding (severity, id, node, cause, fix) on the diagnostics stream, statistics per
// id, and the findings under results["check-trt"]. With strict=true any error is a failed check
// (exit code 1); the model is never changed.
#include <fmt/format.h>

#include <optional>

#include "BuildFlags.h"
#include "ControlFlowChecks.h"
#include "Finding.h"
#include "Fp8Checks.h"
#include "PlacementChecks.h"
#include "QdqChecks.h"
#include "qopt/analysis/PrecisionReport.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

using checktrt::Finding;

class CheckTrtPass : public Pass {
 public:
  CheckTrtPass()
      : Pass("check-trt",
             "Lists what TensorRT would reject or misread in the model, and the build flags it "
             "needs (read-only)") {}

  bool isCheck() const override { return true; }

  void validateOptions() const override {
    if (!computeCapability_->empty()) {
      try {
        checktrt::parseComputeCapability(*computeCapability_);
      } catch (const Error& e) {
        failOption("compute-capability", e.cause());
      }
    }
    if (*minChannels_ < 0) failOption("min-channels", "must be 0 (no rule) or positive");
    if ((*version_).empty()) return;
    try {
      parseTrtVersion(*version_);
    } catch (const Error& e) {
      failOption("version", e.cause());
    }
  }

  PassResult run(Model& model, PassContext& context) override {
    const TrtVersion version = resolveVersion(context);
    // The same classification and MAC count as `qopt inspect`, at the shapes the user gave.
    const analysis::PrecisionReport precisions =
        analysis::reportPrecisions(model.graph(), analysis::ShapeRequest::from(context));
    std::vector<Finding> findings;
    checktrt::checkQdqNodes(model, version, findings);
    checktrt::checkControlFlow(model, findings);
    const checktrt::PlacementSummary placement =
        checktrt::checkPlacement(model.graph(), precisions, findings, *minChannels_);
    std::optional<checktrt::ComputeCapability> gpu;
    if (!computeCapability_->empty()) {
      gpu = checktrt::parseComputeCapability(*computeCapability_);
    }
    checktrt::checkFp8(model.graph(), precisions, version, gpu, findings);
    const std::string flags = checktrt::buildFlagsText(version, placement);
    const checktrt::FindingCounts counts = checktrt::countFindings(findings);

    context.diagnostics().report(
        reportText(version, findings, counts, placement, precisions, flags));
    context.results()["check-trt"] =
        resultsJson(version, findings, counts, placement, precisions, flags);

    PassResult result;
    result.statistics["errors"] = counts.errors;
    result.statistics["warnings"] = counts.warnings;
    for (const auto& [id, count] : counts.perId) result.statistics[id] = count;
    for (const Finding& f : findings) {
      std::string subject = f.node.empty() ? "model" : fmt::format("node '{}' ({})", f.node, f.op);
      result.note(std::move(subject),
                  fmt::format("{} [{}]: {}", checktrt::severityName(f.severity), f.id, f.cause));
    }
    if (*strict_ && counts.errors > 0) fail(model, version, findings, counts);
    return result;
  }

 private:
  TrtVersion resolveVersion(const PassContext& context) const {
    if (!(*version_).empty()) return parseTrtVersion(*version_);
    return target_.resolve(context).trtVersion;
  }

  static std::string reportText(const TrtVersion& version, const std::vector<Finding>& findings,
                                const checktrt::FindingCounts& counts,
                                const checktrt::PlacementSummary& placement,
                                const analysis::PrecisionReport& precisions,
                                const std::string& flags) {
    std::string text = fmt::format("qopt: check-trt: TensorRT {}: {}, {}, {}\n", version.str(),
                                   checktrt::countOf(counts.errors, "error"),
                                   checktrt::countOf(counts.warnings, "warning"),
                                   checktrt::countOf(counts.notes, "note"));
    for (const Finding& f : findings) text += checktrt::formatFinding(f) + "\n";
    if (!counts.perId.empty()) {
      text += "findings per id:";
      for (const auto& [id, count] : counts.perId) text += fmt::format(" {}={}", id, count);
      text += "\n";
    }
    text += "placement: " + checktrt::placementText(placement) + "\n";
    text += "build flags: " + flags + "\n";
    text += "precision: " + analysis::precisionSummaryLine(precisions) + "\n";
    text += "precision: " + analysis::otherOpsLine(precisions) + "\n";
    for (const std::string& caveat : analysis::precisionCaveats(precisions)) {
      text += caveat + "\n";
    }
    return text;
  }

  static Json resultsJson(const TrtVersion& version, const std::vector<Finding>& findings,
                          const checktrt::FindingCounts& counts,
                          const checktrt::PlacementSummary& placement,
                          const analysis::PrecisionReport& precisions, const std::string& flags) {
    Json json = Json::object();
    json.append("tensorrt", version.str());
    json.append("errors", counts.errors);
    json.append("warnings", counts.warnings);
    json.append("notes", counts.notes);
    Json perId = Json::object();
    for (const auto& [id, count] : counts.perId) perId.append(id, count);
    json.append("counts", std::move(perId));
    Json list = Json::array();
    for (const Finding& f : findings) list.push(checktrt::findingJson(f));
    json.append("findings", std::move(list));
    Json layers = Json::object();
    layers.append("weighted", placement.weightedLayers);
    layers.append("int8", placement.int8Layers);
    if (placement.fp8Layers > 0) layers.append("fp8", placement.fp8Layers);
    if (placement.int4WeightOnlyLayers > 0) {
      layers.append("int4-weight-only", placement.int4WeightOnlyLayers);
    }
    Json floatNames = Json::array();
    for (const std::string& name : placement.floatLayers) floatNames.push(name);
    layers.append("float", std::move(floatNames));
    json.append("layers", std::move(layers));
    json.append("build-flags", flags);
    json.append("precision", analysis::precisionSummaryJson(precisions));
    return json;
  }

  [[noreturn]] static void fail(const Model& model, const TrtVersion& version,
                                const std::vector<Finding>& findings,
                                const checktrt::FindingCounts& counts) {
    const Finding* first = nullptr;
    for (const Finding& f : findings) {
      if (f.severity == checktrt::Severity::Error) {
        first = &f;
        break;
      }
    }
    std::string subject =
        first->node.empty() ? std::string() : fmt::format("node '{}' ({})", first->node, first->op);
    throw Error(ErrorKind::Verification, model.sourcePath, subject,
                fmt::format("check-trt: {} error{} for TensorRT {} (first: [{}] {})", counts.errors,
                            counts.errors == 1 ? "" : "s", version.str(), first->id, first->cause));
  }

  Option<std::string> version_{*this, "version", "",
                               "TensorRT version to check for, e.g. 8.6, 10.3, 11.0 (empty: the "
                               "target's)"};
  Option<bool> strict_{*this, "strict", false, "Fail (exit code 1) when any error is found"};
  Option<std::string> computeCapability_{
      *this, "compute-capability", "",
      "The target GPU's compute capability, e.g. 8.9, for FP8 (empty: an FP8 model gets a note)"};
  Option<int64_t> minChannels_{
      *this, "min-channels", qdq::kDefaultMinChannels,
      "Report quantized Convs with fewer input or output channels, and Gemm/MatMul with K or N "
      "below this, where TensorRT gains nothing (0: do not)"};
  TargetOption target_{*this};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("check-trt", QOPT_VERSION_STRING, qopt::CheckTrtPass)
