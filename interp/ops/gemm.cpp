// Matrix products: Gemm, MatMul (numpy broadcasting, 1-D operands), MatMulInteger and
// QLinearMatMul.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "Broadcast.h"
#include "FloatStaging.h"
#include "KernelSupport.h"
#include "MatrixMultiply.h"
#include "QuantMath.h"
#include "ThreadPool.h"

namespace qopt::interp {

namespace {

// ---------------------------------------------------------------------------------------------
// Batched matrix layout shared by MatMul, MatMulInteger and QLinearMatMul.

struct MatMulLayout {
  int64_t m = 0, n = 0, k = 0;
  Shape batch;                       // broadcast batch dims
  std::vector<int64_t> aBatchIndex;  // per output batch: the batch index of A and of B
  std::vector<int64_t> bBatchIndex;
  Shape outShape;
  /// B is shared by every batch and A's batches are contiguous: the product is one GEMM with
  /// M = batches * m.
  bool foldBatchIntoRows = false;
};

MatMulLayout matMulLayout(const KernelContext& ctx, const Shape& aShape, const Shape& bShape) {
  if (aShape.empty() || bShape.empty()) ctx.fail("MatMul operands must have rank >= 1");
  Shape a = aShape, b = bShape;
  const bool aVector = a.size() == 1, bVector = b.size() == 1;
  if (aVector) a.insert(a.begin(), 1);
  if (bVector) b.push_back(1);
  MatMulLayout l;
  l.m = a[a.size() - 2];
  l.k = a.back();
  l.n = b.back();
  if (b[b.size() - 2] != l.k) {
    ctx.fail(fmt::format("inner dimensions differ: A is {} and B is {}", shapeString(aShape),
                         shapeString(bShape)));
  }
  Shape aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  try {
    l.batch = broadcastShapes(aBatch, bBatch);
  } catch (const Error& e) {
    ctx.fail(fmt::format("batch dimensions do not broadcast: {}", e.cause()));
  }
  const size_t rank = l.batch.size();
  aBatch.insert(aBatch.begin(), rank - aBatch.size(), 1);
  bBatch.insert(bBatch.begin(), rank - bBatch.size(), 1);
  const int64_t batches = product(l.batch);
  l.aBatchIndex.resize(static_cast<size_t>(batches));
  l.bBatchIndex.resize(static_cast<size_t>(batches));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t ai = 0, bi = 0;
    for (size_t d = 0; d < rank; ++d) {
      ai = ai * aBatch[d] + (aBatch[d] == 1 ? 0 : idx[d]);
      bi = bi * bBatch[d] + (bBatch[d] == 1 ? 0 : idx[d]);
    }
    l.aBatchIndex[static_cast<size_t>(i)] = ai;
    l.bBatchIndex[static_cast<size_t>(i)] = bi;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < l.batch[d]) break;
      idx[d] = 0;
    }
  }
  l.foldBatchIntoRows = product(bBatch) == 1 && product(aBatch) == batches;
  l.outShape = l.batch;
  if (!aVector) l.outShape.push_back(l.m);
  if (!bVector) l.outShape.push_back(l.n);
  return l;
}

// Runs body(batch) for every output batch: across the pool when there are enough small
// products, else in order with the pool left to the GEMM inside.
template <class Body>
void forEachBatch(const KernelContext& ctx, const MatMulLayout& l, Body&& body) {
  const int64_t batches = static_cast<int64_t>(l.aBatchIndex.size());
  const bool spread = ctx.pool != nullptr && batches >= ctx.threads;
  if (spread) {
    parallelFor(ctx.pool, batches, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) body(i, nullptr);
    });
  } else {
    for (int64_t i = 0; i < batches; ++i) body(i, ctx.pool);
  }
}

template <class T>
void floatMatMul(const KernelContext& ctx, const MatMulLayout& l, const T* a, const T* b, T* y) {
  if (l.foldBatchIntoRows) {
    const int64_t rows = static_cast<int64_t>(l.aBatchIndex.size()) * l.m;
    gemm(false, false, rows, l.n, l.k, T(1), a, l.k, b, l.n, T(0), y, l.n, ctx.pool);
    return;
  }
  forEachBatch(ctx, l, [&](int64_t i, ThreadPool* pool) {
    const T* ap = a + l.aBatchIndex[static_cast<size_t>(i)] * l.m * l.k;
    const T* bp = b + l.bBatchIndex[static_cast<size_t>(i)] * l.k * l.n;
    gemm(false, false, l.m, l.n, l.k, T(1), ap, l.k, bp, l.n, T(0), y + i * l.m * l.n, l.n, pool);
  });
}

