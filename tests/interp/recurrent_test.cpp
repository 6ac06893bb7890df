// RNN, GRU and LSTM: single steps against the spec's equations computed by hand (gate order,
// peepholes, linear_before_reset), layout 1 against layout 0, float16 and double against float,
// the optional hidden_size and outputs, and the errors bad inputs get. The full attribute matrix
// is compared with ONNX Runtime by tests/ort (ort_diff_lstm, ort_diff_gru, ort_diff_rnn).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "compute_ops_test_support.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/Tensor.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

Array lengths(const std::vector<int32_t>& v) {
  return makeArray<int32_t>(DataType::Int32, {static_cast<int64_t>(v.size())}, v);
}

Array converted(const Array& a, DataType type) {
  Array out(type, a.shape());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float v = a.data<float>()[i];
    if (type == DataType::Float16) {
      out.data<uint16_t>()[i] = floatToHalfBits(v);
    } else {
      out.data<double>()[i] = v;
    }
  }
  return out;
}

// `op` over one step of batch 1 and hidden and input size 1: inputs X, W, R (one row per gate),
// B, no sequence_lens and initial_h; further inputs and attributes are the caller's.
SingleOp oneStep(const char* op, float x, const std::vector<float>& w, const std::vector<float>& r,
                 const std::vector<float>& b, float h0) {
  const int64_t gates = static_cast<int64_t>(w.size());
  SingleOp node(op, 14);
  node.input(floats({1, 1, 1}, {x}))
      .input(floats({1, gates, 1}, w))
      .input(floats({1, gates, 1}, r))
      .input(floats({1, 2 * gates}, b))
      .absent()
      .input(floats({1, 1, 1}, {h0}))
      .attr("hidden_size", int64_t{1});
  return node;
}

TEST(Rnn, TwoStepsFollowTheEquations) {
  // Ht = tanh(Xt*W^T + Ht-1*R^T + Wb + Rb), hidden and input size 1.
  std::vector<Array> out = SingleOp("RNN", 14)
                               .input(floats({2, 1, 1}, {1, 2}))
                               .input(floats({1, 1, 1}, {0.5f}))
                               .input(floats({1, 1, 1}, {-1}))
                               .input(floats({1, 2}, {0.1f, 0.2f}))
                               .attr("hidden_size", int64_t{1})
                               .outputs({true, true})
                               .run();
  const double h1 = std::tanh(0.5 + 0.3);
  const double h2 = std::tanh(1.0 - h1 + 0.3);
  QOPT_EXPECT_CLOSE(out[0], (std::vector<double>{h1, h2}), 1e-6);
  EXPECT_EQ(out[0].shape(), (Shape{2, 1, 1, 1}));
  QOPT_EXPECT_CLOSE(out[1], (std::vector<double>{h2}), 1e-6);
}

TEST(Gru, LinearBeforeResetMovesTheRecurrentProductInsideTheReset) {
  const float x = 0.7f, h0 = 0.5f;
  // W, R and each half of B in the spec's order z, r, h.
  const std::vector<float> w = {0.3f, -0.4f, 0.9f}, r = {0.6f, 0.8f, -0.7f};
  const std::vector<float> b = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  const double z = sigmoid(w[0] * x + r[0] * h0 + b[0] + b[3]);
  const double rt = sigmoid(w[1] * x + r[1] * h0 + b[1] + b[4]);
  for (int64_t linearBeforeReset : {0, 1}) {
    const double ht = linearBeforeReset ? std::tanh(w[2] * x + rt * (r[2] * h0 + b[5]) + b[2])
                                        : std::tanh(w[2] * x + r[2] * (rt * h0) + b[5] + b[2]);
    const double expected = (1 - z) * ht + z * h0;
    Array y = oneStep("GRU", x, w, r, b, h0)
                  .attr("linear_before_reset", linearBeforeReset)
                  .outputs({false, true})
                  .run1();
    QOPT_EXPECT_CLOSE(y, (std::vector<double>{expected}), 1e-6);
  }
}

