// Reductions and kernels working along one axis: ReduceX, Softmax/LogSoftmax/Hardmax,
// ArgMax/ArgMin, TopK, CumSum. Floating point accumulates in double, integers in 64 bits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ArrayOps.h"
#include "KernelSupport.h"
#include "VectorMath.h"

namespace qopt::interp {

namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

/// An array seen as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer, n, inner;
};

AxisView viewAround(const Shape& shape, int64_t axis) {
  return {product(shape, 0, static_cast<size_t>(axis)), shape[static_cast<size_t>(axis)],
          product(shape, static_cast<size_t>(axis) + 1)};
}

template <class T>
using AccumulatorT =
    std::conditional_t<std::is_integral_v<T>,
                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;

template <class T>
void reduceBlock(Reduce kind, const T* in, T* out, int64_t outer, int64_t n, int64_t inner,
                 ThreadPool* pool) {
  using Acc = AccumulatorT<T>;
  using C = ComputeT<T>;
  Acc init{};
  switch (kind) {
    case Reduce::Prod:
      init = Acc(1);
      break;
    case Reduce::Max:
      init = std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                    : std::numeric_limits<Acc>::lowest();
      if constexpr (std::is_integral_v<T>)
        init = static_cast<Acc>(std::numeric_limits<T>::lowest());
      break;
    case Reduce::Min:
      init = std::numeric_limits<Acc>::has_infinity ? std::numeric_limits<Acc>::infinity()
                                                    : std::numeric_limits<Acc>::max();
      if constexpr (std::is_integral_v<T>) init = static_cast<Acc>(std::numeric_limits<T>::max());
      break;
    default:
      break;
  }
  int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, n * inner));
  parallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
    std::vector<Acc> acc(static_cast<size_t>(inner));
    std::vector<Acc> shift(static_cast<size_t>(inner), Acc{});
    for (int64_t o = o0; o < o1; ++o) {
      const T* block = in + o * n * inner;
      if constexpr (std::is_floating_point_v<Acc>) {
        if (kind == Reduce::LogSumExp) {
          // Subtract the maximum first so exp never overflows.
          std::fill(shift.begin(), shift.end(), -std::numeric_limits<double>::infinity());
          for (int64_t r = 0; r < n; ++r) {
            for (int64_t i = 0; i < inner; ++i) {
              shift[i] = std::max<Acc>(shift[i], static_cast<Acc>(toCompute(block[r * inner + i])));
            }
          }
          for (Acc& s : shift) {
            if (!std::isfinite(static_cast<double>(s))) s = 0;
          }
        }
      }
      std::fill(acc.begin(), acc.end(), init);
      // The kind is resolved here, outside the loops, so each inner loop is branch-free.
      auto rows = [&](auto step) {
        for (int64_t r = 0; r < n; ++r) {
          const T* row = block + r * inner;
          for (int64_t i = 0; i < inner; ++i) step(acc[i], static_cast<Acc>(toCompute(row[i])), i);
        }
      };
      switch (kind) {
        case Reduce::Sum:
        case Reduce::Mean:
        case Reduce::LogSum:
          rows([](Acc& a, Acc v, int64_t) { a += v; });
          break;
        case Reduce::Max:
          rows([](Acc& a, Acc v, int64_t) {
            if (v > a || std::isnan(static_cast<double>(v))) a = v;
          });
          break;
        case Reduce::Min:
          rows([](Acc& a, Acc v, int64_t) {
            if (v < a || std::isnan(static_cast<double>(v))) a = v;
          });
          break;
        case Reduce::Prod:
          rows([](Acc& a, Acc v, int64_t) { a *= v; });
          break;
        case Reduce::L1:
          rows([](Acc& a, Acc v, int64_t) {
            if constexpr (std::is_unsigned_v<Acc>) {
              a += v;
            } else {
              a += v < 0 ? -v : v;
            }
          });
          break;
        case Reduce::L2:
        case Reduce::SumSquare:
          rows([](Acc& a, Acc v, int64_t) { a += v * v; });
          break;
        case Reduce::LogSumExp:
          if constexpr (std::is_floating_point_v<Acc>) {
            rows([&shift](Acc& a, Acc v, int64_t i) { a += std::exp(v - shift[i]); });
          }
          break;
      }
      T* dst = out + o * inner;
      for (int64_t i = 0; i < inner; ++i) {
        Acc a = acc[static_cast<size_t>(i)];
        double r;
        switch (kind) {
          case Reduce::Mean:
            r = static_cast<double>(a) / static_cast<double>(n);
            if constexpr (std::is_integral_v<T>) {
              dst[i] = static_cast<T>(static_cast<Acc>(a) / static_cast<Acc>(n == 0 ? 1 : n));
              continue;
            }
            break;
          case Reduce::L2:
            r = std::sqrt(static_cast<double>(a));
            break;
          case Reduce::LogSum:
            r = std::log(static_cast<double>(a));
            break;
          case Reduce::LogSumExp:
            r = std::log(static_cast<double>(a)) + static_cast<double>(shift[i]);
            break;
          default:
            if constexpr (std::is_integral_v<T>) {
              dst[i] = static_cast<T>(a);
              continue;
            }
            r = static_cast<double>(a);
        }
        dst[i] = fromCompute<T>(static_cast<C>(r));
      }
    }
  });
}

