// qopt: reads an ONNX model, runs a pipeline of passes over it and writes the result.
#include <gflags/gflags.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <string_view>

#include "CommandLine.h"
#include "Driver.h"
#include "InspectCommand.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/Version.h"

int main(int argc, char** argv) {
  // Before any pass library loads: Debian's OpenBLAS (quantize-weights links it) is the pthread
  // build, which starts a thread per core at load time that then spins in sched_yield for about
  // a second, taking a core from every run of every pass. With one thread at load it starts
  // none; quantize-weights raises the count when it multiplies.
  setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
  gflags::SetVersionString(qopt::versionString());
  try {
    if (argc > 1 && std::string_view(argv[1]) == "inspect") {
      return qopt::runInspectCommand(argc - 1, argv + 1, std::cout, std::cerr);
    }
    qopt::DriverOptions options = qopt::parseCommandLine(argc, argv);
    return qopt::runDriver(options, std::cout, std::cerr);
  } catch (const qopt::Error& e) {
    std::cerr << "qopt: error: " << e.what() << '\n';
    return qopt::exitCodeFor(e.kind());
  } catch (const std::bad_alloc&) {
    std::cerr << "qopt: error: out of memory\n";
    return qopt::kExitUsageOrInput;
  } catch (const std::exception& e) {
    std::cerr << "qopt: error: internal error: " << e.what() << '\n';
    return qopt::kExitUsageOrInput;
  }
}
