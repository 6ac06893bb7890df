#include "Fp8Checks.h"

#include <charconv>

#include <fmt/format.h>

#include "qopt/constants/ConstantCone.h"
#include "qopt/ir/Error.h"

namespace qopt::checktrt {

namespace {

// The float8 E4M3FN Q/DQ nodes of the main graph: the zero point's type decides, else the
// quantized data's (as quantizedType in QdqChecks reads it).
std::vector<const Node*> float8Nodes(const Graph& graph) {
  std::vector<const Node*> nodes;
  for (const Node* node : graph.allNodes()) {
    if (!node->domain().empty() || !(node->is("QuantizeLinear") || node->is("DequantizeLinear"))) {
      continue;
    }
    DataType type = DataType::Undefined;
    if (const Value* zp = node->input(2); zp != nullptr && !zp->isAbsent()) {
      if (std::optional<Tensor> t = fold::qdqParameter(zp)) type = t->dataType();
    }
    const Value* quantized = node->is("QuantizeLinear") ? node->output(0) : node->input(0);
    if (type == DataType::Undefined && quantized->type().isTensor()) {
      type = quantized->type().elemType;
    }
    if (type == DataType::Float8E4M3FN) nodes.push_back(node);
  }
  return nodes;
}

bool olderThan(const ComputeCapability& a, const ComputeCapability& b) {
  return a.major != b.major ? a.major < b.major : a.minor < b.minor;
}

}  // namespace

std::string ComputeCapability::str() const {
  return fmt::format("{}.{}", major, minor);
}

ComputeCapability parseComputeCapability(const std::string& text) {
  ComputeCapability cc;
  const size_t dot = text.find('.');
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const char* split = dot == std::string::npos ? end : text.data() + dot;
  auto [p1, e1] = std::from_chars(begin, split, cc.major);
  bool ok = e1 == std::errc() && p1 == split && split != begin && cc.major > 0 && cc.major < 100;
  if (ok && dot != std::string::npos) {
    auto [p2, e2] = std::from_chars(split + 1, end, cc.minor);
    ok = e2 == std::errc() && p2 == end && split + 1 != end && cc.minor >= 0 && cc.minor < 10;
  }
  if (!ok) {
    throw Error(
        ErrorKind::Usage, "", "",
        fmt::format("'{}' is not a compute capability (expected MAJOR.MINOR, e.g. 8.9)", text));
  }
  return cc;
}

void checkFp8(const Graph& graph, const analysis::PrecisionReport& precisions,
              const TrtVersion& version, const std::optional<ComputeCapability>& gpu,
              std::vector<Finding>& findings) {
  const std::vector<const Node*> nodes = float8Nodes(graph);
  if (nodes.empty()) return;
  if (version.major < kFp8TrtMajor) {
    findings.push_back(makeFinding(
        Severity::Error, "fp8-needs-trt10", *nodes.front(),
        fmt::format("{} QuantizeLinear/DequantizeLinear node(s) of FLOAT8E4M3FN: TensorRT {}'s "
                    "ONNX parser does not read float8 Q/DQ (TensorRT 10 is the first)",
                    nodes.size(), version.str()),
        "deploy with TensorRT 10 or newer, or quantize to INT8 (insert-qdq{precision=int8})"));
  }
  const std::string layers = fmt::format("{} layer(s) run in FP8", precisions.fp8.layers);
  if (!gpu) {
    findings.push_back(
        Finding{Severity::Note, "fp8-compute-capability", "", "",
                fmt::format("{}: FP8 needs a GPU of compute capability {} or newer (Ada, Hopper, "
                            "Blackwell); no compute-capability was given",
                            layers, kFp8ComputeCapability.str()),
                "give check-trt{compute-capability=X.Y} for the target GPU"});
  } else if (olderThan(*gpu, kFp8ComputeCapability)) {
    findings.push_back(Finding{
        Severity::Error, "fp8-compute-capability", "", "",
        fmt::format("{}: compute capability {} has no FP8 kernels (8.9 or newer: Ada, Hopper, "
                    "Blackwell)",
                    layers, gpu->str()),
        "quantize to INT8 for this GPU (insert-qdq{precision=int8})"});
  }
}

}  // namespace qopt::checktrt
