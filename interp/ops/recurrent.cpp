// Recurrent kernels: RNN, GRU and LSTM as ONNX defines them from opset 7 (opset 14 added
// `layout`): every direction, the optional inputs (B, sequence_lens, initial_h, initial_c, P) and
// outputs (Y, Y_h, Y_c), the activation list with its alpha/beta values, clip, GRU's
// linear_before_reset and LSTM's input_forget.
//
// Each direction runs on its own: X times W for every step is one GEMM up front, then each step
// is one GEMM of the previous hidden state with R over all gates, followed by the elementwise
// gate math. A batch entry shorter than seq_length (sequence_lens) stops at its length: its Y
// rows past the end are zero, its Y_h and Y_c hold its last step, and its reverse direction
// starts from its own last step.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "KernelSupport.h"
#include "MatrixMultiply.h"
#include "ThreadPool.h"

namespace qopt::interp {

namespace {

enum class Cell { Rnn, Gru, Lstm };

// Blocks of hidden_size rows in W and R (and of hidden_size values in each half of B).
int64_t gateCount(Cell cell) {
  switch (cell) {
    case Cell::Rnn:
      return 1;
    case Cell::Gru:
      return 3;
    case Cell::Lstm:
      return 4;
  }
  return 0;
}

// One direction's activation functions when `activations` is omitted: RNN's f, GRU's f and g,
// LSTM's f, g and h.
std::vector<std::string> defaultActivations(Cell cell) {
  switch (cell) {
    case Cell::Rnn:
      return {"Tanh"};
    case Cell::Gru:
      return {"Sigmoid", "Tanh"};
    case Cell::Lstm:
      return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Activations

enum class ActivationKind {
  Relu,
  Tanh,
  Sigmoid,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus
};

struct ActivationInfo {
  const char* name;
  ActivationKind kind;
  bool takesAlpha, takesBeta;
  float alpha, beta;  // defaults
};

// The spec's list. Defaults are those of the ONNX operator of the same name; ScaledTanh, whose
// operator gave none, defaults to alpha = beta = 1 (plain tanh).
constexpr ActivationInfo kActivations[] = {
    {"Relu", ActivationKind::Relu, false, false, 0.0f, 0.0f},
    {"Tanh", ActivationKind::Tanh, false, false, 0.0f, 0.0f},
    {"Sigmoid", ActivationKind::Sigmoid, false, false, 0.0f, 0.0f},
    {"Affine", ActivationKind::Affine, true, true, 1.0f, 0.0f},
    {"LeakyRelu", ActivationKind::LeakyRelu, true, false, 0.01f, 0.0f},
    {"ThresholdedRelu", ActivationKind::ThresholdedRelu, true, false, 1.0f, 0.0f},
    {"ScaledTanh", ActivationKind::ScaledTanh, true, true, 1.0f, 1.0f},
    {"HardSigmoid", ActivationKind::HardSigmoid, true, true, 0.2f, 0.5f},
    {"Elu", ActivationKind::Elu, true, false, 1.0f, 0.0f},
    {"Softsign", ActivationKind::Softsign, false, false, 0.0f, 0.0f},
    {"Softplus", ActivationKind::Softplus, false, false, 0.0f, 0.0f},
};

struct Activation {
  ActivationKind kind;
  float alpha, beta;
};

template <class C>
C sigmoid(C x) {
  // Split by sign so exp never overflows.
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

/// x[i] = act(x[i]) for i < n.
template <class C>
void activate(const Activation& act, C* x, int64_t n) {
  const C a = static_cast<C>(act.alpha), b = static_cast<C>(act.beta);
  auto each = [x, n](auto f) {
    for (int64_t i = 0; i < n; ++i) x[i] = f(x[i]);
  };
  switch (act.kind) {
    case ActivationKind::Relu:
      return each([](C v) { return v > C(0) ? v : C(0); });
    case ActivationKind::Tanh:
      return each([](C v) { return std::tanh(v); });
    case ActivationKind::Sigmoid:
      return each([](C v) { return sigmoid(v); });
    case ActivationKind::Affine:
      return each([a, b](C v) { return a * v + b; });
    case ActivationKind::LeakyRelu:
      return each([a](C v) { return v >= C(0) ? v : a * v; });
    case ActivationKind::ThresholdedRelu:
      return each([a](C v) { return v > a ? v : C(0); });
    case ActivationKind::ScaledTanh:
      return each([a, b](C v) { return a * std::tanh(b * v); });
    case ActivationKind::HardSigmoid:
      return each([a, b](C v) { return std::max(C(0), std::min(C(1), a * v + b)); });
    case ActivationKind::Elu:
      return each([a](C v) { return v >= C(0) ? v : a * (std::exp(v) - C(1)); });
    case ActivationKind::Softsign:
      return each([](C v) { return v / (C(1) + std::abs(v)); });
    case ActivationKind::Softplus:
      // log(1 + e^x) without overflow for large x.
      return each(
          [](C v) { return v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); });
  }
}

bool sameNameIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/// Every direction's activations in order (the forward direction's first). The names match
/// without regard to case, as ONNX Runtime matches them. activation_alpha and activation_beta
/// are "consumed in the order of activation functions": each value goes to the next activation
/// that takes one (as ONNX Runtime reads it), and activations past the end of a list keep their
/// defaults.
std::vector<Activation> activationsOf(const KernelContext& ctx, Cell cell, int64_t directions) {
  const std::vector<std::string> defaults = defaultActivations(cell);
  const size_t expected = defaults.size() * static_cast<size_t>(directions);
  std::vector<std::string> names;
  if (const Attribute* a = ctx.node.findAttr("activations"); a && a->kind == AttrKind::Strings) {
    names = a->strings;
  }
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d) {
      names.insert(names.end(), defaults.begin(), defaults.end());
    }
  }
  // RNN's schema default is {"Tanh", "Tanh"} whatever the direction: a one-direction RNN that
  // spells the default out uses the first.
  if (cell == Cell::Rnn && directions == 1 && names.size() == 2) names.resize(1);
  if (names.size() != expected) {
    ctx.fail(fmt::format("activations lists {} functions; {} direction(s) take {}", names.size(),
                         directions, expected));
  }
  const std::vector<float> alphas = ctx.node.attrFloats("activation_alpha");
  const std::vector<float> betas = ctx.node.attrFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  std::vector<Activation> result;
  for (const std::string& name : names) {
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& candidate : kActivations) {
      if (sameNameIgnoringCase(name, candidate.name)) info = &candidate;
    }
    if (info == nullptr) {
      ctx.fail(
          fmt::format("unknown activation '{}' (one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                      "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                      name));
    }
    Activation act{info->kind, info->alpha, info->beta};
    if (info->takesAlpha && nextAlpha < alphas.size()) act.alpha = alphas[nextAlpha++];
    if (info->takesBeta && nextBeta < betas.size()) act.beta = betas[nextBeta++];
    result.push_back(act);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Attributes and shapes

struct Geometry {
  int64_t seqLength = 0, batch = 0, inputSize = 0, hidden = 0, directions = 1;
  /// layout 1: X is [batch, seq, input], Y [batch, seq, directions, hidden] and the states
  /// [batch, directions, hidden]. Computed in layout 0 and transposed on the way in and out.
  bool batchFirst = false;
};

struct Options {
  Cell cell;
  bool reverse = false;  // direction "reverse" (a bidirectional node's second direction also is)
  float clip = std::numeric_limits<float>::infinity();
  bool linearBeforeReset = false;  // GRU
  bool inputForget = false;        // LSTM: f = 1 - i
};

const char* opName(Cell cell) {
  return cell == Cell::Rnn ? "RNN" : cell == Cell::Gru ? "GRU" : "LSTM";
}

void expectShape(const KernelContext& ctx, const Array& a, const char* what,
                 const Shape& expected) {
  if (a.shape() != expected) {
    ctx.fail(fmt::format("{} must have shape {}, got {}", what, shapeString(expected),
                         shapeString(a.shape())));
  }
}

/// Checks X, W and R against each other and hidden_size, and the optional inputs against them.
Geometry geometryOf(const KernelContext& ctx, Cell cell, int64_t directions) {
  const size_t maxInputs = cell == Cell::Lstm ? 8 : 6, maxOutputs = cell == Cell::Lstm ? 3 : 2;
  if (ctx.numInputs() > maxInputs || ctx.node.numOutputs() > maxOutputs) {
    ctx.fail(fmt::format("{} takes at most {} inputs and {} outputs, got {} and {}", opName(cell),
                         maxInputs, maxOutputs, ctx.numInputs(), ctx.node.numOutputs()));
  }
  const Array& x = ctx.in(0);
  const Array& w = ctx.in(1);
  const Array& r = ctx.in(2);
  Geometry g;
  g.directions = directions;
  const int64_t layout = ctx.opset >= 14 ? ctx.node.attrInt("layout", 0) : 0;
  if (layout != 0 && layout != 1) ctx.fail(fmt::format("layout must be 0 or 1, got {}", layout));
  g.batchFirst = layout == 1;
  if (x.rank() != 3) {
    ctx.fail(fmt::format("X must have rank 3 ({}), got {}",
                         g.batchFirst ? "[batch_size, seq_length, input_size]"
                                      : "[seq_length, batch_size, input_size]",
                         shapeString(x.shape())));
  }
  g.seqLength = x.dim(g.batchFirst ? 1 : 0);
  g.batch = x.dim(g.batchFirst ? 0 : 1);
  g.inputSize = x.dim(2);
  if (w.rank() != 3 || r.rank() != 3) {
    ctx.fail(fmt::format("W and R must have rank 3, got {} and {}", shapeString(w.shape()),
                         shapeString(r.shape())));
  }
  // hidden_size is optional: R's last dimension is the hidden size.
  g.hidden = ctx.node.hasAttr("hidden_size") ? ctx.node.attrInt("hidden_size", 0) : r.dim(2);
  if (g.hidden < 0) ctx.fail(fmt::format("hidden_size must not be negative, got {}", g.hidden));
  const int64_t gates = gateCount(cell);
  const int64_t rows = gates * g.hidden;
  if (r.shape() != Shape{directions, rows, g.hidden}) {
    ctx.fail(fmt::format(
        "R must have shape {} ([num_directions, {}*hidden_size, hidden_size] with hidden_size "
        "{}), got {}",
        shapeString({directions, rows, g.hidden}), gates, g.hidden, shapeString(r.shape())));
  }
  if (w.shape() != Shape{directions, rows, g.inputSize}) {
    ctx.fail(fmt::format(
        "W must have shape {} ([num_directions, {}*hidden_size, input_size] with hidden_size {} "
        "and X's input_size {}), got {}",
        shapeString({directions, rows, g.inputSize}), gates, g.hidden, g.inputSize,
        shapeString(w.shape())));
  }
  if (const Array* b = ctx.optIn(3)) expectShape(ctx, *b, "B", {directions, 2 * rows});
  if (const Array* lens = ctx.optIn(4)) expectShape(ctx, *lens, "sequence_lens", {g.batch});
  const Shape state =
      g.batchFirst ? Shape{g.batch, directions, g.hidden} : Shape{directions, g.batch, g.hidden};
  if (const Array* h0 = ctx.optIn(5)) expectShape(ctx, *h0, "initial_h", state);
  if (cell == Cell::Lstm) {
    if (const Array* c0 = ctx.optIn(6)) expectShape(ctx, *c0, "initial_c", state);
    if (const Array* p = ctx.optIn(7)) expectShape(ctx, *p, "P", {directions, 3 * g.hidden});
  }
  // Every input but sequence_lens has X's element type.
  if (!isFloatingPoint(x.dataType())) {
    ctx.fail(fmt::format("X must be a floating point tensor, got {}", dataTypeName(x.dataType())));
  }
  constexpr const char* kInputNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                         "initial_h", "initial_c", "P"};
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    const Array* a = ctx.optIn(i);
    if (i != 4 && a != nullptr && a->dataType() != x.dataType()) {
      ctx.fail(fmt::format("{} is {} but X is {}", kInputNames[i], dataTypeName(a->dataType()),
                           dataTypeName(x.dataType())));
    }
  }
  return g;
}

/// Steps per batch entry: sequence_lens, or seq_length for all when it is omitted.
std::vector<int64_t> sequenceLengths(const KernelContext& ctx, const Geometry& g) {
  std::vector<int64_t> lengths(static_cast<size_t>(g.batch), g.seqLength);
  const Array* lens = ctx.optIn(4);
  if (lens == nullptr) return lengths;
  if (!isInteger(lens->dataType())) {
    ctx.fail(fmt::format("sequence_lens must be an integer tensor, got {}",
                         dataTypeName(lens->dataType())));
  }
  for (int64_t b = 0; b < g.batch; ++b) {
    const int64_t len = lens->getInt64(b);
    if (len < 0 || len > g.seqLength) {
      ctx.fail(fmt::format("sequence_lens[{}] is {}; lengths must be in [0, seq_length = {}]", b,
                           len, g.seqLength));
    }
    lengths[static_cast<size_t>(b)] = len;
  }
  return lengths;
}

int64_t directionCount(const KernelContext& ctx) {
  const std::string direction = ctx.node.attrString("direction", "forward");
  if (direction == "forward" || direction == "reverse") return 1;
  if (direction == "bidirectional") return 2;
  ctx.fail(fmt::format("direction must be forward, reverse or bidirectional, got '{}'", direction));
}

Options optionsOf(const KernelContext& ctx, Cell cell) {
  Options o{cell};
  o.reverse = ctx.node.attrString("direction", "forward") == "reverse";
  if (ctx.node.hasAttr("clip")) {
    o.clip = ctx.node.attrFloat("clip", 0.0f);
    if (!(o.clip > 0.0f)) ctx.fail(fmt::format("clip must be positive, got {}", o.clip));
  }
  o.linearBeforeReset = cell == Cell::Gru && ctx.node.attrInt("linear_before_reset", 0) != 0;
  o.inputForget = cell == Cell::Lstm && ctx.node.attrInt("input_forget", 0) != 0;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Computation, in C (float for float, float16 and bfloat16; double for double)

/// An input as C: the array's own data when it is C, else a converted copy. nullptr when omitted.
template <class C>
class ComputeView {
 public:
  explicit ComputeView(const Array* a) {
    if (a == nullptr) return;
    if (a->dataType() == dataTypeOf<C>()) {
      data_ = a->data<C>();
      return;
    }
    copy_.resize(static_cast<size_t>(a->numel()));
    dispatchFloat(a->dataType(), [&]<class T>(TypeTag<T>) {
      const T* src = a->data<T>();
      for (size_t i = 0; i < copy_.size(); ++i) copy_[i] = static_cast<C>(toCompute(src[i]));
    });
    data_ = copy_.data();
  }
  const C* data() const { return data_; }
  /// Elements [index * size, (index + 1) * size): one direction's slice; nullptr if omitted.
  const C* block(int64_t index, int64_t size) const {
    return data_ == nullptr ? nullptr : data_ + index * size;
  }

 private:
  const C* data_ = nullptr;
  std::vector<C> copy_;
};

/// dst[j][i][...] = src[i][j][...] for src of shape [a, b, inner].
template <class C>
void swapLeadingAxes(const C* src, int64_t a, int64_t b, int64_t inner, C* dst) {
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      std::copy_n(src + (i * b + j) * inner, inner, dst + (j * a + i) * inner);
    }
  }
}

