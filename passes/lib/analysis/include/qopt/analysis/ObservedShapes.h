// The shape of every value, for counting multiply-accumulates: one run of the reference
// interpreter on inputs of the shapes the user gave (--input-shapes), else of the calibration
// data's first sample, else of the declared shapes with every open dim set to 1. The run is
// exact for any op the interpreter runs, shapes computed at run time included. Dims set to 1
// are listed, so that reports can say their MACs rest on them.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "qopt/analysis/TensorInfo.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"

namespace qopt::analysis {

/// What the user said about the input shapes.
struct ShapeRequest {
  std::vector<InputShape> inputShapes;  // --input-shapes
  std::vector<InputValue> inputValues;  // --input-values
  std::string calibData;                // --calib-data: its first sample's shapes
  std::string preprocess;               // --preprocess: how its images and audio are read
  uint64_t seed = 0;                    // values of generated inputs

  /// The request a pass's context carries (--input-shapes, --calib-data, --seed).
  static ShapeRequest from(const PassContext& context);
};

/// An open input dim that neither --input-shapes nor data fixed, run with `value`.
struct AssumedDim {
  std::string input;
  size_t axis = 0;
  std::string name;  // the model's symbolic name for it ("H"); empty when it has none
  int64_t value = 1;
};

struct ObservedShapes {
  TensorInfoMap info;
  /// Where the input shapes came from: "input-shapes", "calib:<path>" or "declared".
  std::string origin;
  /// The input shapes the interpreter ran with, by input name.
  std::map<std::string, std::vector<int64_t>> inputs;
  std::vector<AssumedDim> assumed;
  /// Inputs without a declared shape, run as scalars.
  std::vector<std::string> unshapedInputs;
  /// Why the interpreter could not run (then only declared shapes are known); empty when it ran.
  std::string failure;
};

/// Runs `graph` once as described above. A bad request (an input the model lacks, a rank or
/// static dim that contradicts it, unreadable calibration data) throws qopt::Error; an
/// interpreter failure does not, and is recorded in `failure`.
ObservedShapes observeShapes(const Graph& graph, const ShapeRequest& request);

/// What the shapes rest on, one sentence each: "MACs assume H=1, W=1 for input 'x' (dynamic);
/// pass --input-shapes x:1x3x<H>x<W>", inputs without shape, an interpreter that could not run.
/// Empty when the shapes are exact.
std::vector<std::string> shapeCaveats(const ObservedShapes& shapes);

}  // namespace qopt::analysis
