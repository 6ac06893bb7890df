// `qopt inspect MODEL [--json] [--input-shapes=...] [--calib-data=...] [--seed=N]`: the
// precision each compute layer will run in on TensorRT, as a table or JSON on stdout.
#pragma once

#include <iosfwd>

namespace qopt {

/// `argv[0]` is "inspect". Returns the exit code; errors are thrown as qopt::Error.
int runInspectCommand(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace qopt
