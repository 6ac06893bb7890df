// qopt: reads an ONNX model, runs a pipeline of passes over it and writes the result.
#include <gflags/gflags.h>

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
