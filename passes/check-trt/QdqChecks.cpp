#include "QdqChecks.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "qopt/analysis/Precision.h"
#include "qopt/constants/ConstantCone.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/ir/Graph.h"

namespace qopt::checktrt {

namespace {

constexpr const char* kSymmetricFix =
    "quantize symmetrically to INT8 with zero point 0 (ONNX Runtime quantize_static: "
    "activation_type=QInt8, extra_options={'ActivationSymmetric': True, 'WeightSymmetric': "
    "True})";

bool isQdq(const Node& node) {
  return node.domain().empty() && (node.is("QuantizeLinear") || node.is("DequantizeLinear"));
}

// The dims of the tensor being quantized (a weight's stored dims when constant).
std::optional<std::vector<int64_t>> dataDims(const Node& node) {
  const Value* data = node.input(0);
  if (std::optional<Tensor> t = fold::constantThroughCasts(data)) return t->dims();
  if (const Node* q = data->producer();
      q != nullptr && node.is("DequantizeLinear") && q->is("QuantizeLinear")) {
    if (std::optional<Tensor> t = fold::constantThroughCasts(q->input(0))) return t->dims();
  }
  if (data->type().isTensor()) return data->type().staticShape();
  return std::nullopt;
}

std::optional<std::vector<int64_t>> valueDims(const Value* value) {
  if (std::optional<Tensor> t = fold::constantThroughCasts(value)) return t->dims();
  if (value->type().isTensor()) return value->type().staticShape();
  return std::nullopt;
}

int64_t elementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

// A DequantizeLinear that only undoes the QuantizeLinear it reads: same scale, zero point and
// axis, so every finding about one is a finding about the other.
bool undoesItsQuantize(const Node& node) {
  if (!node.is("DequantizeLinear")) return false;
  const Node* q = node.input(0)->producer();
  if (q == nullptr || !q->is("QuantizeLinear") || !q->domain().empty()) return false;
  return q->input(1) == node.input(1) && q->input(2) == node.input(2) &&
         q->attrInt("axis", 1) == node.attrInt("axis", 1);
}

struct WeightUse {
  const Node* consumer = nullptr;
  size_t index = 0;
};

// Who reads the dequantized values: DequantizeLinear's readers, or for a QuantizeLinear those
// of the DequantizeLinear nodes reading it (a weight quantized in the graph, as QAT exports do).
std::vector<WeightUse> dequantizedReaders(const Node& node) {
  std::vector<const Value*> values;
  if (node.is("DequantizeLinear")) {
    values.push_back(node.output(0));
  } else {
    for (const Use& use : node.output(0)->uses()) {
      if (use.user->is("DequantizeLinear")) values.push_back(use.user->output(0));
    }
  }
  std::vector<WeightUse> readers;
  for (const Value* v : values) {
    for (const Use& use : v->uses()) readers.push_back({use.user, use.index});
  }
  return readers;
}

struct ExpectedAxis {
  int64_t axis = 0;
  std::string why;
};

// The per-channel axis TensorRT expects for the weight read at `index` by `consumer`.
std::optional<ExpectedAxis> expectedWeightAxis(const Node& consumer, size_t index, size_t rank,
                                               const TrtVersion& version) {
  if (index != 1 || !consumer.domain().empty()) return std::nullopt;
  if (consumer.is("Conv")) return ExpectedAxis{0, "Conv weights are [out, in, kh, kw]"};
  if (consumer.is("ConvTranspose")) {
    if (version.major <= 8) {
      return ExpectedAxis{
          0, fmt::format("TensorRT {} expects axis 0 for ConvTranspose weights", version.str())};
    }
    return ExpectedAxis{1, "ConvTranspose weights are [in, out, kh, kw]"};
  }
  if (consumer.is("Gemm")) {
    if (consumer.attrInt("transB", 0) != 0) {
      return ExpectedAxis{0, "Gemm with transB=1 has weights [out, in]"};
    }
    return ExpectedAxis{1, "Gemm with transB=0 has weights [in, out]"};
  }
  if (consumer.is("MatMul") && rank >= 2) {
    return ExpectedAxis{static_cast<int64_t>(rank) - 1, "MatMul weights are [..., in, out]"};
  }
  return std::nullopt;
}

class NodeChecker {
 public:
  NodeChecker(const Node& node, int64_t opset, const TrtVersion& version,
              std::vector<Finding>& findings)
      : node_(node), opset_(opset), version_(version), findings_(findings) {}

