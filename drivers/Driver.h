// What the qopt command does once its command line is parsed.
#pragma once

#include <iosfwd>

#include "CommandLine.h"
#include "qopt/pass/Diagnostics.h"
#include "qopt/pass/PassRegistry.h"
#include "qopt/pass/PluginLoader.h"

namespace qopt {

/// The passes a run can use: the built-in modules first, then QOPT_PLUGIN_PATH's, then
/// options.pluginFiles, all through `loader` (which must outlive the registry): a duplicate pass
/// name anywhere is an error naming both modules.
PassRegistry loadPasses(const DriverOptions& options, PluginLoader& loader, Diagnostics& diag);

/// Runs qopt; returns the exit code. Errors are thrown as qopt::Error (the caller prints them).
int runDriver(const DriverOptions& options, std::ostream& out, std::ostream& err);

}  // namespace qopt
