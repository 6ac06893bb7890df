// quantize-weights: INT4 weight-only quantization of MatMul and Gemm weights, blockwise along K
// (the reduction axis), activations left in float. The form TensorRT 10 runs as an INT4
// weight-only GEMM is format=qdq: int4 codes, DequantizeLinear with axis and block_size (opset
// 21, raised through convert-opset), symmetric with zero point 0. format=ort writes ONNX
// Runtime's com.microsoft MatMulNBits instead. method=awq scales weight rows by the calibration
// activations' per-channel magnitude before rounding (see Awq.h) and divides the activation by
// the same scales, folded into the producer where that is exact (see ScaleFolding.h).
// method=gptq rounds the rows of each weight in turn and moves their error onto the rows not
// yet rounded, against the calibration activations' Gram matrix (see Gptq.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ActivationCapture.h"
#include "Awq.h"
#include "AwqScaleFolding.h"
#include "Emit.h"
#include "WeightSites.h"
#include "qopt/analysis/ChannelAffine.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/dense/BlockQuant.h"
#include "qopt/dense/Gptq.h"
#include "qopt/ir/Error.h"
#include "qopt/opset/OpsetUpgrade.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/pass/Target.h"

namespace qopt {
namespace {

using wq::BlockQuantized;
using wq::WeightSite;

enum class Method { Rtn, Awq, Gptq };
enum class Format { Qdq, Ort };

// Blocked DequantizeLinear (block_size) and the int4/uint4 types came in opset 21.
constexpr int64_t kBlockedDequantizeOpset = 21;

std::string formatDb(double db) {
  return std::isinf(db) ? std::string("exact") : fmt::format("{:.1f} dB", db);
}

class QuantizeWeightsPass : public Pass {
 public:
  QuantizeWeightsPass()
      : Pass("quantize-weights",
             "INT4 weight-only quantization of MatMul/Gemm weights, blockwise along K") {}

  std::vector<ModelProperty> provides() const override { return {ModelProperty::Quantized}; }

  void validateOptions() const override {
    if (*bits_ != 4) failOption("bits", "only 4-bit weights are supported");
    if (*blockSize_ < 16 || (*blockSize_ & (*blockSize_ - 1)) != 0) {
      failOption("block-size",
                 "must be a power of two >= 16 (ONNX Runtime's and TensorRT's "
                 "INT4 kernels take no other)");
    }
    if (*samples_ < 0) failOption("samples", "must be 0 (all) or positive");
  }