/// ReduceX: axes from the attribute (old opsets) or the second input (`axesInput`).
void reduce(KernelContext& ctx, Reduce kind, bool axesInput) {
  const Array& x = ctx.in(0);
  int64_t rank = x.rank();
  bool keepDims = ctx.node.attrInt("keepdims", 1) != 0;
  bool noopEmpty = ctx.node.attrInt("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (axesInput) {
    if (const Array* a = ctx.optIn(1)) axes = a->toInt64Vector();
  } else {
    axes = ctx.node.attrInts("axes");
  }
  if (axes.empty() && noopEmpty) {
    ctx.outputs[0] = x;
    return;
  }
  std::vector<char> reduced(static_cast<size_t>(rank), axes.empty() ? 1 : 0);
  for (int64_t a : axes) reduced[normalizeAxis(a, rank)] = 1;

  Shape outShape, keptShape;
  std::vector<int64_t> perm, tail;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      if (keepDims) outShape.push_back(1);
      tail.push_back(d);
    } else {
      outShape.push_back(x.shape()[d]);
      perm.push_back(d);
    }
  }
  // Reduced axes in one contiguous block reduce in place; otherwise move them last.
  int64_t first = tail.empty() ? rank : tail.front();
  bool contiguous = tail.empty() || tail.back() - first + 1 == static_cast<int64_t>(tail.size());
  Array source = x;
  int64_t outer, n, inner;
  if (contiguous) {
    outer = product(x.shape(), 0, static_cast<size_t>(first));
    n = 1;
    for (int64_t d : tail) n *= x.shape()[d];
    inner = tail.empty() ? 1 : product(x.shape(), static_cast<size_t>(tail.back()) + 1);
  } else {
    perm.insert(perm.end(), tail.begin(), tail.end());
    source = transposeArray(x, perm, ctx.pool);
    n = 1;
    for (int64_t d : tail) n *= x.shape()[d];
    outer = n == 0 ? product(outShape) : x.numel() / n;
    inner = 1;
  }
  Array out(x.dataType(), outShape);
  dispatchNumeric(x.dataType(), [&]<class T>(TypeTag<T>) {
    reduceBlock<T>(kind, source.data<T>(), out.data<T>(), outer, n, inner, ctx.pool);
  });
  ctx.outputs[0] = std::move(out);
}

void registerReduce(KernelRegistry& r, const char* name, Reduce kind, int inputSince) {
  r.add("", name, 1, [kind](KernelContext& ctx) { reduce(ctx, kind, false); });
  r.add("", name, inputSince, [kind](KernelContext& ctx) { reduce(ctx, kind, true); });
}

// ---------------------------------------------------------------------------------------------

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

