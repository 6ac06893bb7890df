// calibrator=auto (qopt/quant/AutoCalibration.h) on small models whose best threshold is known:
// a bounded tensor keeps its max, a heavy tail is clipped, a bimodal tensor keeps both modes,
// and an outlier channel is kept or clipped according to what its consumer computes. The
// consumer error is recomputed here independently (fake quantization and the product in double)
// and auto must pick its minimum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/TextFormat.h"
#include "qopt/quant/AutoCalibration.h"

namespace qopt::quant {
namespace {

interp::Array floats(interp::Shape shape, const std::vector<float>& values) {
  interp::Array a(DataType::Float, std::move(shape));
  std::copy(values.begin(), values.end(), a.data<float>());
  return a;
}

std::vector<analysis::Sample> oneSample(const std::string& input, interp::Shape shape,
                                        const std::vector<float>& values) {
  std::vector<analysis::Sample> samples(1);
  samples[0].source = "sample0";
  samples[0].inputs.emplace(input, floats(std::move(shape), values));
  return samples;
}

/// Calibration takes the samples over (it releases each once run): it gets copies here.
std::map<std::string, TensorStatistics> statisticsOf(const Model& model,
                                                     const std::vector<std::string>& names,
                                                     std::vector<analysis::Sample> samples) {
  return collectStatistics(model, names, [&](const std::function<bool(analysis::Sample&)>& fn) {
    for (analysis::Sample& sample : samples) {
      if (!fn(sample)) return;
    }
  });
}

/// The choice for tensor `name` read by every use it has in `model`.
AutoChoice chooseFor(const Model& model, const std::string& name,
                     std::vector<analysis::Sample>& samples, const QuantizedWeights& weights = {}) {
  auto stats = statisticsOf(model, {name}, samples);
  const Value* value = model.graph().findValue(name);
  AutoTensor tensor;
  tensor.value = value;
  tensor.uses.assign(value->uses().begin(), value->uses().end());
  tensor.statistics = &stats.at(name);
  std::vector<AutoTensor> tensors{tensor};
  CalibratorSpec spec;
  analysis::SampleWorkers workers(2, uint64_t{1} << 30);
  std::vector<AutoChoice> choices =
      chooseAutoRanges(workers, model, tensors, spec, weights, samples);
  EXPECT_EQ(choices.size(), 1u);
  return choices.front();
}

const AutoCandidate& candidate(const AutoChoice& choice, CalibratorKind kind) {
  for (const AutoCandidate& c : choice.candidates) {
    if (c.calibrator == kind) return c;
  }
  throw std::runtime_error("no such candidate");
}

/// The chosen candidate's measured error is the smallest of all.
void expectSmallestError(const AutoChoice& choice) {
  const AutoCandidate& chosen = candidate(choice, choice.chosen);
  ASSERT_TRUE(chosen.error.has_value());
  for (const AutoCandidate& c : choice.candidates) {
    ASSERT_TRUE(c.error.has_value());
    EXPECT_LE(*chosen.error, *c.error) << calibratorName(c.calibrator);
  }
}

/// int8 QuantizeLinear then DequantizeLinear (half-to-even, saturating), in double.
double fakeQuantize(float x, double amax) {
  const float scale = static_cast<float>(amax / 127.0);
  const double q = std::clamp(std::nearbyint(static_cast<double>(x / scale)), -128.0, 127.0);
  return q * static_cast<double>(scale);
}

/// Symmetric int8 per column of a [k, n] matrix (MatMul's output channel), dequantized.
std::vector<float> int8PerColumn(const std::vector<float>& w, size_t k, size_t n) {
  std::vector<float> out(w.size());
  for (size_t j = 0; j < n; ++j) {
    float amax = 0;
    for (size_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(w[i * n + j]));
    const float scale = amax / 127.0f;
    for (size_t i = 0; i < k; ++i) {
      out[i * n + j] = static_cast<float>(std::nearbyint(w[i * n + j] / scale)) * scale;
    }
  }
  return out;
}

/// noise / signal of x[rows, k] * wq[k, n] with x fake-quantized at amax, against x * w.
double matMulError(const std::vector<float>& x, const std::vector<float>& w,
                   const std::vector<float>& wq, size_t rows, size_t k, size_t n, double amax) {
  double noise = 0, signal = 0;
  std::vector<double> xq(x.size());
  for (size_t i = 0; i < x.size(); ++i) xq[i] = fakeQuantize(x[i], amax);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < n; ++j) {
      double exact = 0, quantized = 0;
      for (size_t i = 0; i < k; ++i) {
        exact += double{x[r * k + i]} * double{w[i * n + j]};
        quantized += xq[r * k + i] * double{wq[i * n + j]};
      }
      signal += exact * exact;
      noise += (quantized - exact) * (quantized - exact);
    }
  }
  return noise / signal;
}

