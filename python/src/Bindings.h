// The parts of the extension module qopt._qopt, each bound by its own file; Module.cpp calls them.
#pragma once

#include <pybind11/pybind11.h>

namespace qopt::python {

void bindErrors(pybind11::module_& m);
void bindRun(pybind11::module_& m);
void bindInspect(pybind11::module_& m);
void bindLoadInputs(pybind11::module_& m);
void bindPassList(pybind11::module_& m);
void bindSession(pybind11::module_& m);

}  // namespace qopt::python
