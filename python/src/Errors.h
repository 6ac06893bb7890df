// qopt::Error as Python sees it: qopt.Error and its subclasses (defined in qopt/_errors.py), with
// the kind and exit code the command would report.
#pragma once

#include <string>

#include "qopt/ir/Error.h"

namespace qopt::python {

/// How qopt.Error.kind spells `kind`: "input", "usage", "verification", "internal".
const char* errorKindName(ErrorKind kind);

/// `error` with its file named `displayName` where it names `path`: a model the caller gave as
/// bytes goes through a temporary file, whose name means nothing to them.
Error renamedFile(const Error& error, const std::string& path, const std::string& displayName);

}  // namespace qopt::python
