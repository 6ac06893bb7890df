// A module whose registration throws after adding one pass: the loader must report the module
// and register none of its passes.
#include <stdexcept>

#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace {

class HalfRegisteredPass : public qopt::Pass {
 public:
  HalfRegisteredPass() : Pass("half-registered", "Registered just before the module throws") {}
  qopt::PassResult run(qopt::Model&, qopt::PassContext&) override { return {}; }
};

}  // namespace

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "throwing-registration", "1.0",
          [](qopt::PassRegistry& registry) {
            registry.add<HalfRegisteredPass>();
            throw std::runtime_error("registration exploded on purpose");
          }};
}
