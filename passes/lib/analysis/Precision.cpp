#include "qopt/analysis/Precision.h"

#include <algorithm>
#include <array>
#include <span>

#include <fmt/format.h>

#include "qopt/constants/ConstantCone.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/pass/EnumNames.h"

namespace qopt::analysis {

namespace {

// Ops TensorRT moves a DequantizeLinear forward across (they commute with quantization).
constexpr std::array<std::string_view, 16> kCommutingOps = {
    "Reshape",       "Transpose", "Flatten",      "Squeeze",     "Unsqueeze", "MaxPool",
    "GlobalMaxPool", "Slice",     "Gather",       "Pad",         "Identity",  "Concat",
    "Split",         "Expand",    "SpaceToDepth", "DepthToSpace"};

// Ops that keep a constant constant (a weight stored quantized, quantized in the graph as QAT
// exports do, transposed or cast).
constexpr std::array<std::string_view, 8> kConstantPreservingOps = {
    "DequantizeLinear", "QuantizeLinear", "Cast",      "Transpose",
    "Reshape",          "Identity",       "Unsqueeze", "Squeeze"};

constexpr int kMaxWalk = 64;

bool isIn(const Node& node, std::span<const std::string_view> ops) {
  if (!node.domain().empty()) return false;
  return std::find(ops.begin(), ops.end(), node.opType()) != ops.end();
}

DataType quantizedTypeOf(const Node& dq) {
  const Value* data = dq.input(0);
  if (std::optional<Tensor> t = fold::constantThroughCasts(data)) return t->dataType();
  if (data->type().isTensor() && data->type().elemType != DataType::Undefined) {
    return data->type().elemType;
  }
  if (const Value* zp = dq.input(2)) {
    if (std::optional<Tensor> t = fold::qdqParameter(zp)) return t->dataType();
  }
  if (const Node* q = data->producer(); q && q->is("QuantizeLinear")) {
    if (const Value* zp = q->input(2)) {
      if (std::optional<Tensor> t = fold::qdqParameter(zp)) return t->dataType();
    }
    if (const Attribute* a = q->findAttr("output_dtype"); a && a->i != 0) {
      if (std::optional<DataType> t = dataTypeFromInt(a->i)) return *t;
    }
    return DataType::UInt8;  // QuantizeLinear's default output type
  }
  return DataType::Undefined;
}

DequantizedInput describeDequantize(const Node& dq) {
  DequantizedInput in;
  in.dequantize = &dq;
  in.quantizedType = quantizedTypeOf(dq);
  in.constantData = isBuildTimeConstant(dq.input(0));
  if (const Node* q = dq.input(0)->producer(); q && q->is("QuantizeLinear")) in.quantize = q;
  in.axis = dq.attrInt("axis", 1);
  if (std::optional<Tensor> scale = fold::qdqParameter(dq.input(1))) {
    std::vector<double> values = scale->toDoubles();
    in.scaleCount = static_cast<int64_t>(values.size());
    if (!values.empty()) {
      in.minScale = *std::min_element(values.begin(), values.end());
      in.maxScale = *std::max_element(values.begin(), values.end());
    }
  }
  const Value* zp = dq.input(2);
  if (zp == nullptr) {
    in.zeroPointsZero = true;
  } else if (std::optional<Tensor> t = fold::qdqParameter(zp)) {
    std::vector<double> values = t->toDoubles();
    in.zeroPointsZero = std::all_of(values.begin(), values.end(), [](double v) { return v == 0; });
  }
  return in;
}

std::optional<DequantizedInput> findFrom(const Value* value, int depth, bool acrossCasts) {
  std::vector<const Node*> crossed;
  const Node* cast = nullptr;
  const Value* v = value;
  for (; v != nullptr && depth < kMaxWalk; ++depth) {
    const Node* producer = v->producer();
    if (producer == nullptr) return std::nullopt;
    if (producer->is("DequantizeLinear")) {
      DequantizedInput in = describeDequantize(*producer);
      in.crossed = std::move(crossed);
      in.cast = cast;
      return in;
    }
    const bool isCast = acrossCasts && producer->is("Cast");
    if (!isCast && !isIn(*producer, kCommutingOps)) return std::nullopt;
    crossed.insert(crossed.begin(), producer);
    // Walking backwards, the last Cast met is the one nearest the DequantizeLinear.
    if (isCast) cast = producer;
    if (producer->is("Concat")) {
      std::optional<DequantizedInput> first;
      for (const Value* in : producer->inputs()) {
        std::optional<DequantizedInput> found = findFrom(in, depth + 1, acrossCasts);
        if (!found) return std::nullopt;
        if (found->cast != nullptr) cast = found->cast;
        if (!first) first = std::move(found);
      }
      if (!first) return std::nullopt;
      first->crossed.insert(first->crossed.end(), crossed.begin(), crossed.end());
      first->cast = cast;
      return first;
    }
    v = producer->input(0);
  }
  return std::nullopt;
}

bool isConstantFrom(const Value* value, int depth) {
  if (value == nullptr || depth > kMaxWalk) return false;
  if (value->isInitializer()) return !value->isGraphInput();
  const Node* producer = value->producer();
  if (producer == nullptr) return false;
  if (producer->is("Constant")) return true;
  if (!isIn(*producer, kConstantPreservingOps)) return false;
  for (const Value* in : producer->inputs()) {
    if (in != nullptr && !isConstantFrom(in, depth + 1)) return false;
  }
  return true;
}

uint64_t product(std::span<const int64_t> dims) {
  uint64_t p = 1;
  for (int64_t d : dims) p *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return p;
}

std::string valueLabel(const Value* v) {
  return v ? fmt::format("'{}'", v->name()) : "''";
}

void addQuantizationNotes(const DequantizedInput& in, std::string_view role,
                          std::vector<std::string>& notes) {
  if (in.quantizedType == DataType::UInt8) {
    notes.push_back(
        fmt::format("{} is UINT8: TensorRT before 10.10 rejects it, later versions "
                    "read it as INT8",
                    role));
  }
  if (in.zeroPointsZero && !*in.zeroPointsZero) {
    notes.push_back(fmt::format("{} has a non-zero zero point, which TensorRT refuses", role));
  }
  if (!in.zeroPointsZero) {
    notes.push_back(fmt::format("{} has a zero point that is not a constant", role));
  }
  if (!in.minScale) {
    notes.push_back(fmt::format("{} has a scale that is not a constant", role));
  }
}

std::string notIntegerReason(const DequantizedInput& in, const Value* value) {
  return fmt::format(
      "{} comes through DequantizeLinear of {}, not an 8-bit integer type or "
      "FLOAT8E4M3FN",
      valueLabel(value), dataTypeName(in.quantizedType));
}

// One input FP8 and the other INT8 (or float8 of another kind): TensorRT has no kernel taking
// both, so the layer runs in float.
std::string mixedReason(const DequantizedInput& a, const Value* aValue, const DequantizedInput& b,
                        const Value* bValue) {
  return fmt::format(
      "{} comes through DequantizeLinear of {} and {} of {}: no FP8 or INT8 kernel takes both",
      valueLabel(aValue), dataTypeName(a.quantizedType), valueLabel(bValue),
      dataTypeName(b.quantizedType));
}

std::string castTargetName(const Node& cast) {
  std::optional<DataType> to = dataTypeFromInt(cast.attrInt("to", 0));
  return to ? std::string(dataTypeName(*to)) : "an unknown type";
}

std::string castReason(const DequantizedInput& in, const Value* value) {
  return fmt::format(
      "{} comes through DequantizeLinear '{}' and then Cast '{}' to {}: TensorRT does not fuse "
      "a DequantizeLinear into the layer across a Cast, so the layer runs in float",
      valueLabel(value), layerName(*in.dequantize), layerName(*in.cast), castTargetName(*in.cast));
}

// Whether TensorRT runs the layer in INT8 with this input: 8-bit (or narrower) integers
// dequantized right before it, with nothing but commuting ops in between.
bool fusesAsInt8(const std::optional<DequantizedInput>& in) {
  return in && in->cast == nullptr && in->isInteger8OrNarrower();
}

// The same for FP8: float8 E4M3FN dequantized right before the layer.
bool fusesAsFp8(const std::optional<DequantizedInput>& in) {
  return in && in->cast == nullptr && in->isFloat8E4M3();
}

}  // namespace

constexpr EnumName<Precision> kPrecisionNames[] = {{Precision::Int8, "INT8"},
                                                   {Precision::Fp8, "FP8"},
                                                   {Precision::Fp16, "FP16"},
                                                   {Precision::Fp32, "FP32"}};

std::string_view precisionName(Precision precision) {
  return enumName(kPrecisionNames, precision, "FP32");
}

bool DequantizedInput::isInteger8OrNarrower() const {
  switch (quantizedType) {
    case DataType::Int8:
    case DataType::UInt8:
    case DataType::Int4:
    case DataType::UInt4:
      return true;
    default:
      return false;
  }
}

std::optional<DequantizedInput> findDequantizedInput(const Value* value) {
  return findFrom(value, 0, false);
}

std::optional<DequantizedInput> findDequantizedInputAcrossCasts(const Value* value) {
  return findFrom(value, 0, true);
}

bool commutesWithQuantization(const Node& node) {
  return isIn(node, kCommutingOps);
}

bool isBuildTimeConstant(const Value* value) {
  return isConstantFrom(value, 0);
}

bool isComputeOp(const Node& node) {
  static constexpr std::array<std::string_view, 8> kOps = {
      "Conv",        "ConvTranspose", "Gemm",        "MatMul",
      "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"};
  return isIn(node, kOps);
}

bool isRecurrentOp(const Node& node) {
  return node.is("LSTM") || node.is("GRU") || node.is("RNN");
}

bool isWeightedOp(const Node& node) {
  static constexpr std::array<std::string_view, 4> kOps = {"Conv", "ConvTranspose", "Gemm",
                                                           "MatMul"};
  return isIn(node, kOps);
}

std::optional<size_t> weightInputIndex(const Node& node) {
  if (node.is("Conv") || node.is("ConvTranspose") || node.is("ConvInteger")) return 1;
  if (node.is("QLinearConv")) return 3;
  size_t index = node.is("QLinearMatMul") ? 3 : 1;
  if (node.is("Gemm") || node.is("MatMul") || node.is("MatMulInteger") ||
      node.is("QLinearMatMul")) {
    if (isBuildTimeConstant(node.input(index))) return index;
  }
  return std::nullopt;
}

std::optional<uint64_t> countMacs(const Node& node, const TensorInfoMap& info) {
  auto shapeOf = [&](const Value* v) -> std::optional<std::vector<int64_t>> {
    if (v == nullptr) return std::nullopt;
    return info.find(v).shape;
  };
  if (isRecurrentOp(node)) {
    // Per step and direction, each gate multiplies the input and the hidden state by its
    // weights: gates * hidden * (input + hidden) MACs per sequence element and batch row.
    auto x = shapeOf(node.input(0));
    const int64_t hidden = node.attrInt("hidden_size", 0);
    if (!x || x->size() != 3 || hidden <= 0) return std::nullopt;
    const int64_t gates = node.is("LSTM") ? 4 : node.is("GRU") ? 3 : 1;
    const int64_t directions = node.attrString("direction", "forward") == "bidirectional" ? 2 : 1;
    const int64_t steps = (*x)[0] * (*x)[1];  // sequence x batch, either layout
    return static_cast<uint64_t>(
        std::max<int64_t>(0, steps * directions * gates * hidden * ((*x)[2] + hidden)));
  }
  const bool qlinear = node.is("QLinearConv") || node.is("QLinearMatMul");
  const Value* a = node.input(0);
  const Value* b = node.input(qlinear ? 3 : 1);
  auto outShape = shapeOf(node.output(0));
  auto aShape = shapeOf(a);
  auto bShape = shapeOf(b);
  if (node.is("Conv") || node.is("QLinearConv") || node.is("ConvInteger")) {
    if (!outShape || !bShape || bShape->empty()) return std::nullopt;
    return product(*outShape) * product(std::span(*bShape).subspan(1));
  }
  if (node.is("ConvTranspose")) {
    if (!aShape || !bShape || bShape->empty()) return std::nullopt;
    return product(*aShape) * product(std::span(*bShape).subspan(1));
  }
  if (node.is("Gemm")) {
    if (!outShape || !aShape || aShape->size() != 2) return std::nullopt;
    int64_t k = (*aShape)[node.attrInt("transA", 0) != 0 ? 0 : 1];
    return product(*outShape) * static_cast<uint64_t>(std::max<int64_t>(k, 0));
  }
  if (node.is("MatMul") || node.is("MatMulInteger") || node.is("QLinearMatMul")) {
    if (!outShape || !aShape || aShape->empty()) return std::nullopt;
    return product(*outShape) * static_cast<uint64_t>(std::max<int64_t>(aShape->back(), 0));
  }
  return std::nullopt;
}

LayerInfo classifyLayer(const Node& node, const TensorInfoMap& info) {
  LayerInfo layer;
  layer.node = &node;
  layer.macs = countMacs(node, info);
  if (const Node* parent = node.graph()->parentNode();
      parent != nullptr && node.numOutputs() > 0 && info.ranToEnd()) {
    // Inside a body: its MACs are those of every run (a Loop's iterations); a branch the run
    // did not take is named.
    const uint64_t runs = info.find(node.output(0)).runs;
    layer.runs = runs;
    if (runs == 0) {
      layer.notes.push_back(
          fmt::format("inside {}: did not run on the inputs inspected (a branch "
                      "not taken); MACs of one run",
                      parent->describe()));
    } else if (runs > 1 && layer.macs) {
      layer.notes.push_back(
          fmt::format("inside {}: ran {} times; MACs of all runs", parent->describe(), runs));
      *layer.macs *= runs;
    }
  }
  std::optional<size_t> weightIndex = weightInputIndex(node);
  if (weightIndex) layer.weightValue = node.input(*weightIndex);

  if (isRecurrentOp(node)) {
    // ONNX has no quantized recurrent op, and no Q/DQ fuses into one: TensorRT runs it in its
    // input's float type.
    layer.precision =
        info.find(node.input(0)).type == DataType::Float16 ? Precision::Fp16 : Precision::Fp32;
    layer.reason = fmt::format("{} {} has no quantized form (no Q/DQ fuses into it)",
                               node.is("GRU") ? "a" : "an", node.opType());
    return layer;
  }
  if (!isWeightedOp(node)) {
    // QOperator / integer ops compute in integers by definition.
    layer.precision = Precision::Int8;
    layer.reason = "integer operator";
    if (layer.weightValue) layer.weightType = info.find(layer.weightValue).type;
    layer.notes.push_back(
        fmt::format("{} is the QOperator format; TensorRT's ONNX parser imports Q/DQ models only",
                    node.opType()));
    return layer;
  }

  const Value* data = node.input(0);
  const Value* second = node.input(1);
  layer.activation = findDequantizedInputAcrossCasts(data);
  layer.weight = findDequantizedInputAcrossCasts(second);
  if (layer.weightValue) {
    layer.weightType = layer.weight && layer.weight->constantData
                           ? layer.weight->quantizedType
                           : info.find(layer.weightValue).type;
  }
  const bool actInt = fusesAsInt8(layer.activation);
  const bool weightInt = fusesAsInt8(layer.weight);
  const bool actFp8 = fusesAsFp8(layer.activation);
  const bool weightFp8 = fusesAsFp8(layer.weight);
  // Both inputs through DequantizeLinear of one kind: the layer runs in that precision.
  auto quantizedBy = [&](Precision precision, const char* kind) {
    layer.precision = precision;
    layer.reason = weightIndex
                       ? fmt::format("input and weight come through {}DequantizeLinear", kind)
                       : fmt::format("both inputs come through {}DequantizeLinear", kind);
    addQuantizationNotes(*layer.activation, "the input", layer.notes);
    addQuantizationNotes(*layer.weight, weightIndex ? "the weight" : "the second input",
                         layer.notes);
    if (layer.activation->perChannel()) {
      layer.notes.push_back(
          "the input has per-channel scales; TensorRT takes per-channel scales for weights only");
    }
    return layer;
  };
  if (actInt && weightInt) return quantizedBy(Precision::Int8, "");
  if (actFp8 && weightFp8) return quantizedBy(Precision::Fp8, "float8 ");

  // INT4 weight-only (TensorRT 10): a MatMul or Gemm whose float input meets a weight stored
  // as int4/uint4 behind a blocked DequantizeLinear runs as a weight-only INT4 GEMM, computing in
  // the input's float type. Quantizing its input too is not what such a layer wants.
  if (!layer.activation && weightIndex && weightInt && layer.weight->constantData &&
      (layer.weight->quantizedType == DataType::Int4 ||
       layer.weight->quantizedType == DataType::UInt4) &&
      layer.weight->dequantize->attrInt("block_size", 0) > 0 &&
      (node.is("MatMul") || node.is("Gemm"))) {
    layer.weightOnly = true;
    layer.precision = info.find(data).type == DataType::Float16 ? Precision::Fp16 : Precision::Fp32;
    layer.reason = fmt::format(
        "INT4 weight-only: the weight comes through blocked {} DequantizeLinear (block_size {}) "
        "and the input stays {}",
        dataTypeName(layer.weight->quantizedType),
        layer.weight->dequantize->attrInt("block_size", 0), precisionName(layer.precision));
    addQuantizationNotes(*layer.weight, "the weight", layer.notes);
    return layer;
  }

  const std::string secondRole = weightIndex ? "weight" : "input";
  if ((actInt && weightFp8) || (actFp8 && weightInt)) {
    layer.reason = mixedReason(*layer.activation, data, *layer.weight, second);
  } else if (layer.activation && layer.activation->cast) {
    layer.reason = castReason(*layer.activation, data);
  } else if (layer.weight && layer.weight->cast) {
    layer.reason = castReason(*layer.weight, second);
  } else if (layer.activation && !actInt && !actFp8) {
    layer.reason = notIntegerReason(*layer.activation, data);
  } else if (layer.weight && !weightInt && !weightFp8) {
    layer.reason = notIntegerReason(*layer.weight, second);
  } else if (!layer.activation && !layer.weight) {
    layer.reason = "not quantized: no input comes through DequantizeLinear";
  } else if (!layer.activation) {
    layer.reason =
        fmt::format("input {} does not come through DequantizeLinear ({} quantized only)",
                    valueLabel(data), secondRole);
  } else {
    layer.reason =
        fmt::format("{} {} does not come through DequantizeLinear", secondRole, valueLabel(second));
  }
  DataType floatType = info.find(data).type;
  layer.precision = floatType == DataType::Float16 ? Precision::Fp16 : Precision::Fp32;
  if (layer.precision == Precision::Fp16) layer.reason += "; float16 inputs";
  return layer;
}

std::vector<LayerInfo> classifyLayers(const Graph& graph, const TensorInfoMap& info) {
  std::vector<LayerInfo> layers;
  for (const Node* node : graph.allNodes()) {
    if (isComputeOp(*node) || isRecurrentOp(*node)) layers.push_back(classifyLayer(*node, info));
  }
  return layers;
}

std::string layerName(const Node& node) {
  if (!node.name().empty()) return node.name();
  const Value* out = node.output(0);
  return out != nullptr && !out->isAbsent() ? out->name() : node.describe();
}

}  // namespace qopt::analysis