// Integer MatMul/Gemm: wrap-around arithmetic in the element type, as ONNX Runtime's Eigen path.
template <class T>
void integerProduct(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
                    T* y) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      U sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T av = ta ? a[p * m + i] : a[i * k + p];
        const T bv = tb ? b[j * k + p] : b[p * n + j];
        sum += static_cast<U>(av) * static_cast<U>(bv);
      }
      y[i * n + j] = static_cast<T>(sum);
    }
  }
}

// Calls fn(a, b, y) with pointers of the type MatMul and Gemm compute in: double as stored,
// float16 and bfloat16 through float copies (float as stored), and the 32- and 64-bit integers.
template <class Fn>
void withProductOperands(const KernelContext& ctx, const Array& a, const Array& b, Array& y,
                         Fn&& fn) {
  switch (a.dataType()) {
    case DataType::Double:
      fn(a.data<double>(), b.data<double>(), y.data<double>());
      break;
    case DataType::Float:
    case DataType::Float16:
    case DataType::BFloat16: {
      FloatInput fa(a), fb(b);
      FloatOutput fy(y);
      fn(fa.data(), fb.data(), fy.data());
      fy.commit();
      break;
    }
    case DataType::Int32:
    case DataType::Int64:
    case DataType::UInt32:
    case DataType::UInt64:
      dispatchInteger(a.dataType(),
                      [&]<class T>(TypeTag<T>) { fn(a.data<T>(), b.data<T>(), y.data<T>()); });
      break;
    default:
      ctx.fail(fmt::format("element type {} is not supported", dataTypeName(a.dataType())));
  }
}

void matMulKernel(KernelContext& ctx) {
  const Array& a = ctx.in(0);
  const Array& b = ctx.in(1);
  if (a.dataType() != b.dataType()) ctx.fail("A and B must have the same element type");
  const MatMulLayout l = matMulLayout(ctx, a.shape(), b.shape());
  Array y(a.dataType(), l.outShape);
  withProductOperands(ctx, a, b, y, [&]<class T>(const T* ap, const T* bp, T* yp) {
    if constexpr (std::is_integral_v<T>) {
      for (size_t i = 0; i < l.aBatchIndex.size(); ++i) {
        integerProduct<T>(false, false, l.m, l.n, l.k, ap + l.aBatchIndex[i] * l.m * l.k,
                          bp + l.bBatchIndex[i] * l.k * l.n,
                          yp + static_cast<int64_t>(i) * l.m * l.n);
      }
    } else {
      floatMatMul(ctx, l, ap, bp, yp);
    }
  });
  ctx.outputs[0] = std::move(y);
}

// ---------------------------------------------------------------------------------------------
// Gemm

// Fills y (m x n) with beta * C broadcast unidirectionally to [m, n].
template <class T>
void fillWithScaledC(const KernelContext& ctx, const Array& c, double beta, int64_t m, int64_t n,
                     T* y) {
  const Shape& s = c.shape();
  if (s.size() > 2) ctx.fail(fmt::format("C must have rank <= 2, got {}", shapeString(s)));
  const int64_t rows = s.size() == 2 ? s[0] : 1;
  const int64_t cols = s.empty() ? 1 : s.back();
  if ((rows != 1 && rows != m) || (cols != 1 && cols != n)) {
    ctx.fail(fmt::format("C of shape {} does not broadcast to [{},{}]", shapeString(s), m, n));
  }
  dispatchNumeric(c.dataType(), [&](auto tag) {
    using TC = typename decltype(tag)::type;
    const TC* cp = c.data<TC>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const auto v = toCompute(cp[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)]);
        if constexpr (std::is_integral_v<T>) {
          y[i * n + j] = static_cast<T>(static_cast<T>(beta) * static_cast<T>(v));
        } else {
          y[i * n + j] = static_cast<T>(beta) * static_cast<T>(v);
        }
      }
    }
  });
}

