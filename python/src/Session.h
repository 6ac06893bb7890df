// qopt.Session's C++ side: a model loaded once and run by the reference interpreter, with ONNX
// Runtime's calling convention (feeds by input name, outputs by name or all).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>

#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Graph.h"

namespace qopt::python {

class Session {
 public:
  /// Loads `path` (binary ONNX or ONNX text); messages name it `displayName`. `threads` as
  /// interp::RunOptions::threads.
  Session(const std::string& path, const std::string& displayName, int threads);

  /// (name, shape, type) per graph input that is not an initializer, and per output: shape
  /// None when the rank is unknown, else a list of ints, dim names (str) and None for unknown
  /// dims; type as ONNX Runtime spells it ("tensor(float)").
  pybind11::list inputs() const;
  pybind11::list outputs() const;

  /// Runs on `feeds` ({name: numpy array}); returns the outputs named (None: all), in order. A
  /// feed of another dtype, rank or static dim than the input declares, an unknown name or a
  /// missing input is a qopt::Error (Usage) naming the input.
  pybind11::list run(const pybind11::object& outputNames, const pybind11::dict& feeds);

 private:
  std::string displayName_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<interp::Interpreter> interpreter_;
  std::mutex running_;  // one run at a time per interpreter
};

}  // namespace qopt::python