std::string floatList(const std::vector<float>& values) {
  std::string out;
  for (float v : values) out += (out.empty() ? "" : ", ") + fmt::format("{:.9g}", v);
  return out;
}

std::vector<float> gaussian(size_t n, double mean, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(mean, sigma);
  std::vector<float> out(n);
  for (float& v : out) v = static_cast<float>(normal(rng));
  return out;
}

/// A model y = MatMul(x, w) with x of [rows, k] and w given.
std::unique_ptr<Model> matMulModel(size_t rows, size_t k, size_t n, const std::vector<float>& w) {
  auto model = parseModelText(fmt::format(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[{0}, {1}] x) => (float[{0}, {2}] y) <float[{1}, {2}] w = {{{3}}}> {{
  y = MatMul(x, w)
}}
)",
                                          rows, k, n, floatList(w)),
                              "matmul.onnxtxt");
  return model;
}

QuantizedWeights weightsOf(const Model& model, const std::vector<float>& wq, size_t k, size_t n) {
  QuantizedWeights weights;
  const Node* matMul = model.graph().findValue("y")->producer();
  weights.emplace(std::make_pair(matMul, size_t{1}),
                  Tensor::fromFloats({static_cast<int64_t>(k), static_cast<int64_t>(n)}, wq));
  return weights;
}

/// Checks auto's errors against matMulError and that it chose their minimum.
void expectMatchesReference(const AutoChoice& choice, const std::vector<float>& x,
                            const std::vector<float>& w, const std::vector<float>& wq, size_t rows,
                            size_t k, size_t n) {
  double best = std::numeric_limits<double>::infinity();
  double bestAmax = 0;
  for (const AutoCandidate& c : choice.candidates) {
    ASSERT_TRUE(c.error.has_value()) << calibratorName(c.calibrator);
    const double reference = matMulError(x, w, wq, rows, k, n, c.amax);
    EXPECT_NEAR(*c.error, reference, 1e-3 * reference + 1e-12) << calibratorName(c.calibrator);
    if (reference < best) {
      best = reference;
      bestAmax = c.amax;
    }
  }
  EXPECT_EQ(choice.amax, bestAmax);
  expectSmallestError(choice);
}

// --- bounded distributions ---

// A Softmax output (here through a Reshape) is never clipped below its observed max, although
// its histogram (a spike of small values) makes the entropy calibrator clip it.
TEST(AutoCalibrator, SoftmaxOutputKeepsItsMax) {
  auto model = parseModelText(fmt::format(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[64, 32] x) => (float[64, 4] y) <float[32, 4] w = {{{}}}, int64[2] shape = {{64, 32}}> {{
  p = Softmax <axis = -1> (x)
  s = Reshape(p, shape)
  y = MatMul(s, w)
}}
)",
                                          floatList(gaussian(128, 0, 1, 3))),
                              "softmax.onnxtxt");
  auto samples = oneSample("x", {64, 32}, gaussian(64 * 32, 0, 3, 4));
  AutoChoice choice = chooseFor(*model, "s", samples);
  auto stats = statisticsOf(*model, {"s"}, samples);
  EXPECT_EQ(choice.chosen, CalibratorKind::Max);
  EXPECT_EQ(choice.amax, double{stats.at("s").absMax()});
  EXPECT_NE(choice.reason.find("Softmax"), std::string::npos) << choice.reason;
  // The rule matters: a histogram calibrator would have clipped.
  EXPECT_LT(candidate(choice, CalibratorKind::Entropy).amax, 0.9 * choice.amax);
}

