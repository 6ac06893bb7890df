// convert-opset{to=N}: converts the default-domain opset to N, up or down, with every op's meaning
// kept (OpsetConverter.h says how); a node that cannot be converted exactly stops the pass with an
// error naming it. insert-qdq and static-quant raise the opset through the same converter when
// they need a newer one.
#include <fmt/format.h>

#include "qopt/ir/Graph.h"
#include "qopt/opset/OpsetConverter.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

class ConvertOpsetPass : public Pass {
 public:
  ConvertOpsetPass()
      : Pass("convert-opset",
             "Converts the model to another opset (7 to 21), rewriting the ops whose meaning "
             "changed on the way") {}

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    opset::ConversionResult conversion = opset::convertOpset(model, *to_);
    result.statistics["nodes-rewritten"] = static_cast<int64_t>(conversion.rewrites.size());
    for (const auto& [subject, what] : conversion.rewrites) result.applied(subject, what);
    if (conversion.from != conversion.to) {
      result.note("model", fmt::format("default opset {} -> {}", conversion.from, conversion.to));
    }
    result.changed = conversion.from != conversion.to;
    return result;
  }

 private:
  Option<int64_t> to_{*this, "to", 13, "The opset to convert to (7 to 21)"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("convert-opset", QOPT_VERSION_STRING, qopt::ConvertOpsetPass)