/// A layout-1 input ([batch, directions or seq, ...]) in layout 0; `view` itself otherwise.
template <class C>
const C* inLayout0(const Geometry& g, const C* view, int64_t second, int64_t inner,
                   std::vector<C>& copy) {
  if (!g.batchFirst || view == nullptr) return view;
  copy.resize(static_cast<size_t>(g.batch * second * inner));
  swapLeadingAxes(view, g.batch, second, inner, copy.data());
  return copy.data();
}

/// One direction's parameters, in C and layout 0.
template <class C>
struct Direction {
  const C* w;                     // [gates * hidden, input]
  const C* r;                     // [gates * hidden, hidden]
  const C* bias;                  // [2 * gates * hidden]: Wb then Rb; nullptr when B is omitted
  const C* peephole;              // LSTM: [3 * hidden] for i, o, f; nullptr when P is omitted
  const C* h0;                    // [batch, hidden]; nullptr: zeros
  const C* c0;                    // LSTM: [batch, hidden]; nullptr: zeros
  const Activation* activations;  // this direction's f (, g (, h))
  bool reverse;
};

/// Where one direction writes: Y's step t of batch entry b at y + t * yStride + b * hidden (y
/// zeroed beforehand; nullptr when Y is not wanted), the final states at hLast/cLast + b * hidden.
template <class C>
struct DirectionOutputs {
  C* y;
  int64_t yStride;
  C* hLast;
  C* cLast;  // LSTM only
};