TEST(AutoCalibrator, BoundedByConstructionLooksThroughShapeOps) {
  auto model = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[3, 2] a, float[2, 3] b, float[2, 3] c, float[2, 3] d, float[6] e)
    <float lo = {0.0}, float hi = {6.0}> {
  sig = Sigmoid(x)
  a = Transpose <perm = [1, 0]> (sig)
  b = Clip(x, lo, hi)
  c = Clip(x, lo)
  d = Relu(x)
  t = Tanh(x)
  e = Flatten <axis = 0> (t)
}
)",
                              "bounded.onnxtxt");
  const Graph& g = model->graph();
  EXPECT_EQ(boundedByConstruction(*g.findValue("a")), "Sigmoid");
  EXPECT_EQ(boundedByConstruction(*g.findValue("b")), "Clip");
  EXPECT_EQ(boundedByConstruction(*g.findValue("c")), "");  // no upper bound
  EXPECT_EQ(boundedByConstruction(*g.findValue("d")), "");
  EXPECT_EQ(boundedByConstruction(*g.findValue("x")), "");
  EXPECT_EQ(boundedByConstruction(*g.findValue("e")), "Tanh");
}

// Softmax-like rows in [0, 1] fed as a plain input (no rule applies): the few large weights
// carry the product, so the measured error itself keeps (within a bin of the histogram) the max,
// where entropy clips at an eighth of it.
TEST(AutoCalibrator, SoftmaxLikeValuesPickMaxByError) {
  const size_t rows = 256, k = 32, n = 8;
  std::vector<float> logits = gaussian(rows * k, 0, 3, 5);
  std::vector<float> x(rows * k);
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (size_t i = 0; i < k; ++i) sum += std::exp(double{logits[r * k + i]});
    for (size_t i = 0; i < k; ++i) {
      x[r * k + i] = static_cast<float>(std::exp(double{logits[r * k + i]}) / sum);
    }
  }
  std::vector<float> w = gaussian(k * n, 0, 1, 6);
  std::vector<float> wq = int8PerColumn(w, k, n);
  auto model = matMulModel(rows, k, n, w);
  auto samples = oneSample("x", {static_cast<int64_t>(rows), static_cast<int64_t>(k)}, x);
  AutoChoice choice = chooseFor(*model, "x", samples, weightsOf(*model, wq, k, n));
  const double absMax = candidate(choice, CalibratorKind::Max).amax;
  EXPECT_GE(choice.amax, 0.98 * absMax) << describeAutoChoice(choice);
  EXPECT_EQ(choice.reason, "smallest consumer error");
  expectMatchesReference(choice, x, w, wq, rows, k, n);
  // Entropy clips these rows and costs several times the error.
  EXPECT_LT(candidate(choice, CalibratorKind::Entropy).amax, 0.5 * absMax);
  EXPECT_GT(*candidate(choice, CalibratorKind::Entropy).error,
            100 * *candidate(choice, choice.chosen).error);
}

// --- heavy tail, bimodal ---

