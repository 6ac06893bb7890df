// The builder settings a model needs on a given TensorRT version: TensorRT 8 builds Q/DQ models
// only with the INT8 flag (FP16 for the layers left in float), TensorRT 10 reads precisions from
// the Q/DQ nodes and the ONNX types in a strongly typed network, and TensorRT 11 has no precision
// flags at all (FP16 must be written into the ONNX types). See docs/tensorrt.md.
#pragma once

#include <string>

#include "PlacementChecks.h"
#include "qopt/pass/Target.h"

namespace qopt::checktrt {

/// One paragraph, starting with "TensorRT <version>: ".
std::string buildFlagsText(const TrtVersion& version, const PlacementSummary& summary);

}  // namespace qopt::checktrt