  void run() {
    const DataType type = quantizedType(node_);
    if (node_.is("DequantizeLinear") && type == DataType::Int32) {
      report(Severity::Error, "int32-bias",
             "DequantizeLinear of INT32 (a quantized bias): TensorRT takes only INT8, INT4, FP8 "
             "and FP4 inputs (\"input has type Int32\")",
             "keep the bias in float (ONNX Runtime quantize_static: "
             "extra_options={'QuantizeBias': False})");
      return;  // zero point and scale of an INT32 bias are not TensorRT's concern after that
    }
    checkType(type);
    checkZeroPoint(type);
    checkScale();
  }

 private:
  void report(Severity severity, std::string id, std::string cause, std::string fix) {
    findings_.push_back(
        makeFinding(severity, std::move(id), node_, std::move(cause), std::move(fix)));
  }

  void checkType(DataType type) {
    switch (type) {
      case DataType::Int8:
      case DataType::Int4:
      case DataType::Float8E4M3FN:
      case DataType::Undefined:  // not known here; the other checks still apply
      case DataType::UInt8:      // see checkUInt8, which needs the zero point
        return;
      default:
        report(Severity::Error, "unsupported-quantized-type",
               fmt::format("quantizes to {}: TensorRT takes INT8, INT4, FP8 and FP4 only",
                           dataTypeName(type)),
               "quantize to INT8 with zero point 0");
    }
  }

  void checkZeroPoint(DataType type) {
    const Value* zp = node_.input(2);
    std::optional<Tensor> zeroPoint;
    if (zp != nullptr && !zp->isAbsent()) {
      zeroPoint = fold::constantThroughCasts(zp);
      if (!zeroPoint && (zeroPoint = fold::constantCone(zp))) {
        reportComputed("zero point", "zero-point-computed", zp);
      } else if (!zeroPoint) {
        report(Severity::Error, "zero-point-not-constant",
               fmt::format("zero point '{}' is computed at run time: TensorRT needs it at build "
                           "time (an initializer or a Constant node, possibly through Cast)",
                           zp->name()),
               "store the zero point as an initializer (0, INT8)");
      }
    }
    bool allZero = true;
    if (zeroPoint) {
      std::vector<double> values = zeroPoint->toDoubles();
      auto nonZero = std::find_if(values.begin(), values.end(), [](double v) { return v != 0; });
      if (nonZero != values.end()) {
        allZero = false;
        const int64_t count =
            std::count_if(values.begin(), values.end(), [](double v) { return v != 0; });
        std::string which =
            values.size() == 1
                ? fmt::format("zero point {:.6g} ({})", *nonZero,
                              dataTypeName(zeroPoint->dataType()))
                : fmt::format("{} of {} zero points are non-zero (first: {:.6g}, {})", count,
                              values.size(), *nonZero, dataTypeName(zeroPoint->dataType()));
        report(Severity::Error, "nonzero-zero-point",
               which + ": TensorRT's parser fails with \"Non-zero zero point is not supported\"",
               kSymmetricFix);
      }
      checkZeroPointShape(*zeroPoint);
    }
    const bool noZeroPoint = zp == nullptr || zp->isAbsent();
    if (type == DataType::UInt8) checkUInt8(noZeroPoint || zeroPoint.has_value(), allZero);
  }

  void checkZeroPointShape(const Tensor& zeroPoint) {
    std::optional<std::vector<int64_t>> scaleDims = valueDims(node_.input(1));
    if (!scaleDims || *scaleDims == zeroPoint.dims()) return;
    const bool sameCount = elementCount(*scaleDims) == elementCount(zeroPoint.dims());
    report(sameCount ? Severity::Warning : Severity::Error, "zero-point-shape",
           fmt::format("zero point shape {} differs from the scale's {}{}",
                       dimsText(zeroPoint.dims()), dimsText(*scaleDims),
                       sameCount ? " (TensorRT compares sizes only; ONNX requires equal shapes)"
                                 : ": TensorRT fails with \"The scale and zero point must have "
                                   "the same volume\""),
           "give the zero point the scale's shape");
  }