  PassResult run(Model& model, PassContext& context) override {
    PassResult result;
    for (const char* name : {"weights-quantized", "weights-skipped"}) result.statistics[name] = 0;
    const Target target = target_.resolve(context);
    std::vector<WeightSite> sites = findSites(model, target, result);
    if (sites.empty()) {
      result.note("model", "no MatMul or Gemm weight to quantize");
      return result;
    }
    // The converter may rewrite nodes: the sites are found again on the converted graph (its
    // remarks would repeat the ones given).
    if (*format_ == Format::Qdq && raiseOpsetForQdq(model, result)) {
      PassResult again;
      sites = findSites(model, target, again);
    }
    std::map<const Value*, wq::AwqChoice> awq;
    wq::CapturedActivations captured;  // GPTQ reads its Gram matrices below
    if (*method_ != Method::Rtn) {
      Groups groups = groupByActivation(sites);
      captured = capture(model, groups, context, result);
      if (*method_ == Method::Awq) awq = searchAwq(groups, captured, context, result);
    }

    wq::BlockScheme scheme;
    scheme.blockSize = *blockSize_;
    scheme.symmetric = *symmetric_;
    scheme.searchScale = *method_ != Method::Awq;
    int64_t bytesBefore = 0, bytesAfter = 0;
    double minScale = std::numeric_limits<double>::infinity(), maxScale = 0;
    for (WeightSite& site : sites) {
      scheme.scaleType = site.floatType;
      wq::Matrix toQuantize = site.weight;
      auto found = awq.find(site.activation);
      if (found != awq.end()) toQuantize = wq::scaleRows(site.weight, found->second.scales);
      std::optional<std::vector<double>> bias;
      if (*format_ == Format::Ort && site.node->is("Gemm")) {
        bias = gemmBiasForOrt(site);
        const double alpha = site.node->attrFloat("alpha", 1.0f);
        for (double& v : toQuantize.values) v *= alpha;
      }
      BlockQuantized q = wq::quantizeBlockwise(toQuantize, scheme);
      std::string gptqNote;
      if (*method_ == Method::Gptq)
        gptqNote = applyGptq(toQuantize, captured.grams.at(site.activation).gram, scheme, q);
      const double sqnr = wq::sqnrDb(toQuantize.values, wq::dequantize(q).values);
      const auto [lo, hi] = std::minmax_element(q.scales.begin(), q.scales.end());
      minScale = std::min(minScale, *lo);
      maxScale = std::max(maxScale, *hi);
      bytesBefore += site.k() * site.n() * (site.floatType == DataType::Float ? 4 : 2);
      const std::string subject = site.node->describe();
      bytesAfter += *format_ == Format::Qdq ? wq::emitQdq(site, q) : wq::emitOrt(site, q, bias);
      result.statistics.add("weights-quantized");
      result.applied(subject,
                     fmt::format("INT4 weight-only ({}, {}, {}): K={} N={}, {} block(s) of {}{}, "
                                 "scales [{:.3g}, {:.3g}], weight SQNR {}{}",
                                 *format_ == Format::Qdq ? "DequantizeLinear" : "MatMulNBits",
                                 methodName(), *symmetric_ ? "symmetric" : "asymmetric", site.k(),
                                 site.n(), q.blocks, q.blockSize,
                                 site.k() % q.blockSize != 0
                                     ? fmt::format(" (last block {})", site.k() % q.blockSize)
                                     : std::string(),
                                 *lo, *hi, formatDb(sqnr), gptqNote));
    }
    result.statistics["weight-bytes-before"] = bytesBefore;
    result.statistics["weight-bytes-after"] = bytesAfter;
    result.note("model", fmt::format("{} weight(s) quantized, {} -> {} bytes; scales in [{:.3g}, "
                                     "{:.3g}]",
                                     sites.size(), bytesBefore, bytesAfter, minScale, maxScale));
    result.changed = true;
    return result;
  }

 private:
  std::vector<WeightSite> findSites(Model& model, const Target& target, PassResult& result) {
    std::vector<WeightSite> sites;
    for (Node* node : model.graph().allNodes()) {  // bodies included
      std::string why;
      std::optional<WeightSite> site = wq::matchWeightSite(node, why);
      if (site && *format_ == Format::Ort && node->is("Gemm")) {
        if (!gemmFitsOrt(*site, why)) site.reset();
      }
      if (site && *format_ == Format::Qdq && target.isTensorRT() && site->k() % 2 != 0) {
        why = fmt::format(
            "left alone: K={} is odd; TensorRT needs the blocked dimension of an "
            "INT4 weight even",
            site->k());
        site.reset();
      }
      if (site) {
        sites.push_back(std::move(*site));
      } else if (!why.empty()) {
        result.statistics.add("weights-skipped");
        result.missed(node->describe(), why);
      }
    }
    if (*format_ == Format::Qdq && target.isTensorRT() && !*symmetric_ && !sites.empty()) {
      result.note("model",
                  "symmetric=false writes uint4 weights with non-zero zero points, which TensorRT "
                  "does not take (its INT4 weights are int4 with zero point 0)");
    }
    return sites;
  }

  // MatMulNBits computes A * B^T + bias: a Gemm maps onto it when its C is absent or one value
  // per output column (alpha is folded into the weight, beta into the bias).
  static bool gemmFitsOrt(const WeightSite& site, std::string& why) {
    const Value* c = site.node->input(2);
    if (c == nullptr) return true;
    std::optional<Tensor> bias = fold::constantOf(c);
    if (!bias || bias->numElements() != static_cast<uint64_t>(site.n()) ||
        bias->dataType() != site.floatType) {
      why = fmt::format(
          "left alone: its C {} is not a constant of N={} {} values, which "
          "MatMulNBits' bias needs",
          fold::describeValue(c), site.n(), dataTypeName(site.floatType));
      return false;
    }
    return true;
  }

