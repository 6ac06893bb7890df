#include "Session.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ArrayConversion.h"
#include "Bindings.h"
#include "Errors.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Printer.h"
#include "qopt/ir/TextFormat.h"

namespace py = pybind11;

namespace qopt::python {

namespace {

std::string typeText(const ValueType& type) {
  if (type.kind == ValueType::Kind::Unknown) return "unknown";
  if (type.kind != ValueType::Kind::Tensor) return printType(type);
  std::string elem(dataTypeName(type.elemType));
  std::transform(elem.begin(), elem.end(), elem.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "tensor(" + elem + ")";
}

py::tuple nodeArg(const Value& value) {
  py::object shape = py::none();
  if (value.type().shape) {
    py::list dims;
    for (const Dim& dim : *value.type().shape) {
      if (dim.isKnown()) {
        dims.append(*dim.value);
      } else if (!dim.param.empty()) {
        dims.append(dim.param);
      } else {
        dims.append(py::none());
      }
    }
    shape = std::move(dims);
  }
  return py::make_tuple(value.name(), shape, typeText(value.type()));
}

// As Python prints the array's shape: (3,) for one dim.
std::string shapeText(const py::array& array) {
  std::vector<py::ssize_t> shape(array.shape(), array.shape() + array.ndim());
  return fmt::format("({}{})", fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
}

}  // namespace

Session::Session(const std::string& path, const std::string& displayName, int threads)
    : displayName_(displayName) {
  if (threads < 0 || threads > 1024) {
    throw Error(fmt::format("threads must be from 0 to 1024, got {}", threads), ErrorKind::Usage);
  }
  py::gil_scoped_release release;
  try {
    model_ = loadModelAnyFormat(path);
    interp::RunOptions options;
    options.threads = threads;
    interpreter_ = std::make_unique<interp::Interpreter>(model_->graph(), options);
  } catch (const Error& e) {
    throw renamedFile(e, path, displayName);
  }
}

py::list Session::inputs() const {
  py::list args;
  for (const Value* input : model_->graph().inputs()) {
    if (!input->isInitializer()) args.append(nodeArg(*input));
  }
  return args;
}

py::list Session::outputs() const {
  py::list args;
  for (const Value* output : model_->graph().outputs()) args.append(nodeArg(*output));
  return args;
}

py::list Session::run(const py::object& outputNames, const py::dict& feeds) {
  const Graph& graph = model_->graph();
  auto inputError = [&](const std::string& name, const std::string& cause) {
    return Error(ErrorKind::Usage, displayName_, fmt::format("input '{}'", name), cause);
  };

  std::vector<size_t> wanted;
  const auto& outputs = graph.outputs();
  if (outputNames.is_none()) {
    for (size_t i = 0; i < outputs.size(); ++i) wanted.push_back(i);
  } else {
    for (const std::string& name : outputNames.cast<std::vector<std::string>>()) {
      auto found = std::find_if(outputs.begin(), outputs.end(),
                                [&](const Value* output) { return output->name() == name; });
      if (found == outputs.end()) {
        throw Error(ErrorKind::Usage, displayName_, fmt::format("output '{}'", name),
                    "the model has no such output");
      }
      wanted.push_back(static_cast<size_t>(found - outputs.begin()));
    }
  }

  std::map<std::string, interp::Array> inputs;
  for (const auto& [key, value] : feeds) {
    const std::string name = py::str(key);
    const Value* input = nullptr;
    for (const Value* candidate : graph.inputs()) {
      if (candidate->name() == name) input = candidate;
    }
    if (input == nullptr) {
      std::vector<std::string> names;
      for (const Value* candidate : graph.inputs()) names.push_back(candidate->name());
      throw inputError(
          name, fmt::format("the model has no such input (inputs: {})", fmt::join(names, ", ")));
    }
    const ValueType& type = input->type();
    if (!type.isTensor()) {
      throw inputError(name, fmt::format("a {} input: only tensors can be fed", typeText(type)));
    }
    py::array array = py::array::ensure(value, py::array::c_style);
    if (!array) throw inputError(name, "not convertible to a numpy array");
    if (!array.dtype().attr("isnative").cast<bool>()) {
      array = py::array::ensure(array.attr("astype")(array.dtype().attr("newbyteorder")("=")),
                                py::array::c_style);
    }
    const std::string dtype = py::str(array.dtype().attr("name"));
    std::optional<DataType> given = dataTypeOfNumpy(dtype);
    if (!given || *given != type.elemType) {
      throw inputError(
          name, fmt::format("expected {}, got a numpy array of dtype {}", typeText(type), dtype));
    }
    if (type.shape) {
      const std::vector<Dim>& dims = *type.shape;
      if (static_cast<size_t>(array.ndim()) != dims.size()) {
        throw inputError(name, fmt::format("expected rank {}, got an array of shape {}",
                                           dims.size(), shapeText(array)));
      }
      for (size_t axis = 0; axis < dims.size(); ++axis) {
        if (dims[axis].isKnown() && *dims[axis].value != array.shape(axis)) {
          throw inputError(name, fmt::format("dim {} is {}, got an array of shape {}", axis,
                                             *dims[axis].value, shapeText(array)));
        }
      }
    }
    inputs.insert_or_assign(name, arrayFromNumpy(array, type.elemType));
  }
  for (const Value* input : graph.inputs()) {
    if (!input->isInitializer() && !inputs.contains(input->name())) {
      throw inputError(input->name(), "not fed");
    }
  }

  std::vector<interp::Array> results;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(running_);
    try {
      results = interpreter_->run(inputs);
    } catch (const Error& e) {
      throw e.withFile(displayName_);
    }
  }
  py::list returned;
  for (size_t index : wanted) returned.append(numpyFromArray(results[index]));
  return returned;
}

void bindSession(py::module_& m) {
  py::class_<Session>(m, "Session")
      .def(py::init<const std::string&, const std::string&, int>(), py::arg("path"),
           py::arg("display_name"), py::arg("threads"))
      .def("inputs", &Session::inputs)
      .def("outputs", &Session::outputs)
      .def("run", &Session::run, py::arg("output_names"), py::arg("feeds"));
}

}  // namespace qopt::python