void gemmKernel(KernelContext& ctx) {
  const Array& a = ctx.in(0);
  const Array& b = ctx.in(1);
  const Array* c = ctx.optIn(2);
  const bool ta = ctx.node.attrInt("transA", 0) != 0;
  const bool tb = ctx.node.attrInt("transB", 0) != 0;
  const double alpha = ctx.node.attrFloat("alpha", 1.0f);
  const double beta = ctx.node.attrFloat("beta", 1.0f);
  if (a.rank() != 2 || b.rank() != 2) {
    ctx.fail(fmt::format("A and B must be 2-D, got {} and {}", shapeString(a.shape()),
                         shapeString(b.shape())));
  }
  if (a.dataType() != b.dataType() || (c && c->dataType() != a.dataType())) {
    ctx.fail("A, B and C must have the same element type");
  }
  const int64_t m = ta ? a.dim(1) : a.dim(0);
  const int64_t k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0);
  const int64_t n = tb ? b.dim(0) : b.dim(1);
  if (k != kb) {
    ctx.fail(
        fmt::format("inner dimensions differ: op(A) is [{},{}], op(B) is [{},{}]", m, k, kb, n));
  }
  Array y(a.dataType(), {m, n});
  const bool addC = c != nullptr && beta != 0.0;
  withProductOperands(ctx, a, b, y, [&]<class T>(const T* ap, const T* bp, T* yp) {
    if constexpr (std::is_integral_v<T>) {
      integerProduct<T>(ta, tb, m, n, k, ap, bp, yp);
      std::vector<T> scaledC(static_cast<size_t>(m * n), T(0));
      if (addC) fillWithScaledC(ctx, *c, beta, m, n, scaledC.data());
      for (int64_t i = 0; i < m * n; ++i) {
        yp[i] = static_cast<T>(static_cast<T>(alpha) * yp[i] + scaledC[static_cast<size_t>(i)]);
      }
    } else {
      if (addC) fillWithScaledC(ctx, *c, beta, m, n, yp);
      gemm(ta, tb, m, n, k, static_cast<T>(alpha), ap, a.dim(1), bp, b.dim(1), addC ? T(1) : T(0),
           yp, n, ctx.pool);
    }
  });
  ctx.outputs[0] = std::move(y);
}

// ---------------------------------------------------------------------------------------------
// MatMulInteger and QLinearMatMul

// A zero point (or scale) that is per tensor, per row of A / per column of B, or per batch and
// row/column: `at(batch)` gives the first of that batch's values and `stride` 0 or 1.
template <class T>
struct PerAxisParam {
  const T* data = nullptr;
  int64_t stride = 0;       // 0: one value for every row/column
  int64_t batchStride = 0;  // elements between batches
  const T* at(int64_t batch) const { return data + batch * batchStride; }
};

// `rowsOrCols`: m for A (per row), n for B (per column). `operandShape` is A's or B's shape.
template <class T>
PerAxisParam<T> perAxisParam(const KernelContext& ctx, const Array& p, const char* what,
                             int64_t rowsOrCols, const Shape& operandShape, bool isA) {
  PerAxisParam<T> r;
  r.data = p.data<T>();
  if (p.numel() == 1) return r;
  if (p.rank() == 1 && p.dim(0) == rowsOrCols) {
    r.stride = 1;
    return r;
  }
  // N-D: A's is [..., M, 1], B's is [..., 1, N], with A's/B's own batch dims.
  Shape expect = operandShape;
  if (expect.size() >= 2) expect[expect.size() - (isA ? 1 : 2)] = 1;
  if (p.shape() == expect && expect.size() >= 2) {
    r.stride = 1;
    r.batchStride = rowsOrCols;
    return r;
  }
  ctx.fail(fmt::format("{} of shape {} is neither per tensor nor per {} of shape {}", what,
                       shapeString(p.shape()), isA ? "row" : "column", shapeString(operandShape)));
}

template <class TA, class TB>
void integerMatMul(const KernelContext& ctx, const MatMulLayout& l, const Array& a, const Array& b,
                   const PerAxisParam<TA>& az, const PerAxisParam<TB>& bz, int32_t* y) {
  forEachBatch(ctx, l, [&](int64_t i, ThreadPool* pool) {
    const int64_t ab = l.aBatchIndex[static_cast<size_t>(i)];
    const int64_t bb = l.bBatchIndex[static_cast<size_t>(i)];
    integerGemm<TA, TB>(l.m, l.n, l.k, a.data<TA>() + ab * l.m * l.k, l.k, az.at(ab), az.stride,
                        b.data<TB>() + bb * l.k * l.n, l.n, bz.at(bb), bz.stride, y + i * l.m * l.n,
                        l.n, pool);
  });
}

template <class Fn>
void dispatch8Bit(const KernelContext& ctx, DataType type, const char* what, Fn&& fn) {
  if (type == DataType::UInt8) return fn(TypeTag<uint8_t>{});
  if (type == DataType::Int8) return fn(TypeTag<int8_t>{});
  ctx.fail(fmt::format("{} must be int8 or uint8, got {}", what, dataTypeName(type)));
}

void matMulIntegerKernel(KernelContext& ctx) {
  const Array& a = ctx.in(0);
  const Array& b = ctx.in(1);
  const MatMulLayout l = matMulLayout(ctx, a.shape(), b.shape());
  Array y(DataType::Int32, l.outShape);
  dispatch8Bit(ctx, a.dataType(), "A", [&](auto ta) {
    using TA = typename decltype(ta)::type;
    dispatch8Bit(ctx, b.dataType(), "B", [&](auto tb) {
      using TB = typename decltype(tb)::type;
      static constexpr TA aZero = 0;
      static constexpr TB bZero = 0;
      PerAxisParam<TA> az{&aZero};
      PerAxisParam<TB> bz{&bZero};
      if (const Array* p = ctx.optIn(2)) {
        if (p->dataType() != a.dataType()) ctx.fail("a_zero_point must have A's type");
        az = perAxisParam<TA>(ctx, *p, "a_zero_point", l.m, a.shape(), true);
      }
      if (const Array* p = ctx.optIn(3)) {
        if (p->dataType() != b.dataType()) ctx.fail("b_zero_point must have B's type");
        bz = perAxisParam<TB>(ctx, *p, "b_zero_point", l.n, b.shape(), false);
      }
      integerMatMul<TA, TB>(ctx, l, a, b, az, bz, y.data<int32_t>());
    });
  });
  ctx.outputs[0] = std::move(y);
}