  static std::optional<std::vector<double>> gemmBiasForOrt(const WeightSite& site) {
    const Value* c = site.node->input(2);
    if (c == nullptr) return std::nullopt;
    std::vector<double> bias = fold::constantOf(c)->toDoubles();
    const double beta = site.node->attrFloat("beta", 1.0f);
    for (double& v : bias) v *= beta;
    return bias;
  }

  bool raiseOpsetForQdq(Model& model, PassResult& result) {
    try {
      return qdq::raiseOpset(model, kBlockedDequantizeOpset, "blocked int4 DequantizeLinear",
                             result)
          .has_value();
    } catch (const Error& e) {
      throw Error(ErrorKind::Input, model.sourcePath, {},
                  fmt::format("quantize-weights: format=qdq needs opset {} (blocked int4 "
                              "DequantizeLinear) and the model cannot be converted: {}; "
                              "format=ort keeps the model's opset",
                              kBlockedDequantizeOpset, e.what()));
    }
  }

  struct Groups {
    std::map<const Value*, std::vector<WeightSite*>> sites;
    std::vector<const Value*> order;  // first reader's order
  };

  // The MatMuls reading one tensor form a group: AWQ gives them one s (a single division of the
  // tensor serves them all) and GPTQ one Gram matrix.
  static Groups groupByActivation(std::vector<WeightSite>& sites) {
    Groups groups;
    for (WeightSite& site : sites) {
      auto& group = groups.sites[site.activation];
      if (group.empty()) groups.order.push_back(site.activation);
      group.push_back(&site);
    }
    return groups;
  }

  wq::CapturedActivations capture(const Model& model, const Groups& groups, PassContext& context,
                                  PassResult& result) const {
    std::vector<int64_t> widths;
    for (const Value* v : groups.order) widths.push_back(groups.sites.at(v).front()->k());
    const bool awq = *method_ == Method::Awq;
    wq::CapturedActivations captured =
        wq::captureActivations(model, groups.order, widths, context, static_cast<size_t>(*samples_),
                               awq ? wq::Keep::Rows : wq::Keep::Gram, name(), awq ? "AWQ" : "GPTQ");
    if (awq) {
      result.note("model", fmt::format("AWQ activations from {} sample(s) ({}), at most {} rows "
                                       "per tensor",
                                       captured.samples, captured.origin, wq::kMaxActivationRows));
    } else {
      int64_t rows = 0;
      for (const auto& [activation, stats] : captured.grams) rows = std::max(rows, stats.rows);
      result.note("model", fmt::format("GPTQ Gram matrices from {} sample(s) ({}), up to {} rows "
                                       "per tensor",
                                       captured.samples, captured.origin, rows));
    }
    return captured;
  }

  std::string_view methodName() const {
    return *method_ == Method::Awq ? "awq" : *method_ == Method::Gptq ? "gptq" : "rtn";
  }

  // Replaces q (round to nearest) by GPTQ's result and says what it gained on the calibration
  // activations; keeps q, and says why, when the Gram matrix cannot be factored.
  static std::string applyGptq(const wq::Matrix& w, const std::vector<double>& gram,
                               const wq::BlockScheme& scheme, BlockQuantized& q) {
    std::string why;
    std::optional<BlockQuantized> gptq = wq::quantizeGptq(w, gram, scheme, why);
    if (!gptq) return fmt::format("; round to nearest kept: {}", why);
    auto outputError = [&](const BlockQuantized& candidate) {
      wq::Matrix d = wq::dequantize(candidate);
      for (size_t i = 0; i < d.values.size(); ++i) d.values[i] -= w.values[i];
      return wq::quadraticError(gram, d);
    };
    const double energy = wq::quadraticError(gram, w);
    const double rtn = outputError(q), ours = outputError(*gptq);
    q = std::move(*gptq);
    return fmt::format("; output SQNR on the calibration activations {} (round to nearest {})",
                       formatDb(10.0 * std::log10(energy / ours)),
                       formatDb(10.0 * std::log10(energy / rtn)));
  }