  // TensorRT >= 10.10 reads a UINT8 zero point as INT8; earlier parsers refuse UINT8.
  void checkUInt8(bool zeroPointKnown, bool allZero) {
    std::string cause;
    Severity severity = Severity::Error;
    if (version_ < TrtVersion{10, 10, 0}) {
      cause = fmt::format(
          "UINT8 quantization: TensorRT {}'s ONNX parser rejects it (TensorRT reads UINT8 as "
          "INT8 from 10.10 on)",
          version_.str());
    } else {
      severity = Severity::Warning;
      cause = fmt::format("UINT8 quantization: TensorRT {} reads it as INT8 (with a warning)",
                          version_.str());
    }
    std::optional<Tensor> scale = fold::constantThroughCasts(node_.input(1));
    if (zeroPointKnown && allZero && scale && scale->numElements() == 1) {
      const double s = scale->toDoubles().front();
      cause += fmt::format(
          "; with scale {:.6g} and zero point 0 the range [0, {:.3g}] becomes [{:.3g}, {:.3g}]: "
          "values clip at {:.3g} and negative values are no longer clipped at 0",
          s, 255 * s, -128 * s, 127 * s, 127 * s);
    }
    report(severity, "uint8-quantization", cause,
           "quantize to INT8 with zero point 0 (a ReLU6 output: scale 6/127, keep the Clip)");
  }

  // A parameter computed from constants (a QAT export's amax / 127): its value is known and
  // checked, but TensorRT's parser takes initializers and Constant nodes only.
  void reportComputed(const char* what, const char* id, const Value* value) {
    report(Severity::Warning, id,
           fmt::format("{} '{}' is computed from constants by {}: TensorRT's parser needs it "
                       "stored as a constant",
                       what, value->name(), value->producer()->describe()),
           "fold it first: qopt -p fold-constants (strip-qdq and propagate-scales fold it too)");
  }

  void checkScale() {
    const Value* scaleValue = node_.input(1);
    std::optional<Tensor> scale = fold::constantThroughCasts(scaleValue);
    if (!scale && (scale = fold::constantCone(scaleValue)))
      reportComputed("scale", "scale-computed", scaleValue);
    int64_t count = 1;
    if (!scale) {
      report(Severity::Error, "scale-not-constant",
             fmt::format("scale '{}' is computed at run time: TensorRT needs constant scales",
                         scaleValue ? scaleValue->name() : std::string()),
             "store the scale as an initializer");
      std::optional<std::vector<int64_t>> dims = valueDims(scaleValue);
      if (!dims) return;
      count = elementCount(*dims);
    } else {
      std::vector<double> values = scale->toDoubles();
      count = static_cast<int64_t>(values.size());
      checkScaleValues(values);
    }
    if (count > 1) checkPerChannel(count, scale ? scale->dims() : *valueDims(scaleValue));
  }