std::vector<float> scaleValues(const KernelContext& ctx, const Array& s, const char* what) {
  if (!isFloatingPoint(s.dataType()) || s.dataType() == DataType::Double) {
    ctx.fail(fmt::format("{} must be float, float16 or bfloat16", what));
  }
  return s.toFloatVector();
}

void qlinearMatMulKernel(KernelContext& ctx) {
  const Array& a = ctx.in(0);
  const Array& b = ctx.in(3);
  const Array& yZero = ctx.in(7);
  const MatMulLayout l = matMulLayout(ctx, a.shape(), b.shape());
  const std::vector<float> aScale = scaleValues(ctx, ctx.in(1), "a_scale");
  const std::vector<float> bScale = scaleValues(ctx, ctx.in(4), "b_scale");
  const std::vector<float> yScale = scaleValues(ctx, ctx.in(6), "y_scale");
  if (yScale.size() != 1 || yZero.numel() != 1) {
    ctx.fail("y_scale and y_zero_point must be per tensor");
  }
  auto checkScale = [&](const std::vector<float>& s, int64_t count, const char* what) {
    if (s.size() != 1 && static_cast<int64_t>(s.size()) != count) {
      ctx.fail(fmt::format("{} has {} values; expected 1 or {}", what, s.size(), count));
    }
  };
  checkScale(aScale, l.m, "a_scale");
  checkScale(bScale, l.n, "b_scale");
  Array acc(DataType::Int32, l.outShape);
  dispatch8Bit(ctx, a.dataType(), "a", [&](auto ta) {
    using TA = typename decltype(ta)::type;
    dispatch8Bit(ctx, b.dataType(), "b", [&](auto tb) {
      using TB = typename decltype(tb)::type;
      if (ctx.in(2).dataType() != a.dataType() || ctx.in(5).dataType() != b.dataType()) {
        ctx.fail("zero points must have the type of their operand");
      }
      auto az = perAxisParam<TA>(ctx, ctx.in(2), "a_zero_point", l.m, a.shape(), true);
      auto bz = perAxisParam<TB>(ctx, ctx.in(5), "b_zero_point", l.n, b.shape(), false);
      if (az.batchStride != 0 || bz.batchStride != 0) {
        ctx.fail("zero points must be per tensor, per row of a or per column of b");
      }
      integerMatMul<TA, TB>(ctx, l, a, b, az, bz, acc.data<int32_t>());
    });
  });
  // multiplier[i][j] = a_scale[i] * b_scale[j] / y_scale, in float, as ONNX Runtime.
  const QuantRange range = quantRange(yZero.dataType());
  const int32_t zp = static_cast<int32_t>(yZero.getInt64(0));
  Array y(yZero.dataType(), l.outShape);
  const int32_t* accp = acc.data<int32_t>();
  const int64_t batches = static_cast<int64_t>(l.aBatchIndex.size());
  dispatch8Bit(ctx, yZero.dataType(), "y_zero_point", [&](auto ty) {
    using TY = typename decltype(ty)::type;
    TY* yp = y.data<TY>();
    for (int64_t bt = 0; bt < batches; ++bt) {
      for (int64_t i = 0; i < l.m; ++i) {
        const float as = aScale[aScale.size() == 1 ? 0 : static_cast<size_t>(i)];
        for (int64_t j = 0; j < l.n; ++j) {
          const float bs = bScale[bScale.size() == 1 ? 0 : static_cast<size_t>(j)];
          const float multiplier = as * bs / yScale[0];
          const int64_t at = (bt * l.m + i) * l.n + j;
          yp[at] = static_cast<TY>(requantize(accp[at], multiplier, zp, range));
        }
      }
    }
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void registerGemmKernels(KernelRegistry& registry) {
  registry.add({
      // Gemm before opset 11 differs only in requiring C, which the kernel accepts too.
      {"Gemm", 7, gemmKernel},
      {"MatMul", 1, matMulKernel},
      {"MatMulInteger", 10, matMulIntegerKernel},
      {"QLinearMatMul", 10, qlinearMatMulKernel},
  });
}

}  // namespace qopt::interp
