#include "BuildFlags.h"

#include <fmt/format.h>

#include "Finding.h"

namespace qopt::checktrt {

namespace {

std::string trt8(const PlacementSummary& s) {
  if (!s.hasQdq) {
    return "no Q/DQ nodes: the model builds in FP32, or FP16 with --fp16 (BuilderFlag::kFP16); "
           "INT8 needs --int8 and a calibration cache (implicit quantization)";
  }
  std::string text =
      "build with the INT8 flag (trtexec --int8, BuilderFlag::kINT8): without it a network "
      "with Q/DQ nodes fails to build";
  if (!s.floatLayers.empty()) {
    text += fmt::format(
        "; add --fp16 (BuilderFlag::kFP16) so that the float layers ({}) run in FP16, not FP32",
        countOf(static_cast<int64_t>(s.floatLayers.size()), "layer"));
  }
  return text;
}

std::string trt10(const PlacementSummary& s) {
  if (!s.hasQdq) {
    return "no Q/DQ nodes: a strongly typed network (trtexec --stronglyTyped) runs in the ONNX "
           "types' precision; INT8 without Q/DQ needs --int8 and a calibration cache (implicit "
           "quantization, deprecated)";
  }
  std::string text =
      "build a strongly typed network (trtexec --stronglyTyped, "
      "NetworkDefinitionCreationFlag::kSTRONGLY_TYPED): the Q/DQ nodes and the ONNX types set "
      "every precision, no --int8 or --fp16 flag is needed";
  if (!s.floatLayers.empty()) {
    text += fmt::format(
        "; the float layers ({}: {} FP16, {} FP32) run in their ONNX types' precision",
        countOf(static_cast<int64_t>(s.floatLayers.size()), "layer"), s.fp16Layers, s.fp32Layers());
  }
  return text;
}

std::string trt11(const PlacementSummary& s) {
  std::string text =
      "TensorRT 11 has no INT8 or FP16 builder flags and no calibrator: precisions come only "
      "from the Q/DQ nodes and the ONNX types";
  if (!s.hasQdq) return text + "; without Q/DQ nodes the model runs in its ONNX types";
  if (s.fp32Layers() > 0) {
    text += fmt::format(
        "; the FP32 layers ({}) stay FP32 unless their tensors are float16 in the ONNX "
        "(convert them and add Casts)",
        countOf(s.fp32Layers(), "layer"));
  }
  return text;
}

}  // namespace

std::string buildFlagsText(const TrtVersion& version, const PlacementSummary& summary) {
  std::string body;
  if (version.major <= 8) {
    body = trt8(summary);
  } else if (version.major <= 10) {
    body = trt10(summary);
  } else {
    body = trt11(summary);
  }
  return fmt::format("TensorRT {}: {}", version.str(), body);
}

}  // namespace qopt::checktrt