/// Softmax family: opset < 13 coerces the input to 2-D at `axis` (default 1) and normalises
/// whole rows; opset 13+ normalises along `axis` (default -1).
void softmax(KernelContext& ctx, SoftmaxKind kind) {
  const Array& x = ctx.in(0);
  int64_t rank = x.rank();
  AxisView v;
  if (ctx.opset < 13) {
    int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 1), rank, true);
    v = {product(x.shape(), 0, static_cast<size_t>(axis)),
         product(x.shape(), static_cast<size_t>(axis)), 1};
  } else {
    if (rank == 0) ctx.fail("the input must have rank 1 or more");
    v = viewAround(x.shape(), normalizeAxis(ctx.node.attrInt("axis", -1), rank));
  }
  Array out(x.dataType(), x.shape());
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    int64_t lines = v.outer * v.inner;
    int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, v.n));
    parallelFor(ctx.pool, lines, grain, [&](int64_t l0, int64_t l1) {
      std::vector<C> buf(static_cast<size_t>(v.n));
      std::vector<C> shifted(kind == SoftmaxKind::LogSoftmax ? static_cast<size_t>(v.n) : 0);
      for (int64_t line = l0; line < l1; ++line) {
        int64_t base = (line / v.inner) * v.n * v.inner + line % v.inner;
        C maxValue = -std::numeric_limits<C>::infinity();
        int64_t argmax = 0;
        for (int64_t j = 0; j < v.n; ++j) {
          C value = static_cast<C>(toCompute(in[base + j * v.inner]));
          buf[j] = value;
          if (value > maxValue) {
            maxValue = value;
            argmax = j;
          }
        }
        if (kind == SoftmaxKind::Hardmax) {
          for (int64_t j = 0; j < v.n; ++j) {
            o[base + j * v.inner] = fromCompute<T>(static_cast<ComputeT<T>>(j == argmax ? 1 : 0));
          }
          continue;
        }
        double sum = 0;
        if constexpr (std::is_same_v<C, float>) {
          // exp over the whole line through the vector math library, then summed in order.
          // Softmax keeps the exponentials in buf; LogSoftmax needs buf's values afterwards.
          C* e = kind == SoftmaxKind::Softmax ? buf.data() : shifted.data();
          for (int64_t j = 0; j < v.n; ++j) e[j] = buf[j] - maxValue;
          expFloats(e, e, v.n);
          for (int64_t j = 0; j < v.n; ++j) sum += e[j];
        } else {
          for (int64_t j = 0; j < v.n; ++j) {
            C e = std::exp(buf[j] - maxValue);
            sum += e;
            if (kind == SoftmaxKind::Softmax) buf[j] = e;
          }
        }
        if (kind == SoftmaxKind::Softmax) {
          C inv = static_cast<C>(1.0 / sum);
          for (int64_t j = 0; j < v.n; ++j) {
            o[base + j * v.inner] = fromCompute<T>(static_cast<ComputeT<T>>(buf[j] * inv));
          }
        } else {
          C logSum = static_cast<C>(std::log(sum));
          for (int64_t j = 0; j < v.n; ++j) {
            o[base + j * v.inner] =
                fromCompute<T>(static_cast<ComputeT<T>>(buf[j] - maxValue - logSum));
          }
        }
      }
    });
  });
  ctx.outputs[0] = std::move(out);
}

void argExtreme(KernelContext& ctx, bool isMax) {
  const Array& x = ctx.in(0);
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", 0), x.rank());
  bool keepDims = ctx.node.attrInt("keepdims", 1) != 0;
  bool last = ctx.node.attrInt("select_last_index", 0) != 0;
  AxisView v = viewAround(x.shape(), axis);
  if (v.n == 0) ctx.fail("cannot take the arg max/min of an empty axis");
  Shape shape = x.shape();
  if (keepDims) {
    shape[axis] = 1;
  } else {
    shape.erase(shape.begin() + axis);
  }
  Array out(DataType::Int64, shape);
  int64_t* o = out.data<int64_t>();
  dispatchNumeric(x.dataType(), [&]<class T>(TypeTag<T>) {
    const T* in = x.data<T>();
    for (int64_t outer = 0; outer < v.outer; ++outer) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const T* line = in + outer * v.n * v.inner + i;
        auto best = toCompute(line[0]);
        int64_t bestIndex = 0;
        for (int64_t j = 1; j < v.n; ++j) {
          auto value = toCompute(line[j * v.inner]);
          bool better = isMax ? (value > best || (last && value == best))
                              : (value < best || (last && value == best));
          if (better) {
            best = value;
            bestIndex = j;
          }
        }
        o[outer * v.inner + i] = bestIndex;
      }
    }
  });
  ctx.outputs[0] = std::move(out);
}