  // AWQ scales, one search per activation group. Then the division goes into the graph.
  std::map<const Value*, wq::AwqChoice> searchAwq(Groups& groups,
                                                  const wq::CapturedActivations& captured,
                                                  PassContext& context, PassResult& result) {
    std::map<const Value*, wq::AwqChoice> choices;
    wq::BlockScheme scheme;
    scheme.blockSize = *blockSize_;
    scheme.symmetric = *symmetric_;
    for (const Value* activation : groups.order) {
      std::vector<WeightSite*>& group = groups.sites[activation];
      scheme.scaleType = group.front()->floatType;
      std::vector<const wq::Matrix*> weights;
      std::vector<Node*> readers;
      for (WeightSite* site : group) {
        weights.push_back(&site->weight);
        readers.push_back(site->node);
      }
      const wq::ActivationRows& rows = captured.rows.at(activation);
      wq::AwqChoice choice = wq::searchAwqScales(rows, weights, scheme);
      const std::string subject = fmt::format("tensor '{}'", activation->name());
      const double rtnDb = 10.0 * std::log10(choice.referenceEnergy / choice.rtnError);
      const double awqDb = 10.0 * std::log10(choice.referenceEnergy / choice.bestError);
      result.statistics.add("awq-groups");
      if (choice.alpha == 0) {
        result.note(subject, fmt::format("AWQ kept alpha=0 (plain RTN) for {} MatMul(s): no "
                                         "scaling lowered the output error (SQNR {})",
                                         group.size(), formatDb(rtnDb)));
        continue;
      }
      const auto [lo, hi] = std::minmax_element(choice.scales.begin(), choice.scales.end());
      wq::FoldOutcome outcome = wq::applyInverseScales(const_cast<Value*>(activation), readers,
                                                       choice.scales, group.front()->floatType);
      if (outcome.kind != wq::FoldKind::InsertedMul) {
        // The activation itself now holds x / s (verify maps it back).
        analysis::recordChannelDivision(context, activation->name(), -1, choice.scales);
      }
      result.statistics.add(outcome.kind == wq::FoldKind::LayerNormalization
                                ? "awq-folded-layernorm"
                            : outcome.kind == wq::FoldKind::ConstantMul ? "awq-folded-mul"
                                                                        : "awq-mul-inserted");
      result.applied(subject,
                     fmt::format("AWQ alpha={:.3f} for {} MatMul(s) on {} rows: s in [{:.3g}, "
                                 "{:.3g}], output SQNR {} -> {} against RTN; {}",
                                 choice.alpha, group.size(), rows.rows(), *lo, *hi, formatDb(rtnDb),
                                 formatDb(awqDb), outcome.message));
      choices.emplace(activation, std::move(choice));
    }
    // Keyed by the tensor the sites recorded; an inserted Mul now stands between it and them.
    return choices;
  }

  Option<int64_t> bits_{*this, "bits", 4, "Bits per weight (4)"};
  Option<int64_t> blockSize_{*this, "block-size", 128,
                             "Weights per scale along K (a power of two >= 16); a K that is not "
                             "a multiple leaves a shorter last block"};
  EnumOption<Method> method_{*this,
                             "method",
                             Method::Rtn,
                             "rtn: round to nearest; awq: activation-aware scales searched on "
                             "--calib-data; gptq: rows rounded in turn, each one's error moved "
                             "onto the rest against --calib-data's activations",
                             {{Method::Rtn, "rtn"}, {Method::Awq, "awq"}, {Method::Gptq, "gptq"}}};
  EnumOption<Format> format_{*this,
                             "format",
                             Format::Qdq,
                             "qdq: int4 DequantizeLinear with block_size (opset 21, TensorRT); "
                             "ort: com.microsoft MatMulNBits (ONNX Runtime)",
                             {{Format::Qdq, "qdq"}, {Format::Ort, "ort"}}};
  Option<bool> symmetric_{*this, "symmetric", true,
                          "Symmetric int4 (codes -8..7, zero point 0; rtn: scale absmax/d, d in "
                          "7..8 chosen per block for the smallest error); false: uint4 with "
                          "min/max zero points"};
  Option<int64_t> samples_{*this, "samples", 0, "Calibration samples AWQ and GPTQ read (0: all)"};
  TargetOption target_{*this};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("quantize-weights", QOPT_VERSION_STRING, qopt::QuantizeWeightsPass)
