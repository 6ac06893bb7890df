// The pass module (plugin) interface. Built-in passes and third-party passes use the same one.
//
// A module is a shared library exporting one C function, qoptGetPassPluginInfo, that returns
// the plugin API version it was built against, its name and version, and a callback that adds
// its passes to a registry:
//
//   #include "qopt/pass/PassPlugin.h"
//
//   QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
//     return {QOPT_PLUGIN_API_VERSION, "my-passes", "1.0",
//             [](qopt::PassRegistry& registry) { registry.add<MyPass>(); }};
//   }
//
// A module of one pass can write the same with QOPT_SINGLE_PASS_PLUGIN("my-pass", "1.0", MyPass).
//
// Build it with CMake: find_package(qopt) then qopt_add_pass_plugin(my-passes SOURCES ...); the
// module links only qopt::qopt. qopt loads modules with RTLD_NOW | RTLD_LOCAL and never unloads
// them. A module built for another QOPT_PLUGIN_API_VERSION is refused with a clear error.
// The callback may throw (qopt::Error or any std::exception); the loader reports it naming the
// module and registers none of its passes.
#pragma once

#include <cstdint>

#include "qopt/pass/PassRegistry.h"

/// Bumped whenever the pass API (these headers, or the IR they expose) changes incompatibly.
#define QOPT_PLUGIN_API_VERSION 3

/// The exported entry point's name, for dlsym.
#define QOPT_PLUGIN_ENTRY_POINT_NAME "qoptGetPassPluginInfo"

#define QOPT_PASS_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
struct QoptPassPluginInfo {
  /// QOPT_PLUGIN_API_VERSION at the module's build time; first, so any version can read it.
  uint32_t apiVersion;
  const char* pluginName;
  const char* pluginVersion;
  void (*registerPasses)(qopt::PassRegistry& registry);
};
}

/// Defines the entry point of a module that holds one pass: `pluginName` and `pluginVersion` as
/// in QoptPassPluginInfo, PassType the pass class the registry callback adds. Written once here so
/// that every such module's entry point is the same code.
#define QOPT_SINGLE_PASS_PLUGIN(pluginName, pluginVersion, PassType)         \
  QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {       \
    return {QOPT_PLUGIN_API_VERSION, pluginName, pluginVersion,              \
            [](qopt::PassRegistry& registry) { registry.add<PassType>(); }}; \
  }

using QoptGetPassPluginInfoFn = QoptPassPluginInfo (*)();