void topK(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t k = ctx.opset >= 10 ? static_cast<int64_t>(scalarValue(ctx.in(1), "K"))
                              : ctx.node.attrInt("k", -1);
  int64_t axis = normalizeAxis(ctx.node.attrInt("axis", -1), x.rank());
  bool largest = ctx.opset < 11 || ctx.node.attrInt("largest", 1) != 0;
  AxisView v = viewAround(x.shape(), axis);
  if (k < 0 || k > v.n) ctx.fail(fmt::format("K = {} is out of range for an axis of {}", k, v.n));
  Shape shape = x.shape();
  shape[axis] = k;
  Array values(x.dataType(), shape);
  Array indices(DataType::Int64, shape);
  dispatchNumeric(x.dataType(), [&]<class T>(TypeTag<T>) {
    using C = ComputeT<T>;
    const T* in = x.data<T>();
    T* ov = values.data<T>();
    int64_t* oi = indices.data<int64_t>();
    std::vector<std::pair<C, int64_t>> line(static_cast<size_t>(v.n));
    // Ties go to the lower index, so the result does not depend on the sort's stability.
    auto before = [largest](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
      if (a.first != b.first) return largest ? a.first > b.first : a.first < b.first;
      return a.second < b.second;
    };
    for (int64_t outer = 0; outer < v.outer; ++outer) {
      for (int64_t i = 0; i < v.inner; ++i) {
        int64_t base = outer * v.n * v.inner + i;
        for (int64_t j = 0; j < v.n; ++j) line[j] = {toCompute(in[base + j * v.inner]), j};
        std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
        int64_t outBase = outer * k * v.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          ov[outBase + j * v.inner] = in[base + line[j].second * v.inner];
          oi[outBase + j * v.inner] = line[j].second;
        }
      }
    }
  });
  ctx.outputs[0] = std::move(values);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(indices);
}

void cumSum(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t axis = normalizeAxis(static_cast<int64_t>(scalarValue(ctx.in(1), "axis")), x.rank());
  bool exclusive = ctx.node.attrInt("exclusive", 0) != 0;
  bool reverse = ctx.node.attrInt("reverse", 0) != 0;
  AxisView v = viewAround(x.shape(), axis);
  Array out(x.dataType(), x.shape());
  dispatchNumeric(x.dataType(), [&]<class T>(TypeTag<T>) {
    using C = ComputeT<T>;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    for (int64_t outer = 0; outer < v.outer; ++outer) {
      for (int64_t i = 0; i < v.inner; ++i) {
        int64_t base = outer * v.n * v.inner + i;
        C sum = 0;
        for (int64_t step = 0; step < v.n; ++step) {
          int64_t j = reverse ? v.n - 1 - step : step;
          C value = toCompute(in[base + j * v.inner]);
          if (exclusive) {
            o[base + j * v.inner] = fromCompute<T>(sum);
            sum = static_cast<C>(sum + value);
          } else {
            sum = static_cast<C>(sum + value);
            o[base + j * v.inner] = fromCompute<T>(sum);
          }
        }
      }
    }
  });
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void registerReductionKernels(KernelRegistry& r) {
  r.add({
      {"TopK", 1, topK},
      {"CumSum", 11, cumSum},
  });
  registerReduce(r, "ReduceSum", Reduce::Sum, 13);
  registerReduce(r, "ReduceMean", Reduce::Mean, 18);
  registerReduce(r, "ReduceMax", Reduce::Max, 18);
  registerReduce(r, "ReduceMin", Reduce::Min, 18);
  registerReduce(r, "ReduceProd", Reduce::Prod, 18);
  registerReduce(r, "ReduceL1", Reduce::L1, 18);
  registerReduce(r, "ReduceL2", Reduce::L2, 18);
  registerReduce(r, "ReduceSumSquare", Reduce::SumSquare, 18);
  registerReduce(r, "ReduceLogSum", Reduce::LogSum, 18);
  registerReduce(r, "ReduceLogSumExp", Reduce::LogSumExp, 18);
  r.add("", "Softmax", 1, [](KernelContext& ctx) { softmax(ctx, SoftmaxKind::Softmax); });
  r.add("", "LogSoftmax", 1, [](KernelContext& ctx) { softmax(ctx, SoftmaxKind::LogSoftmax); });
  r.add("", "Hardmax", 1, [](KernelContext& ctx) { softmax(ctx, SoftmaxKind::Hardmax); });
  r.add("", "ArgMax", 1, [](KernelContext& ctx) { argExtreme(ctx, true); });
  r.add("", "ArgMin", 1, [](KernelContext& ctx) { argExtreme(ctx, false); });
}

}  // namespace qopt::interp
