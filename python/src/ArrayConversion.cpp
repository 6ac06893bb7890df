#include "ArrayConversion.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "qopt/ir/Error.h"

namespace py = pybind11;

namespace qopt::python {

namespace {

struct NumpyType {
  DataType type;
  const char* name;
};

constexpr NumpyType kNumpyTypes[] = {
    {DataType::Float, "float32"}, {DataType::Double, "float64"}, {DataType::Float16, "float16"},
    {DataType::Int8, "int8"},     {DataType::UInt8, "uint8"},    {DataType::Int16, "int16"},
    {DataType::UInt16, "uint16"}, {DataType::Int32, "int32"},    {DataType::UInt32, "uint32"},
    {DataType::Int64, "int64"},   {DataType::UInt64, "uint64"},  {DataType::Bool, "bool"},
};

const char* numpyName(DataType type) {
  for (const NumpyType& entry : kNumpyTypes) {
    if (entry.type == type) return entry.name;
  }
  return nullptr;
}

std::vector<py::ssize_t> numpyShape(const interp::Array& array) {
  return std::vector<py::ssize_t>(array.shape().begin(), array.shape().end());
}

py::array copyOut(const interp::Array& array, const char* dtypeName) {
  py::array result(py::dtype(dtypeName), numpyShape(array));
  if (array.byteSize() != 0) std::memcpy(result.mutable_data(), array.bytes(), array.byteSize());
  return result;
}

py::array widenedToFloat(const interp::Array& array) {
  py::array result(py::dtype("float32"), numpyShape(array));
  std::vector<float> values = array.toFloatVector();
  std::copy(values.begin(), values.end(), static_cast<float*>(result.mutable_data()));
  return result;
}

py::object stringsOut(const interp::Array& array) {
  py::list items;
  for (const std::string& item : array.strings()) items.append(py::str(item));
  py::module_ numpy = py::module_::import("numpy");
  return numpy.attr("array")(items, py::arg("dtype") = numpy.attr("object_"))
      .attr("reshape")(py::tuple(py::cast(numpyShape(array))));
}

}  // namespace

std::optional<DataType> dataTypeOfNumpy(const std::string& dtypeName) {
  for (const NumpyType& entry : kNumpyTypes) {
    if (dtypeName == entry.name) return entry.type;
  }
  return std::nullopt;
}

interp::Array arrayFromNumpy(const py::array& array, DataType type) {
  interp::Shape shape(array.shape(), array.shape() + array.ndim());
  interp::Array result(type, shape);
  if (result.byteSize() != static_cast<size_t>(array.nbytes())) {
    throw Error(ErrorKind::Internal, {}, {},
                fmt::format("a numpy array of {} bytes for a {} tensor of {} bytes", array.nbytes(),
                            dataTypeName(type), result.byteSize()));
  }
  if (result.byteSize() != 0) std::memcpy(result.bytes(), array.data(), result.byteSize());
  return result;
}

py::object numpyFromArray(const interp::Array& array) {
  if (array.isSequence()) {
    py::list items;
    for (const interp::Array& item : array.items()) items.append(numpyFromArray(item));
    return items;
  }
  if (array.isOptional()) return array.hasValue() ? numpyFromArray(array.value()) : py::none();
  const DataType type = array.dataType();
  if (const char* name = numpyName(type)) return copyOut(array, name);
  switch (type) {
    case DataType::Int4:
      return copyOut(array, "int8");
    case DataType::UInt4:
      return copyOut(array, "uint8");
    case DataType::String:
      return stringsOut(array);
    case DataType::BFloat16:
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float4E2M1:
      return widenedToFloat(array);
    default:
      throw Error(ErrorKind::Usage, {}, {},
                  fmt::format("a {} tensor has no numpy form", dataTypeName(type)));
  }
}

}  // namespace qopt::python