template <class C>
void clipInPlace(C* x, int64_t n, float clip) {
  if (std::isinf(clip)) return;
  const C hi = static_cast<C>(clip);
  for (int64_t i = 0; i < n; ++i) x[i] = std::max(-hi, std::min(hi, x[i]));
}

/// The bias added to X*W^T, per gate: Wb + Rb, except the h gate of a GRU with
/// linear_before_reset, whose Rbh goes inside the reset product (see gruFinish).
template <class C>
std::vector<C> inputBias(const Options& o, const C* bias, int64_t rows, int64_t hidden) {
  std::vector<C> out(static_cast<size_t>(rows), C(0));
  if (bias == nullptr) return out;
  const int64_t recurrentUpTo = o.linearBeforeReset ? 2 * hidden : rows;
  for (int64_t j = 0; j < rows; ++j) {
    out[static_cast<size_t>(j)] = bias[j] + (j < recurrentUpTo ? bias[rows + j] : C(0));
  }
  return out;
}

/// LSTM step of one batch entry. `gates` holds Ht-1*R^T for i, o, f, c and `x` Xt*W^T + biases;
/// c is updated to Ct and h set to Ht.
template <class C>
void lstmStep(const Options& o, const Direction<C>& p, int64_t hidden, C* gates, const C* x, C* h,
              C* c) {
  const int64_t n = hidden;
  for (int64_t j = 0; j < 4 * n; ++j) gates[j] += x[j];
  C* gi = gates;
  C* go = gates + n;
  C* gf = gates + 2 * n;
  C* gc = gates + 3 * n;
  const C* pi = p.peephole;
  const C* po = p.peephole ? p.peephole + n : nullptr;
  const C* pf = p.peephole ? p.peephole + 2 * n : nullptr;
  if (pi != nullptr) {
    for (int64_t j = 0; j < n; ++j) {
      gi[j] += pi[j] * c[j];
      gf[j] += pf[j] * c[j];
    }
  }
  clipInPlace(gi, n, o.clip);
  activate(p.activations[0], gi, n);
  if (o.inputForget) {
    for (int64_t j = 0; j < n; ++j) gf[j] = C(1) - gi[j];
  } else {
    clipInPlace(gf, n, o.clip);
    activate(p.activations[0], gf, n);
  }
  clipInPlace(gc, n, o.clip);
  activate(p.activations[1], gc, n);
  for (int64_t j = 0; j < n; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
  // The output gate's peephole looks at the new cell state.
  if (po != nullptr) {
    for (int64_t j = 0; j < n; ++j) go[j] += po[j] * c[j];
  }
  clipInPlace(go, n, o.clip);
  activate(p.activations[0], go, n);
  // h(Ct), in the c gate's now free space. Clip bounds the gates' inputs, as in ONNX Runtime;
  // the cell state given to h is not clipped.
  std::copy_n(c, n, gc);
  activate(p.activations[2], gc, n);
  for (int64_t j = 0; j < n; ++j) h[j] = go[j] * gc[j];
}

/// GRU update and reset gates of one batch entry: `gates` holds Ht-1*R^T for z and r (and h with
/// linear_before_reset), `x` Xt*W^T + biases; z and r replace their pre-activations.
template <class C>
void gruGates(const Options& o, const Direction<C>& p, int64_t hidden, C* gates, const C* x) {
  for (int64_t j = 0; j < 2 * hidden; ++j) gates[j] += x[j];
  clipInPlace(gates, 2 * hidden, o.clip);
  activate(p.activations[0], gates, 2 * hidden);
}

/// GRU output of one batch entry once z and r are known. `recurrentH` is Ht-1*Rh^T (with
/// linear_before_reset) or (rt (.) Ht-1)*Rh^T (without); h becomes Ht.
template <class C>
void gruFinish(const Options& o, const Direction<C>& p, int64_t hidden, const C* gates, const C* x,
               const C* recurrentH, C* scratch, C* h) {
  const int64_t n = hidden;
  const C* z = gates;
  const C* r = gates + n;
  const C* xh = x + 2 * n;
  if (o.linearBeforeReset) {
    const C* rbh = p.bias ? p.bias + 3 * n + 2 * n : nullptr;  // Rb's h block
    for (int64_t j = 0; j < n; ++j) {
      scratch[j] = xh[j] + r[j] * (recurrentH[j] + (rbh ? rbh[j] : C(0)));
    }
  } else {
    for (int64_t j = 0; j < n; ++j) scratch[j] = xh[j] + recurrentH[j];
  }
  clipInPlace(scratch, n, o.clip);
  activate(p.activations[1], scratch, n);
  for (int64_t j = 0; j < n; ++j) h[j] = (C(1) - z[j]) * scratch[j] + z[j] * h[j];
}

/// Runs one direction over every step. `x` is X in layout 0 ([seq, batch, input]); `xw` is room
/// for Xt*W^T + biases of every step and batch entry ([seq * batch, gates * hidden]).
template <class C>
void runDirection(const Geometry& g, const Options& o, const Direction<C>& p,
                  const std::vector<int64_t>& lengths, const C* x, C* xw,
                  const DirectionOutputs<C>& out, ThreadPool* pool) {
  const int64_t n = g.hidden, batch = g.batch;
  const int64_t rows = gateCount(o.cell) * n;
  gemm(false, true, g.seqLength * batch, rows, g.inputSize, C(1), x, g.inputSize, p.w, g.inputSize,
       C(0), xw, rows, pool);
  const std::vector<C> bias = inputBias(o, p.bias, rows, n);
  for (int64_t i = 0; i < g.seqLength * batch; ++i) {
    for (int64_t j = 0; j < rows; ++j) xw[i * rows + j] += bias[static_cast<size_t>(j)];
  }

  std::vector<C> h(static_cast<size_t>(batch * n), C(0)), c(h.size(), C(0));
  if (p.h0 != nullptr) std::copy_n(p.h0, h.size(), h.begin());
  if (p.c0 != nullptr) std::copy_n(p.c0, c.size(), c.begin());
  std::vector<C> gates(static_cast<size_t>(batch * rows));
  // GRU without linear_before_reset: rt (.) Ht-1 per entry, and its product with Rh^T.
  const bool resetFirst = o.cell == Cell::Gru && !o.linearBeforeReset;
  std::vector<C> reset(resetFirst ? h.size() : 0, C(0)), resetR(reset.size());
  std::vector<C> scratch(static_cast<size_t>(n));
  const int64_t steps = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  auto active = [&](int64_t b, int64_t k) { return k < lengths[static_cast<size_t>(b)]; };
  auto timeOf = [&](int64_t b, int64_t k) {
    return p.reverse ? lengths[static_cast<size_t>(b)] - 1 - k : k;
  };
  for (int64_t k = 0; k < steps; ++k) {
    // Ht-1*R^T for all gates at once; a GRU without linear_before_reset leaves its h gate for
    // later, as it multiplies rt (.) Ht-1 instead.
    const int64_t recurrentRows = resetFirst ? 2 * n : rows;
    gemm(false, true, batch, recurrentRows, n, C(1), h.data(), n, p.r, n, C(0), gates.data(), rows,
         pool);
    if (resetFirst) {
      for (int64_t b = 0; b < batch; ++b) {
        if (!active(b, k)) continue;
        C* gb = gates.data() + b * rows;
        gruGates(o, p, n, gb, xw + (timeOf(b, k) * batch + b) * rows);
        for (int64_t j = 0; j < n; ++j) reset[b * n + j] = gb[n + j] * h[b * n + j];
      }
      gemm(false, true, batch, n, n, C(1), reset.data(), n, p.r + 2 * n * n, n, C(0), resetR.data(),
           n, pool);
    }
    for (int64_t b = 0; b < batch; ++b) {
      if (!active(b, k)) continue;
      const int64_t t = timeOf(b, k);
      C* gb = gates.data() + b * rows;
      const C* xb = xw + (t * batch + b) * rows;
      C* hb = h.data() + b * n;
      switch (o.cell) {
        case Cell::Rnn:
          for (int64_t j = 0; j < n; ++j) gb[j] += xb[j];
          clipInPlace(gb, n, o.clip);
          activate(p.activations[0], gb, n);
          std::copy_n(gb, n, hb);
          break;
        case Cell::Gru:
          if (resetFirst) {
            gruFinish(o, p, n, gb, xb, resetR.data() + b * n, scratch.data(), hb);
          } else {
            gruGates(o, p, n, gb, xb);
            gruFinish(o, p, n, gb, xb, gb + 2 * n, scratch.data(), hb);
          }
          break;
        case Cell::Lstm:
          lstmStep(o, p, n, gb, xb, hb, c.data() + b * n);
          break;
      }
      if (out.y != nullptr) std::copy_n(hb, n, out.y + t * out.yStride + b * n);
    }
  }
  // A batch entry of length 0 has no last step: its final states are zero, as ONNX Runtime's.
  for (int64_t b = 0; b < batch; ++b) {
    const bool ran = lengths[static_cast<size_t>(b)] > 0;
    std::fill_n(out.hLast + b * n, n, C(0));
    if (ran) std::copy_n(h.data() + b * n, n, out.hLast + b * n);
    if (out.cLast != nullptr) {
      std::fill_n(out.cLast + b * n, n, C(0));
      if (ran) std::copy_n(c.data() + b * n, n, out.cLast + b * n);
    }
  }
}

/// Output `index` in X's element type and the node's layout, from `values`: C, layout 0, of shape
/// [..., batch, hidden]. Layout 1 moves the batch dimension to the front.
template <class C>
void setOutput(KernelContext& ctx, size_t index, const Geometry& g, Array values) {
  const DataType type = ctx.in(0).dataType();
  if (!g.batchFirst && type == dataTypeOf<C>()) {
    ctx.outputs[index] = std::move(values);
    return;
  }
  Shape shape = values.shape();
  const C* src = values.data<C>();
  std::vector<C> swapped;
  if (g.batchFirst) {
    const int64_t outer = product(shape, 0, shape.size() - 2);
    swapped.resize(static_cast<size_t>(values.numel()));
    swapLeadingAxes(src, outer, g.batch, g.hidden, swapped.data());
    src = swapped.data();
    shape.erase(shape.end() - 2);
    shape.insert(shape.begin(), g.batch);
  }
  Array out(type, shape);
  dispatchFloat(type, [&]<class T>(TypeTag<T>) {
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      dst[i] = fromCompute<T>(static_cast<ComputeT<T>>(src[i]));
    }
  });
  ctx.outputs[index] = std::move(out);
}