TEST(Lstm, GatesAreInputOutputForgetCellAndPeepholesInputOutputForget) {
  const float x = 0.7f, h0 = 0.4f, c0 = 0.6f;
  // W, R and B rows in the spec's order i, o, f, c; P in the order i, o, f.
  const std::vector<float> w = {0.3f, -0.5f, 0.8f, 0.6f}, r = {0.2f, 0.7f, -0.4f, 0.9f};
  const std::vector<float> b = {0.1f, 0.2f, 0.3f, 0.4f, 0.05f, -0.1f, 0.15f, -0.2f};
  const std::vector<float> p = {0.5f, -0.3f, 0.25f};
  auto pre = [&](int gate) { return w[gate] * x + r[gate] * h0 + b[gate] + b[4 + gate]; };
  const double i = sigmoid(pre(0) + p[0] * c0);
  const double f = sigmoid(pre(2) + p[2] * c0);
  const double c = f * c0 + i * std::tanh(pre(3));
  const double o = sigmoid(pre(1) + p[1] * c);
  const double h = o * std::tanh(c);
  std::vector<Array> out = oneStep("LSTM", x, w, r, b, h0)
                               .input(floats({1, 1, 1}, {c0}))
                               .input(floats({1, 3}, p))
                               .outputs({false, true, true})
                               .run();
  QOPT_EXPECT_CLOSE(out[0], (std::vector<double>{h}), 1e-6);
  QOPT_EXPECT_CLOSE(out[1], (std::vector<double>{c}), 1e-6);
}

// A bidirectional LSTM with unequal lengths and initial states, hidden 5, input 3, batch 2.
struct LstmInputs {
  Array x = randomFloats({4, 2, 3}, 1, -1.0f, 1.0f);
  Array w = randomFloats({2, 20, 3}, 2, -0.6f, 0.6f);
  Array r = randomFloats({2, 20, 5}, 3, -0.5f, 0.5f);
  Array b = randomFloats({2, 40}, 4, -0.3f, 0.3f);
  Array h0 = randomFloats({2, 2, 5}, 5, -1.0f, 1.0f);
  Array c0 = randomFloats({2, 2, 5}, 6, -1.0f, 1.0f);
  Array p = randomFloats({2, 15}, 7, -0.5f, 0.5f);
};

std::vector<Array> runLstm(const LstmInputs& in, int threads = 1, int64_t layout = 0,
                           bool hiddenSize = true) {
  SingleOp op("LSTM", 14);
  auto batchFirst = [layout](const Array& a) {
    if (layout == 0) return a;
    Array t(a.dataType(), {a.dim(1), a.dim(0), a.dim(2)});
    for (int64_t i = 0; i < a.dim(0); ++i) {
      for (int64_t j = 0; j < a.dim(1); ++j) {
        for (int64_t k = 0; k < a.dim(2); ++k) {
          t.data<float>()[(j * a.dim(0) + i) * a.dim(2) + k] =
              a.data<float>()[(i * a.dim(1) + j) * a.dim(2) + k];
        }
      }
    }
    return t;
  };
  op.input(batchFirst(in.x))
      .input(in.w)
      .input(in.r)
      .input(in.b)
      .input(lengths({4, 2}))
      .input(batchFirst(in.h0))
      .input(batchFirst(in.c0))
      .input(in.p)
      .attr("direction", "bidirectional")
      .attr("layout", layout)
      .outputs({true, true, true});
  if (hiddenSize) op.attr("hidden_size", int64_t{5});
  return op.run(threads);
}

TEST(Lstm, BatchwiseLayoutIsTheTransposedSequenceLayout) {
  LstmInputs in;
  std::vector<Array> seq = runLstm(in), batch = runLstm(in, 1, 1);
  ASSERT_EQ(batch[0].shape(), (Shape{2, 4, 2, 5}));
  ASSERT_EQ(batch[1].shape(), (Shape{2, 2, 5}));
  // Y [seq, dirs, batch, hidden] against [batch, seq, dirs, hidden].
  for (int64_t t = 0; t < 4; ++t) {
    for (int64_t d = 0; d < 2; ++d) {
      for (int64_t n = 0; n < 2; ++n) {
        for (int64_t k = 0; k < 5; ++k) {
          EXPECT_EQ(seq[0].data<float>()[((t * 2 + d) * 2 + n) * 5 + k],
                    batch[0].data<float>()[((n * 4 + t) * 2 + d) * 5 + k]);
        }
      }
    }
  }
  for (size_t out = 1; out < 3; ++out) {
    for (int64_t d = 0; d < 2; ++d) {
      for (int64_t n = 0; n < 2; ++n) {
        for (int64_t k = 0; k < 5; ++k) {
          EXPECT_EQ(seq[out].data<float>()[(d * 2 + n) * 5 + k],
                    batch[out].data<float>()[(n * 2 + d) * 5 + k]);
        }
      }
    }
  }
}

