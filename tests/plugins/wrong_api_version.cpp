// A module built for another plugin API version: the loader must refuse it, naming both versions.
#include "qopt/pass/PassPlugin.h"

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION + 41, "wrong-api-version", "1.0", [](qopt::PassRegistry&) {}};
}