  void checkScaleValues(const std::vector<double>& values) {
    auto nonFinite =
        std::find_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); });
    if (nonFinite != values.end()) {
      report(Severity::Error, "scale-not-finite",
             fmt::format("scale {:.6g} is not finite", *nonFinite),
             "recalibrate: every scale must be a finite positive number");
    }
    auto nonPositive = std::find_if(values.begin(), values.end(), [](double v) { return v <= 0; });
    if (nonPositive != values.end()) {
      const int64_t count =
          std::count_if(values.begin(), values.end(), [](double v) { return v <= 0; });
      report(
          Severity::Error, "scale-not-positive",
          values.size() == 1
              ? fmt::format("scale {:.6g} is not positive: TensorRT needs scales > 0", *nonPositive)
              : fmt::format("{} of {} scales are not positive (first: {:.6g}): TensorRT needs "
                            "scales > 0",
                            count, values.size(), *nonPositive),
          "recalibrate, or give all-zero channels a small positive scale");
    }
  }

  void checkPerChannel(int64_t count, const std::vector<int64_t>& scaleDims) {
    const bool axisGiven = node_.hasAttr("axis");
    int64_t axis = node_.attrInt("axis", 1);
    if (opset_ < 13) {
      report(Severity::Error, "per-axis-opset",
             fmt::format("{} scales (per axis) in an opset {} model: per-axis Q/DQ needs opset "
                         "13; TensorRT reads the axis as {}, ONNX Runtime rejects the node",
                         count, opset_, axisGiven ? axis : 0),
             "convert the model to opset 13 or later: qopt -p \"convert-opset{to=13}\"");
      if (!axisGiven) axis = 0;
    }
    if (scaleDims.size() > 1) return;  // blocked quantization (INT4 weights): its own rules
    const bool constantData = analysis::isBuildTimeConstant(node_.input(0));
    if (!constantData) {
      report(Severity::Error, "per-channel-activation",
             fmt::format("{} scales along axis {} on an activation: TensorRT takes per-channel "
                         "scales for weights only",
                         count, axis),
             "quantize the activation per tensor (one scale)");
    }
    std::optional<std::vector<int64_t>> dims = dataDims(node_);
    if (!dims || dims->empty()) return;
    const int64_t rank = static_cast<int64_t>(dims->size());
    const int64_t normalized = axis < 0 ? axis + rank : axis;
    if (normalized < 0 || normalized >= rank) return;  // the verifier reports a bad axis
    if ((*dims)[normalized] != count) {
      report(Severity::Error, "scale-length",
             fmt::format("{} scales but axis {} of the {} data has {} elements: TensorRT fails "
                         "with \"The number of scales is not equal to the number of output "
                         "channels\"",
                         count, normalized, dimsText(*dims), (*dims)[normalized]),
             "give one scale per element of the quantized axis");
    }
    if (constantData) checkWeightAxis(normalized, dims->size());
  }

  void checkWeightAxis(int64_t axis, size_t rank) {
    for (const WeightUse& use : dequantizedReaders(node_)) {
      std::optional<ExpectedAxis> expected =
          expectedWeightAxis(*use.consumer, use.index, rank, version_);
      if (!expected || expected->axis == axis) continue;
      report(Severity::Error, "per-channel-axis",
             fmt::format("per-channel scales along axis {}, but {} '{}' needs the output-channel "
                         "axis {} on TensorRT {} ({})",
                         axis, use.consumer->opType(), analysis::layerName(*use.consumer),
                         expected->axis, version_.str(), expected->why),
             fmt::format("quantize the weight along axis {}", expected->axis));
      return;
    }
  }

  const Node& node_;
  int64_t opset_;
  const TrtVersion& version_;
  std::vector<Finding>& findings_;
};

}  // namespace

DataType quantizedType(const Node& node) {
  if (const Value* zp = node.input(2); zp != nullptr && !zp->isAbsent()) {
    if (std::optional<Tensor> t = fold::qdqParameter(zp)) return t->dataType();
    if (zp->type().isTensor() && zp->type().elemType != DataType::Undefined) {
      return zp->type().elemType;
    }
  }
  if (node.is("DequantizeLinear")) {
    const Value* data = node.input(0);
    if (std::optional<Tensor> t = fold::constantThroughCasts(data)) return t->dataType();
    if (data->type().isTensor() && data->type().elemType != DataType::Undefined) {
      return data->type().elemType;
    }
    if (const Node* q = data->producer(); q != nullptr && q->is("QuantizeLinear")) {
      return quantizedType(*q);
    }
    return DataType::Undefined;
  }
  if (const Attribute* a = node.findAttr("output_dtype"); a != nullptr && a->i != 0) {
    if (std::optional<DataType> t = dataTypeFromInt(a->i)) return *t;
  }
  return DataType::UInt8;
}

void checkQdqNodes(const Model& model, const TrtVersion& version, std::vector<Finding>& findings) {
  const int64_t opset = model.opsetVersion("").value_or(13);
  model.graph().walk([&](const Node* node) {
    if (!isQdq(*node) || undoesItsQuantize(*node)) return;
    NodeChecker(*node, opset, version, findings).run();
  });
}

}  // namespace qopt::checktrt
