// qopt.load_inputs' C++ side: the samples a data path gives a model (the reader the passes use,
// with --preprocess), so that a user sees exactly what calibration will feed.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "ArrayConversion.h"
#include "Bindings.h"
#include "Errors.h"
#include "Interruptible.h"
#include "qopt/analysis/DataSet.h"
#include "qopt/ir/TextFormat.h"

namespace py = pybind11;

namespace qopt::python {

namespace {

std::vector<analysis::Sample> loadSamples(const std::string& model, const std::string& data,
                                          const std::string& preprocess,
                                          const std::string& inputShapes,
                                          const std::string& inputValues, size_t limit) {
  std::unique_ptr<Model> loaded = loadModelAnyFormat(model, LoadOptions{});
  std::vector<analysis::InputSpec> specs = analysis::inputSpecs(
      loaded->graph(), parseInputShapes(inputShapes), parseInputValues(inputValues));
  return analysis::DataSet::open(data, std::move(specs), preprocess).read(limit);
}

}  // namespace

void bindLoadInputs(py::module_& m) {
  m.def(
      "load_inputs",
      [](const std::string& model, const std::string& displayName, const std::string& data,
         const std::string& preprocess, const std::string& inputShapes,
         const std::string& inputValues, size_t limit) {
        std::vector<analysis::Sample> samples;
        try {
          samples = runInterruptibly([&] {
            return loadSamples(model, data, preprocess, inputShapes, inputValues, limit);
          });
        } catch (const Error& e) {
          throw renamedFile(e, model, displayName);
        }
        py::list out;
        for (const analysis::Sample& sample : samples) {
          py::dict inputs;
          for (const auto& [name, array] : sample.inputs)
            inputs[py::str(name)] = numpyFromArray(array);
          out.append(py::make_tuple(sample.source, inputs));
        }
        return out;
      },
      py::kw_only(), py::arg("model"), py::arg("display_name"), py::arg("data"),
      py::arg("preprocess"), py::arg("input_shapes"), py::arg("input_values"), py::arg("limit"),
      "The samples a data path gives the model: (source, {input name: array}) pairs.");
}

}  // namespace qopt::python