// A Gaussian with a few large outliers (4 in 2^20 values at 60 sigma): keeping them costs the
// bulk most of its resolution, clipping them costs less; auto clips (percentile or mse).
TEST(AutoCalibrator, HeavyTailIsClipped) {
  const size_t rows = 4096, k = 256, n = 8;
  std::vector<float> x = gaussian(rows * k, 0, 1, 7);
  for (size_t i : {size_t{1000}, size_t{300000}, size_t{600000}, size_t{900000}}) {
    x[i] = i % 2 ? -60.0f : 60.0f;
  }
  std::vector<float> w = gaussian(k * n, 0, 1, 8);
  std::vector<float> wq = int8PerColumn(w, k, n);
  auto model = matMulModel(rows, k, n, w);
  auto samples = oneSample("x", {static_cast<int64_t>(rows), static_cast<int64_t>(k)}, x);
  AutoChoice choice = chooseFor(*model, "x", samples, weightsOf(*model, wq, k, n));
  EXPECT_TRUE(choice.chosen == CalibratorKind::Percentile || choice.chosen == CalibratorKind::Mse)
      << describeAutoChoice(choice);
  EXPECT_LT(choice.amax, 0.75 * 60);
  EXPECT_LT(*candidate(choice, choice.chosen).error,
            *candidate(choice, CalibratorKind::Max).error / 1.3);
  expectMatchesReference(choice, x, w, wq, rows, k, n);
}

// Two clusters, 90% around 0 and 10% around 8: the far cluster is real data, not a tail, and
// clipping it would move a tenth of the values; auto keeps both modes.
TEST(AutoCalibrator, BimodalKeepsBothModes) {
  const size_t rows = 1024, k = 64, n = 8;
  std::vector<float> x = gaussian(rows * k, 0, 0.5, 9);
  std::vector<float> far = gaussian(rows * k / 10, 8, 0.5, 10);
  for (size_t i = 0; i < far.size(); ++i) x[i * 10 + 3] = far[i];
  std::vector<float> w = gaussian(k * n, 0, 1, 11);
  std::vector<float> wq = int8PerColumn(w, k, n);
  auto model = matMulModel(rows, k, n, w);
  auto samples = oneSample("x", {static_cast<int64_t>(rows), static_cast<int64_t>(k)}, x);
  AutoChoice choice = chooseFor(*model, "x", samples, weightsOf(*model, wq, k, n));
  EXPECT_GE(choice.amax, 8.0) << describeAutoChoice(choice);
  expectMatchesReference(choice, x, w, wq, rows, k, n);
}

// --- outlier channels: the consumer decides ---

// Channel 5 of x is 50 times larger than the others (an outlier channel after LayerNorm). When
// the MatMul weighs it like the others, it carries the output and most of its range is kept;
// when the weights of its row are tiny (the layer learned to ignore it), clipping it harder
// costs little and gives the other channels their resolution. A per-tensor error (the mse
// calibrator) sees the same tensor in both and cannot tell the two apart.
TEST(AutoCalibrator, OutlierChannelFollowsTheMatMul) {
  const size_t rows = 512, k = 64, n = 8, outlier = 5;
  std::vector<float> x = gaussian(rows * k, 0, 1, 12);
  for (size_t r = 0; r < rows; ++r) x[r * k + outlier] *= 50;
  std::vector<float> uses = gaussian(k * n, 0, 1, 13);
  std::vector<float> ignores = uses;
  for (size_t j = 0; j < n; ++j) ignores[outlier * n + j] *= 1e-3f;

  double amaxWhenUsed = 0;
  for (const std::vector<float>* w : {&uses, &ignores}) {
    std::vector<float> wq = int8PerColumn(*w, k, n);
    auto model = matMulModel(rows, k, n, *w);
    auto samples = oneSample("x", {static_cast<int64_t>(rows), static_cast<int64_t>(k)}, x);
    AutoChoice choice = chooseFor(*model, "x", samples, weightsOf(*model, wq, k, n));
    SCOPED_TRACE(describeAutoChoice(choice));
    expectMatchesReference(choice, x, *w, wq, rows, k, n);
    if (w == &uses) {
      amaxWhenUsed = choice.amax;
      EXPECT_GE(choice.amax, 0.75 * candidate(choice, CalibratorKind::Max).amax);
    } else {
      EXPECT_LT(choice.amax, 0.75 * amaxWhenUsed);
    }
  }
}