TEST(Lstm, StepsPastALengthAreZeroAndTheFinalStateIsTheLastStep) {
  LstmInputs in;
  std::vector<Array> out = runLstm(in);
  const float* y = out[0].data<float>();
  const float* yh = out[1].data<float>();
  // Batch entry 1 has length 2: steps 2 and 3 are zero in both directions; the forward Y_h is
  // step 1's output and the reverse one step 0's (where the reverse pass ends).
  for (int64_t t = 2; t < 4; ++t) {
    for (int64_t d = 0; d < 2; ++d) {
      for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(y[((t * 2 + d) * 2 + 1) * 5 + k], 0.0f);
    }
  }
  for (int64_t k = 0; k < 5; ++k) {
    EXPECT_EQ(yh[(0 * 2 + 1) * 5 + k], y[((1 * 2 + 0) * 2 + 1) * 5 + k]);
    EXPECT_EQ(yh[(1 * 2 + 1) * 5 + k], y[((0 * 2 + 1) * 2 + 1) * 5 + k]);
    EXPECT_NE(y[((0 * 2 + 1) * 2 + 1) * 5 + k], 0.0f);
  }
}

TEST(Lstm, ThreadedDirectionsMatchSingleThreaded) {
  LstmInputs in;
  std::vector<Array> one = runLstm(in, 1), two = runLstm(in, 2);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(values<float>(one[i]), values<float>(two[i]));
}

TEST(Lstm, HiddenSizeDefaultsToRsLastDimension) {
  LstmInputs in;
  std::vector<Array> given = runLstm(in), inferred = runLstm(in, 1, 0, false);
  for (size_t i = 0; i < given.size(); ++i) {
    EXPECT_EQ(values<float>(given[i]), values<float>(inferred[i]));
  }
}

TEST(Gru, Float16AndDoubleFollowFloat) {
  Array x = randomFloats({3, 2, 4}, 11, -1.0f, 1.0f), w = randomFloats({2, 9, 4}, 12, -0.5f, 0.5f),
        r = randomFloats({2, 9, 3}, 13, -0.5f, 0.5f), b = randomFloats({2, 18}, 14, -1.0f, 1.0f),
        h0 = randomFloats({2, 2, 3}, 15, -1.0f, 1.0f);
  auto run = [&](DataType type) {
    auto as = [type](const Array& a) { return type == DataType::Float ? a : converted(a, type); };
    return SingleOp("GRU", 14)
        .input(as(x))
        .input(as(w))
        .input(as(r))
        .input(as(b))
        .input(lengths({3, 1}))
        .input(as(h0))
        .attr("hidden_size", int64_t{3})
        .attr("direction", "bidirectional")
        .attr("linear_before_reset", int64_t{1})
        .outputs({true, true})
        .run();
  };
  std::vector<Array> reference = run(DataType::Float);
  for (DataType type : {DataType::Float16, DataType::Double}) {
    std::vector<Array> out = run(type);
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].dataType(), type);
      EXPECT_EQ(out[i].shape(), reference[i].shape());
      QOPT_EXPECT_CLOSE(out[i], doubles(reference[i]), type == DataType::Double ? 1e-6 : 5e-3);
    }
  }
}

TEST(Recurrent, OnlyTheRequestedOutputsAreComputed) {
  LstmInputs in;
  std::vector<Array> all = runLstm(in);
  Array yc = SingleOp("LSTM", 14)
                 .input(in.x)
                 .input(in.w)
                 .input(in.r)
                 .input(in.b)
                 .input(lengths({4, 2}))
                 .input(in.h0)
                 .input(in.c0)
                 .input(in.p)
                 .attr("hidden_size", int64_t{5})
                 .attr("direction", "bidirectional")
                 .outputs({false, false, true})
                 .run1();
  EXPECT_EQ(values<float>(yc), values<float>(all[2]));
}

TEST(Recurrent, EmptyDimensionsGiveEmptyOrZeroOutputs) {
  struct Dims {
    int64_t seq, batch, hidden;
  };
  for (Dims d : {Dims{0, 2, 4}, Dims{2, 0, 4}, Dims{2, 1, 0}}) {
    std::vector<Array> out = SingleOp("GRU", 14)
                                 .input(randomFloats({d.seq, d.batch, 3}, 1, -1.0f, 1.0f))
                                 .input(randomFloats({1, 3 * d.hidden, 3}, 2, -1.0f, 1.0f))
                                 .input(randomFloats({1, 3 * d.hidden, d.hidden}, 3, -1.0f, 1.0f))
                                 .outputs({true, true})
                                 .run();
    EXPECT_EQ(out[0].shape(), (Shape{d.seq, 1, d.batch, d.hidden}));
    EXPECT_EQ(out[1].shape(), (Shape{1, d.batch, d.hidden}));
    for (float v : values<float>(out[1])) EXPECT_EQ(v, 0.0f);  // no step ran
  }
}

