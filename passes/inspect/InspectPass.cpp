// inspect: a read-only pass that publishes, per compute layer, the precision it will run in on
// TensorRT and the share of multiply-accumulates in INT8 (the same as `qopt inspect`), so that a
// pipeline can record it at any point; with print=true the table goes to stderr too.
#include <sstream>

#include "qopt/analysis/Inspect.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/qdq/SmallLayers.h"

namespace qopt {
namespace {

class InspectPass : public Pass {
 public:
  InspectPass()
      : Pass("inspect",
             "Reports the precision each compute layer runs in on TensorRT and the INT8 share "
             "of MACs (read-only)") {}

  PassResult run(Model& model, PassContext& context) override {
    analysis::InspectResult inspected =
        analysis::inspectGraph(model.graph(), analysis::ShapeRequest::from(context));
    qdq::noteSmallLayers(inspected);
    Json published = analysis::inspectJson(inspected);
    if (!(*key_).empty()) {
      context.results()[*key_] = std::move(published);
    }
    if (*print_) {
      std::ostringstream table;
      analysis::printInspectTable(inspected, table);
      context.diagnostics().report(table.str());
    }
    PassResult result;
    result.statistics["layers"] = static_cast<int64_t>(inspected.layers.size());
    result.statistics["int8-layers"] = inspected.int8.layers;
    if (inspected.fp8.layers > 0) result.statistics["fp8-layers"] = inspected.fp8.layers;
    result.statistics["fp16-layers"] = inspected.fp16.layers;
    result.statistics["fp32-layers"] = inspected.fp32.layers;
    result.statistics["int8-mac-permille"] =
        static_cast<int64_t>(inspected.int8MacShare() * 1000.0 + 0.5);
    for (const analysis::LayerInfo& layer : inspected.layers) {
      if (layer.precision == analysis::Precision::Int8 ||
          layer.precision == analysis::Precision::Fp8) {
        continue;
      }
      result.note(layer.node->describe(),
                  std::string(analysis::precisionName(layer.precision)) + ": " + layer.reason);
    }
    return result;
  }

 private:
  Option<bool> print_{*this, "print", false, "Also print the table on stderr"};
  Option<std::string> key_{*this, "key", "inspect",
                           "Name under which the results are published (reports read 'inspect')"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("inspect", QOPT_VERSION_STRING, qopt::InspectPass)