// The same through a 1x1 Conv (NCHW, channel 3 the outlier, its filter taps tiny).
TEST(AutoCalibrator, OutlierChannelIntoConv) {
  const size_t c = 16, h = 16, wd = 16, out = 4, outlier = 3;
  std::vector<float> x = gaussian(c * h * wd, 0, 1, 14);
  for (size_t i = 0; i < h * wd; ++i) x[outlier * h * wd + i] *= 50;
  std::vector<float> filter = gaussian(out * c, 0, 1, 15);
  for (size_t o = 0; o < out; ++o) filter[o * c + outlier] *= 1e-3f;
  auto model = parseModelText(fmt::format(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 16, 16, 16] x) => (float[1, 4, 16, 16] y) <float[4, 16, 1, 1] w = {{{}}}> {{
  y = Conv(x, w)
}}
)",
                                          floatList(filter)),
                              "conv.onnxtxt");
  auto samples = oneSample("x", {1, 16, 16, 16}, x);
  AutoChoice choice = chooseFor(*model, "x", samples);
  // The reference: a 1x1 convolution is a product over channels at every pixel.
  std::vector<float> pixels(h * wd * c), filterT(c * out);
  for (size_t ch = 0; ch < c; ++ch) {
    for (size_t p = 0; p < h * wd; ++p) pixels[p * c + ch] = x[ch * h * wd + p];
    for (size_t o = 0; o < out; ++o) filterT[ch * out + o] = filter[o * c + ch];
  }
  SCOPED_TRACE(describeAutoChoice(choice));
  expectMatchesReference(choice, pixels, filterT, filterT, h * wd, c, out);
  EXPECT_LT(choice.amax, 0.75 * candidate(choice, CalibratorKind::Max).amax);
}

TEST(AutoCalibrator, AllZeroTensorAndEqualCandidates) {
  auto model = matMulModel(2, 2, 1, {1, 2});
  auto zeros = oneSample("x", {2, 2}, {0, 0, 0, 0});
  AutoChoice zero = chooseFor(*model, "x", zeros);
  EXPECT_EQ(zero.amax, 0.0);
  EXPECT_EQ(zero.reason, "every value was 0");
  // Four equal magnitudes: every calibrator gives the same threshold, nothing to measure.
  auto equal = oneSample("x", {2, 2}, {3, -3, 3, -3});
  AutoChoice same = chooseFor(*model, "x", equal);
  EXPECT_EQ(same.chosen, CalibratorKind::Max);
  EXPECT_EQ(same.amax, 3.0);
  EXPECT_EQ(same.reason, "all candidates equal");
  for (const AutoCandidate& c : same.candidates) EXPECT_FALSE(c.error.has_value());
}

// --- the whole-model check ---

// x feeds a Mul whose output passes an Add (no fused activation: the consumer is judged at the
// Mul) and then a Relu. x is 99998 values in [0, 1) and two at -100: at the Mul, keeping the -100s
// (max) costs least; at the output the Relu removes them, so a clipped range costs far less.
// The check measures every assignment on the model's output (recomputed here in double), keeps
// the smallest, and the choices follow it.
// The check replaces the per-tensor choices only for a gain of kCheckMinGainDb or more; among
// the replacements the least error wins, ties to the earlier.
TEST(AutoCalibrator, WholeModelCheckNeedsAClearGainToReplaceThePerTensorChoices) {
  const double justEnough = std::pow(10.0, -kCheckMinGainDb / 10.0);
  EXPECT_EQ(keptAssignment(std::vector<double>{1.0}), 0u);
  EXPECT_EQ(keptAssignment(std::vector<double>{1.0, 0.999, 1.2}), 0u);  // 0.004 dB
  EXPECT_EQ(keptAssignment(std::vector<double>{1.0, justEnough * 1.001}), 0u);
  EXPECT_EQ(keptAssignment(std::vector<double>{1.0, justEnough * 0.999}), 1u);
  EXPECT_EQ(keptAssignment(std::vector<double>{1.0, 0.5, 0.25, 0.25}), 2u);
  EXPECT_EQ(keptAssignment(std::vector<double>{0.0, 0.0}), 0u);
}

