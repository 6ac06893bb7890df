// --list-passes: every registered pass with its summary and options (type, default, help).
#pragma once

#include <iosfwd>

#include "qopt/pass/PassRegistry.h"

namespace qopt {

void printPassList(const PassRegistry& registry, std::ostream& out, bool showOrigins);

}  // namespace qopt