template <class C>
void runRecurrent(KernelContext& ctx, Cell cell, const Geometry& g, const Options& o,
                  const std::vector<Activation>& activations, const std::vector<int64_t>& lengths) {
  const int64_t n = g.hidden, batch = g.batch, dirs = g.directions;
  const int64_t rows = gateCount(cell) * n;
  const bool lstm = cell == Cell::Lstm;
  ComputeView<C> xView(&ctx.in(0)), w(&ctx.in(1)), r(&ctx.in(2)), bias(ctx.optIn(3)),
      h0View(ctx.optIn(5)), c0View(lstm ? ctx.optIn(6) : nullptr),
      peephole(lstm ? ctx.optIn(7) : nullptr);
  std::vector<C> xCopy, h0Copy, c0Copy;
  const C* x = inLayout0(g, xView.data(), g.seqLength, g.inputSize, xCopy);
  const C* h0 = inLayout0(g, h0View.data(), dirs, n, h0Copy);
  const C* c0 = inLayout0(g, c0View.data(), dirs, n, c0Copy);

  const bool wantY = wantsOutput(ctx, 0);
  const bool wantC = lstm && wantsOutput(ctx, 2);
  const DataType computeType = dataTypeOf<C>();
  Array y = wantY ? Array::zeros(computeType, {g.seqLength, dirs, batch, n}) : Array();
  Array hLast(computeType, {dirs, batch, n});
  Array cLast = lstm ? Array(computeType, {dirs, batch, n}) : Array();
  // Each direction's Xt*W^T. An Array, allocated on this thread, so that the interpreter's
  // allocation limit applies: it can be larger than any input.
  Array xw(computeType, {dirs, g.seqLength * batch, rows});
  const size_t perDirection = defaultActivations(cell).size();
  auto run = [&](int64_t d, ThreadPool* pool) {
    const Direction<C> p{w.block(d, rows * g.inputSize),
                         r.block(d, rows * n),
                         bias.block(d, 2 * rows),
                         peephole.block(d, 3 * n),
                         h0 == nullptr ? nullptr : h0 + d * batch * n,
                         c0 == nullptr ? nullptr : c0 + d * batch * n,
                         activations.data() + static_cast<size_t>(d) * perDirection,
                         o.reverse || d == 1};
    const DirectionOutputs<C> out{wantY ? y.data<C>() + d * batch * n : nullptr, dirs * batch * n,
                                  hLast.data<C>() + d * batch * n,
                                  lstm ? cLast.data<C>() + d * batch * n : nullptr};
    runDirection(g, o, p, lengths, x, xw.data<C>() + d * g.seqLength * batch * rows, out, pool);
  };
  // Two directions are independent: one per thread when there are threads to spare, else each
  // in turn with the pool inside its matrix products.
  if (dirs == 2 && ctx.pool != nullptr && ctx.threads >= 2) {
    parallelFor(ctx.pool, 2, 1, [&](int64_t d0, int64_t d1) {
      for (int64_t d = d0; d < d1; ++d) run(d, nullptr);
    });
  } else {
    for (int64_t d = 0; d < dirs; ++d) run(d, ctx.pool);
  }

  if (wantY) setOutput<C>(ctx, 0, g, std::move(y));
  if (wantsOutput(ctx, 1)) setOutput<C>(ctx, 1, g, std::move(hLast));
  if (wantC) setOutput<C>(ctx, 2, g, std::move(cLast));
}

template <Cell cell>
void recurrentKernel(KernelContext& ctx) {
  const int64_t directions = directionCount(ctx);
  const Geometry g = geometryOf(ctx, cell, directions);
  const Options o = optionsOf(ctx, cell);
  const std::vector<Activation> activations = activationsOf(ctx, cell, directions);
  const std::vector<int64_t> lengths = sequenceLengths(ctx, g);
  if (ctx.in(0).dataType() == DataType::Double) {
    runRecurrent<double>(ctx, cell, g, o, activations, lengths);
  } else {
    runRecurrent<float>(ctx, cell, g, o, activations, lengths);
  }
}

}  // namespace

void registerRecurrentKernels(KernelRegistry& registry) {
  registry.add({
      // One kernel from opset 7 on: opset 14's only change, `layout`, is read when ctx.opset >= 14.
      {"RNN", 7, recurrentKernel<Cell::Rnn>},
      {"GRU", 7, recurrentKernel<Cell::Gru>},
      {"LSTM", 7, recurrentKernel<Cell::Lstm>},
  });
}

}  // namespace qopt::interp
