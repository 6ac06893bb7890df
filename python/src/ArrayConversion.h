// numpy arrays to and from the interpreter's arrays. Both directions copy: an interpreter output
// may share storage with the model's initializers, which a writable numpy array must not reach.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "qopt/interp/Array.h"
#include "qopt/ir/DataType.h"

namespace qopt::python {

/// The element type of a numpy dtype name ("float32", "bool", ...) that the module exchanges.
std::optional<DataType> dataTypeOfNumpy(const std::string& dtypeName);

/// `array` (C-contiguous, native byte order, a dtype dataTypeOfNumpy knows) as an interpreter
/// array of element type `type`.
interp::Array arrayFromNumpy(const pybind11::array& array, DataType type);

/// An interpreter value for Python: a tensor as a numpy array (bfloat16 and float8 widened to
/// float32 and 4-bit integers to 8-bit ones, as qopt-run writes them; strings as an object
/// array), a sequence as a list, an optional as None or its value.
pybind11::object numpyFromArray(const interp::Array& array);

}  // namespace qopt::python
