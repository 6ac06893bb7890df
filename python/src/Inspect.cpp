// qopt.inspect's C++ side: `qopt inspect` (runInspectCommand) on a model file, its output returned.
#include <pybind11/pybind11.h>

#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "Bindings.h"
#include "Errors.h"
#include "InspectCommand.h"
#include "Interruptible.h"

namespace py = pybind11;

namespace qopt::python {

namespace {

struct InspectRequest {
  std::string model;
  std::string displayName;
  bool json = true;
  std::string inputShapes;
  std::string inputValues;
  std::string calibData;
  std::string preprocess;
  uint64_t seed = 0;
};

// The command line `qopt inspect` would be given. Values go after '=' so that none is read as a
// flag; a model name starting with '-' gets a "./" for the same reason.
std::vector<std::string> inspectArgs(const InspectRequest& request) {
  std::vector<std::string> args = {"inspect"};
  args.push_back(request.model.starts_with("-") ? "./" + request.model : request.model);
  if (request.json) args.emplace_back("--json");
  if (!request.inputShapes.empty()) args.push_back("--input-shapes=" + request.inputShapes);
  if (!request.inputValues.empty()) args.push_back("--input-values=" + request.inputValues);
  if (!request.calibData.empty()) args.push_back("--calib-data=" + request.calibData);
  if (!request.preprocess.empty()) args.push_back("--preprocess=" + request.preprocess);
  args.push_back(fmt::format("--seed={}", request.seed));
  return args;
}

std::string inspectModel(const InspectRequest& request) {
  std::vector<std::string> args = inspectArgs(request);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::ostringstream out;
  std::ostringstream err;
  try {
    runInspectCommand(static_cast<int>(args.size()), argv.data(), out, err);
  } catch (const Error& e) {
    throw renamedFile(e, request.model, request.displayName);
  }
  return std::move(out).str();
}

}  // namespace

void bindInspect(py::module_& m) {
  m.def(
      "inspect",
      [](const std::string& model, const std::string& displayName, bool json,
         const std::string& inputShapes, const std::string& inputValues,
         const std::string& calibData, const std::string& preprocess, uint64_t seed) {
        InspectRequest request{model,       displayName, json,       inputShapes,
                               inputValues, calibData,   preprocess, seed};
        // Without the GIL; Ctrl-C raises KeyboardInterrupt once the interpreter run ends.
        return runInterruptibly([&] { return inspectModel(request); });
      },
      py::kw_only(), py::arg("model"), py::arg("display_name"), py::arg("json"),
      py::arg("input_shapes"), py::arg("input_values"), py::arg("calib_data"),
      py::arg("preprocess"), py::arg("seed"),
      "What `qopt inspect` prints for a model file (JSON text with json=True, else the table).");
}

}  // namespace qopt::python
