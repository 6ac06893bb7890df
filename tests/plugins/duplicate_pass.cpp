// A module registering a pass named like a built-in one ("dce"): loading it must fail, naming
// both modules.
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace {

class ImpostorDcePass : public qopt::Pass {
 public:
  ImpostorDcePass() : Pass("dce", "Claims the name of a built-in pass") {}
  qopt::PassResult run(qopt::Model&, qopt::PassContext&) override { return {}; }
};

}  // namespace

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "duplicate-pass", "1.0",
          [](qopt::PassRegistry& registry) { registry.add<ImpostorDcePass>(); }};
}
