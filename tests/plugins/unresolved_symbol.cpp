// A module that needs a symbol nothing defines: dlopen (RTLD_NOW) fails and the loader must pass
// dlerror()'s text on.
#include "qopt/pass/PassPlugin.h"

extern "C" int qoptTestSymbolThatDoesNotExist();

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  static int value = qoptTestSymbolThatDoesNotExist();
  (void)value;
  return {QOPT_PLUGIN_API_VERSION, "unresolved-symbol", "1.0", [](qopt::PassRegistry&) {}};
}
