// qopt._qopt: what the qopt command does, callable from Python. The package qopt (qopt/*.py)
// wraps it; nothing here is meant to be called directly.
#include <pybind11/pybind11.h>

#include "Bindings.h"
#include "qopt/pass/Version.h"

PYBIND11_MODULE(_qopt, m) {
  m.doc() = "qopt's C++ side; use the package qopt";
  m.def("version", [] { return std::string(qopt::versionString()); });
  qopt::python::bindErrors(m);
  qopt::python::bindRun(m);
  qopt::python::bindInspect(m);
  qopt::python::bindLoadInputs(m);
  qopt::python::bindPassList(m);
  qopt::python::bindSession(m);
}
