// qopt.list_passes: every pass the module can run, with its summary and options, as data (what
// `qopt --list-passes` prints as text).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "Bindings.h"
#include "Driver.h"
#include "qopt/pass/Options.h"
#include "qopt/pass/Pass.h"

namespace py = pybind11;

namespace qopt::python {

namespace {

py::dict optionEntry(const OptionBase& option) {
  py::dict entry;
  entry["name"] = option.name();
  entry["type"] = option.typeName();
  entry["choices"] = option.choices();
  entry["default"] = formatOptionValue(option.defaultValue());
  entry["help"] = option.help();
  return entry;
}

py::dict passEntry(const PassInfo& info) {
  py::dict entry;
  entry["name"] = info.name;
  entry["summary"] = info.summary;
  entry["origin"] = info.origin;
  std::unique_ptr<Pass> pass = info.factory();
  py::list options;
  for (const OptionBase* option : pass->optionList()) options.append(optionEntry(*option));
  entry["options"] = options;
  return entry;
}

}  // namespace

void bindPassList(py::module_& m) {
  m.def(
      "list_passes",
      [](const std::vector<std::string>& plugins) {
        PluginLoader loader;
        PassRegistry registry;
        {
          py::gil_scoped_release release;
          DriverOptions options;
          options.pluginFiles = plugins;
          Diagnostics quiet(nullptr);
          registry = loadPasses(options, loader, quiet);
        }
        py::list passes;
        for (const PassInfo* info : registry.passes()) passes.append(passEntry(*info));
        return passes;
      },
      py::arg("plugins"), "The passes of the built-in modules, QOPT_PLUGIN_PATH and `plugins`.");
}

}  // namespace qopt::python