// Errors name the node and say what is wrong.
struct BadRecurrent {
  std::string name;
  std::string expected;  // a part of the message
  std::function<void(SingleOp&)> configure;
};

void PrintTo(const BadRecurrent& c, std::ostream* os) {
  *os << c.name;
}

class RecurrentErrors : public ::testing::TestWithParam<BadRecurrent> {};

TEST_P(RecurrentErrors, AreInputErrorsNamingTheNode) {
  const BadRecurrent& c = GetParam();
  SingleOp op("RNN", 14);
  c.configure(op);
  std::string message = errorMessage([&] { op.run(); });
  EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  EXPECT_NE(message.find("node producing 'out0' (RNN)"), std::string::npos) << message;
}

// X [2, 1, 3], W [1, 4, 3], R [1, 4, 4]: a valid RNN of hidden size 4 unless configured otherwise.
std::function<void(SingleOp&)> rnn(std::function<void(SingleOp&)> rest, Shape w = {1, 4, 3},
                                   Shape r = {1, 4, 4}) {
  return [=](SingleOp& op) {
    op.input(randomFloats({2, 1, 3}, 1, -1.0f, 1.0f))
        .input(randomFloats(w, 2, -1.0f, 1.0f))
        .input(randomFloats(r, 3, -1.0f, 1.0f));
    rest(op);
  };
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RecurrentErrors,
    ::testing::Values(
        BadRecurrent{"hidden_size_mismatch", "R must have shape [1,3,3]",
                     rnn([](SingleOp& op) { op.attr("hidden_size", int64_t{3}); })},
        BadRecurrent{"w_rows", "W must have shape [1,4,3]", rnn([](SingleOp&) {}, Shape{1, 5, 3})},
        BadRecurrent{"w_input_size", "W must have shape [1,4,3]",
                     rnn([](SingleOp&) {}, Shape{1, 4, 2})},
        BadRecurrent{"directions", "R must have shape [2,4,4]",
                     rnn([](SingleOp& op) { op.attr("direction", "bidirectional"); })},
        BadRecurrent{"unknown_direction", "direction must be forward, reverse or bidirectional",
                     rnn([](SingleOp& op) { op.attr("direction", "sideways"); })},
        BadRecurrent{"unknown_activation", "unknown activation 'Swish'", rnn([](SingleOp& op) {
                       op.attr(Attribute::makeStrings("activations", {"Swish"}));
                     })},
        BadRecurrent{"activation_count", "activations lists 3 functions", rnn([](SingleOp& op) {
                       op.attr(Attribute::makeStrings("activations", {"Tanh", "Tanh", "Tanh"}));
                     })},
        BadRecurrent{"bias_shape", "B must have shape [1,8]", rnn([](SingleOp& op) {
                       op.input(randomFloats({1, 4}, 4, -1.0f, 1.0f));
                     })},
        BadRecurrent{"length_too_long", "sequence_lens[0] is 3",
                     rnn([](SingleOp& op) { op.absent().input(lengths({3})); })},
        BadRecurrent{"initial_h_shape", "initial_h must have shape [1,1,4]", rnn([](SingleOp& op) {
                       op.absent().absent().input(randomFloats({1, 2, 4}, 5, -1.0f, 1.0f));
                     })},
        BadRecurrent{"mixed_types", "W is FLOAT16 but X is FLOAT",
                     [](SingleOp& op) {
                       op.input(randomFloats({2, 1, 3}, 1, -1.0f, 1.0f))
                           .input(converted(randomFloats({1, 4, 3}, 2, -1.0f, 1.0f),
                                            DataType::Float16))
                           .input(randomFloats({1, 4, 4}, 3, -1.0f, 1.0f));
                     }},
        BadRecurrent{"x_rank", "X must have rank 3",
                     [](SingleOp& op) {
                       op.input(randomFloats({2, 3}, 1, -1.0f, 1.0f))
                           .input(randomFloats({1, 4, 3}, 2, -1.0f, 1.0f))
                           .input(randomFloats({1, 4, 4}, 3, -1.0f, 1.0f));
                     }},
        BadRecurrent{"layout", "layout must be 0 or 1",
                     rnn([](SingleOp& op) { op.attr("layout", int64_t{2}); })},
        BadRecurrent{"clip", "clip must be positive",
                     rnn([](SingleOp& op) { op.attr("clip", -1.0f); })}),
    [](const ::testing::TestParamInfo<BadRecurrent>& info) { return info.param.name; });

}  // namespace
}  // namespace qopt::interp