TEST(AutoCalibrator, WholeModelCheckMeasuresTheOutput) {
  auto model = parseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 100000] x) => (float[1, 100000] y) <float one = {1.0}, float zero = {0.0}> {
  m = Mul(x, one)
  s = Add(m, zero)
  y = Relu(s)
}
)",
                              "tail.onnxtxt");
  std::vector<float> x(100000);
  for (size_t i = 0; i < 99998; ++i) x[i] = static_cast<float>(i % 997) / 997.0f;
  x[99998] = x[99999] = -100.0f;
  auto samples = oneSample("x", {1, 100000}, x);
  auto stats = statisticsOf(*model, {"x"}, samples);
  const Value* value = model->graph().findValue("x");
  AutoTensor tensor;
  tensor.value = value;
  tensor.uses.assign(value->uses().begin(), value->uses().end());
  tensor.statistics = &stats.at("x");
  std::vector<AutoTensor> tensors{tensor};
  AutoOutputCheck check;
  analysis::SampleWorkers workers(2, uint64_t{1} << 30);
  std::vector<AutoChoice> choices = chooseAutoRanges(workers, *model, tensors, CalibratorSpec{}, {},
                                                     samples, symmetricInt8, &check);
  ASSERT_EQ(choices.size(), 1u);
  const AutoChoice& choice = choices.front();
  ASSERT_TRUE(check.run) << describeAutoChoice(choice);
  ASSERT_GE(check.errors.size(), 2u);
  EXPECT_EQ(check.errors.front().first, "per-tensor choices");

  // The output error of x quantized at amax, in double.
  auto outputError = [&](double amax) {
    const double scale = static_cast<double>(static_cast<float>(amax / 127.0));
    double noise = 0, signal = 0;
    for (float v : x) {
      const double q = std::clamp(std::nearbyint(double{v} / scale), -128.0, 127.0) * scale;
      const double want = std::max(0.0, double{v}), got = std::max(0.0, q);
      noise += (got - want) * (got - want);
      signal += want * want;
    }
    return noise / signal;
  };
  // The per-tensor judgement (the smallest error at the Mul) kept the -100s; the check measured
  // what the output sees.
  const AutoCandidate* perTensor = &choice.candidates.front();
  for (const AutoCandidate& c : choice.candidates) {
    ASSERT_TRUE(c.error.has_value());
    if (*c.error < *perTensor->error) perTensor = &c;
  }
  EXPECT_GT(perTensor->amax, 90.0);
  EXPECT_NEAR(check.errors.front().second, outputError(perTensor->amax),
              1e-3 * check.errors.front().second + 1e-12);
  double best = check.errors.front().second;
  std::string kept = check.errors.front().first;
  for (const auto& [label, error] : check.errors) {
    for (const AutoCandidate& c : choice.candidates) {
      if (label.rfind(std::string(calibratorName(c.calibrator)) + " everywhere", 0) == 0) {
        EXPECT_NEAR(error, outputError(c.amax), 1e-3 * error + 1e-12) << label;
      }
    }
    if (error < best) {
      best = error;
      kept = label;
    }
  }
  EXPECT_EQ(check.kept, kept);
  // A clipping calibrator exists here and wins at the output, by orders of magnitude.
  EXPECT_NE(check.kept, "per-tensor choices") << describeOutputCheck(check);
  EXPECT_LT(choice.amax, 50.0);
  EXPECT_LT(best, 0.01 * check.errors.front().second);
  EXPECT_NE(choice.reason.find("whole-model check"), std::string::npos) << choice.reason;
  EXPECT_NE(describeOutputCheck(check).find("kept " + check.kept), std::string::npos);
}

TEST(AutoCalibrator, HistogramCalibratorsRefuseAuto) {
  TensorStatistics stats;
  std::vector<float> values{1, 2};
  stats.add(values);
  CalibratorSpec spec;
  spec.kind = CalibratorKind::Auto;
  EXPECT_THROW(computeAmax(stats, spec), Error);
  EXPECT_EQ(parseCalibrator("auto"), CalibratorKind::Auto);
}

}  // namespace
}  // namespace qopt::quant
