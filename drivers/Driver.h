// What the qopt command does once its command line is parsed.
#pragma once

#include <iosfwd>

#include "CommandLine.h"

namespace qopt {

/// Runs qopt; returns the exit code. Errors are thrown as qopt::Error (the caller prints them).
int runDriver(const DriverOptions& options, std::ostream& out, std::ostream& err);

}  // namespace qopt
