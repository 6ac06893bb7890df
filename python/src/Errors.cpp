#include "Errors.h"

#include <pybind11/pybind11.h>

#include <exception>

#include "Bindings.h"

namespace py = pybind11;

namespace qopt::python {

const char* errorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Input:
      return "input";
    case ErrorKind::Usage:
      return "usage";
    case ErrorKind::Verification:
      return "verification";
    case ErrorKind::Internal:
      return "internal";
  }
  return "internal";
}

Error renamedFile(const Error& error, const std::string& path, const std::string& displayName) {
  if (error.where() != path || displayName == path) return error;
  return Error(error.kind(), displayName, error.subject(), error.cause());
}

void bindErrors(py::module_&) {
  // The classes live in Python so that qopt.run can raise them itself, with the model and the
  // report of a failed check attached; they are looked up when an error is raised.
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      try {
        py::object error =
            py::module_::import("qopt._errors")
                .attr("make_error")(errorKindName(e.kind()), e.what(), exitCodeFor(e.kind()));
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
      } catch (py::error_already_set& failed) {
        failed.restore();
      }
    }
  });
}

}  // namespace qopt::python
