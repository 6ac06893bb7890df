// Einsum: two-operand contractions become a batched matrix product over permuted operands;
// everything else (diagonals, single-operand reductions, three or more operands) runs through a
// generic loop over all labels. Accumulates in double (int64 for integers).
#include <algorithm>
#include <map>

#include "ArrayOps.h"
#include "KernelSupport.h"

namespace qopt::interp {

namespace {

// Labels are small ints: letters map to 0..51, ellipsis dims to 52+.
constexpr int kEllipsisBase = 52;

int labelOf(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

struct Term {
  std::vector<int> letters;  // with -1 marking the ellipsis position
  bool hasEllipsis = false;
};

Term parseTerm(KernelContext& ctx, std::string_view text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, 3) == "...") {
      if (term.hasEllipsis) ctx.fail("a term has two ellipses");
      term.hasEllipsis = true;
      term.letters.push_back(-1);
      i += 2;
      continue;
    }
    int l = labelOf(text[i]);
    if (l < 0) ctx.fail(fmt::format("invalid character '{}' in the equation", text[i]));
    term.letters.push_back(l);
  }
  return term;
}

struct Equation {
  std::vector<std::vector<int>> inputs;  // labels per input axis (ellipsis expanded)
  std::vector<int> output;
  std::map<int, int64_t> sizes;
};

Equation parseEquation(KernelContext& ctx, const std::vector<const Array*>& operands) {
  std::string eq;
  for (char c : ctx.node.attrString("equation")) {
    if (c != ' ') eq.push_back(c);
  }
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  size_t start = 0;
  for (;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parseTerm(ctx, std::string_view(lhs).substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size()) {
    ctx.fail(
        fmt::format("the equation has {} operands, the node {}", terms.size(), operands.size()));
  }
  Equation e;
  int64_t ellipsisRank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    int64_t explicitCount =
        static_cast<int64_t>(terms[k].letters.size()) - (terms[k].hasEllipsis ? 1 : 0);
    int64_t rank = operands[k]->rank();
    if (terms[k].hasEllipsis ? rank < explicitCount : rank != explicitCount) {
      ctx.fail(fmt::format("operand {} has rank {}, the equation gives it {} labels", k, rank,
                           explicitCount));
    }
    if (terms[k].hasEllipsis) ellipsisRank = std::max(ellipsisRank, rank - explicitCount);
  }
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> labels;
    int64_t rank = operands[k]->rank();
    int64_t explicitCount =
        static_cast<int64_t>(terms[k].letters.size()) - (terms[k].hasEllipsis ? 1 : 0);
    int64_t dims = rank - explicitCount;
    for (int l : terms[k].letters) {
      if (l >= 0) {
        labels.push_back(l);
        continue;
      }
      // Ellipsis dims align from the right with the widest ellipsis.
      for (int64_t j = 0; j < dims; ++j)
        labels.push_back(kEllipsisBase + static_cast<int>(ellipsisRank - dims + j));
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t size = operands[k]->shape()[d];
      auto [it, inserted] = e.sizes.try_emplace(labels[d], size);
      if (!inserted && it->second != size) {
        if (labels[d] >= kEllipsisBase && (it->second == 1 || size == 1)) {
          it->second = std::max(it->second, size);
        } else {
          ctx.fail(fmt::format("label sizes disagree: {} and {}", it->second, size));
        }
      }
    }
    e.inputs.push_back(std::move(labels));
  }
  if (arrow != std::string::npos) {
    Term out = parseTerm(ctx, std::string_view(eq).substr(arrow + 2));
    for (int l : out.letters) {
      if (l >= 0) {
        if (!e.sizes.contains(l)) ctx.fail("an output label appears in no input");
        e.output.push_back(l);
      } else {
        for (int64_t j = 0; j < ellipsisRank; ++j)
          e.output.push_back(kEllipsisBase + static_cast<int>(j));
      }
    }
  } else {
    // Implicit output: ellipsis dims, then the labels seen exactly once, alphabetically.
    for (int64_t j = 0; j < ellipsisRank; ++j)
      e.output.push_back(kEllipsisBase + static_cast<int>(j));
    std::map<int, int> counts;
    for (const auto& labels : e.inputs) {
      for (int l : labels) {
        if (l < kEllipsisBase) ++counts[l];
      }
    }
    for (auto [l, c] : counts) {
      if (c == 1) e.output.push_back(l);
    }
  }
  return e;
}

/// The generic evaluation: out[o] = sum over reduced labels of the product of the operands.
template <class T>
void einsumGeneric(const Equation& e, const std::vector<const Array*>& operands, Array& out) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  std::vector<int> all = e.output;
  for (const auto& [l, size] : e.sizes) {
    if (std::find(e.output.begin(), e.output.end(), l) == e.output.end()) all.push_back(l);
  }
  size_t numOut = e.output.size();
  std::vector<int64_t> sizes;
  for (int l : all) sizes.push_back(e.sizes.at(l));
  // strides[k][j]: operand k's element stride for label all[j] (summed when repeated: diagonal).
  std::vector<std::vector<int64_t>> strides(operands.size(), std::vector<int64_t>(all.size(), 0));
  for (size_t k = 0; k < operands.size(); ++k) {
    std::vector<int64_t> s = contiguousStrides(operands[k]->shape());
    for (size_t d = 0; d < e.inputs[k].size(); ++d) {
      if (operands[k]->shape()[d] == 1) continue;  // broadcast ellipsis dim
      size_t j = std::find(all.begin(), all.end(), e.inputs[k][d]) - all.begin();
      strides[k][j] += s[d];
    }
  }
  int64_t reduceCount = 1;
  for (size_t j = numOut; j < all.size(); ++j) reduceCount *= sizes[j];
  std::vector<int64_t> index(all.size(), 0);
  T* o = out.data<T>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::fill(index.begin() + static_cast<std::ptrdiff_t>(numOut), index.end(), 0);
    Acc sum = 0;
    for (int64_t r = 0; r < reduceCount; ++r) {
      Acc product = 1;
      for (size_t k = 0; k < operands.size(); ++k) {
        int64_t offset = 0;
        for (size_t j = 0; j < all.size(); ++j) offset += index[j] * strides[k][j];
        product *= static_cast<Acc>(toCompute(operands[k]->data<T>()[offset]));
      }
      sum += product;
      for (size_t j = all.size(); j-- > numOut;) {
        if (++index[j] < sizes[j]) break;
        index[j] = 0;
      }
    }
    o[i] = fromCompute<T>(static_cast<ComputeT<T>>(sum));
    for (size_t j = numOut; j-- > 0;) {
      if (++index[j] < sizes[j]) break;
      index[j] = 0;
    }
  }
}

/// Two operands, no repeated labels, no broadcast ellipsis dims: permute to [batch, M, K] and
/// [batch, K, N], multiply, permute to the output order. Returns false when not applicable.
template <class T>
bool einsumMatmul(KernelContext& ctx, const Equation& e, const std::vector<const Array*>& ops,
                  Array& out) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  if (ops.size() != 2) return false;
  const auto& la = e.inputs[0];
  const auto& lb = e.inputs[1];
  auto has = [](const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
  };
  for (size_t k = 0; k < 2; ++k) {
    const auto& labels = e.inputs[k];
    for (size_t d = 0; d < labels.size(); ++d) {
      if (std::count(labels.begin(), labels.end(), labels[d]) != 1) return false;
      if (ops[k]->shape()[d] != e.sizes.at(labels[d])) return false;
    }
  }
  std::vector<int> batch, m, n, kk;
  for (int l : la) {
    bool inB = has(lb, l), inO = has(e.output, l);
    if (inB && inO)
      batch.push_back(l);
    else if (inB)
      kk.push_back(l);
    else if (inO)
      m.push_back(l);
    else
      return false;  // summed over in A alone: generic path
  }
  for (int l : lb) {
    if (!has(la, l)) {
      if (!has(e.output, l)) return false;
      n.push_back(l);
    }
  }
  auto permFor = [](const std::vector<int>& labels,
                    std::initializer_list<const std::vector<int>*> groups) {
    std::vector<int64_t> perm;
    for (const auto* g : groups) {
      for (int l : *g) perm.push_back(std::find(labels.begin(), labels.end(), l) - labels.begin());
    }
    return perm;
  };
  Array a = transposeArray(*ops[0], permFor(la, {&batch, &m, &kk}), ctx.pool);
  Array b = transposeArray(*ops[1], permFor(lb, {&batch, &kk, &n}), ctx.pool);
  auto sizeOf = [&](const std::vector<int>& g) {
    int64_t p = 1;
    for (int l : g) p *= e.sizes.at(l);
    return p;
  };
  int64_t B = sizeOf(batch), M = sizeOf(m), N = sizeOf(n), K = sizeOf(kk);
  Shape productShape;
  std::vector<int> productLabels;
  for (const auto* g : {&batch, &m, &n}) {
    for (int l : *g) {
      productShape.push_back(e.sizes.at(l));
      productLabels.push_back(l);
    }
  }
  Array c(out.dataType(), productShape);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.data<T>();
  parallelFor(ctx.pool, B * M, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, N * K)),
              [&](int64_t r0, int64_t r1) {
                std::vector<Acc> acc(static_cast<size_t>(N));
                for (int64_t row = r0; row < r1; ++row) {
                  int64_t bi = row / M;
                  std::fill(acc.begin(), acc.end(), Acc(0));
                  const T* arow = pa + row * K;
                  const T* bmat = pb + bi * K * N;
                  for (int64_t k = 0; k < K; ++k) {
                    Acc av = static_cast<Acc>(toCompute(arow[k]));
                    const T* brow = bmat + k * N;
                    for (int64_t j = 0; j < N; ++j)
                      acc[j] += av * static_cast<Acc>(toCompute(brow[j]));
                  }
                  for (int64_t j = 0; j < N; ++j)
                    pc[row * N + j] = fromCompute<T>(static_cast<ComputeT<T>>(acc[j]));
                }
              });
  std::vector<int64_t> perm;
  for (int l : e.output)
    perm.push_back(std::find(productLabels.begin(), productLabels.end(), l) -
                   productLabels.begin());
  out = transposeArray(c, perm, ctx.pool);
  return true;
}

void einsum(KernelContext& ctx) {
  std::vector<const Array*> operands;
  for (size_t i = 0; i < ctx.numInputs(); ++i) operands.push_back(&ctx.in(i));
  if (operands.empty()) ctx.fail("needs at least one operand");
  DataType type = operands[0]->dataType();
  for (const Array* a : operands) {
    if (a->dataType() != type) ctx.fail("operands have different element types");
  }
  Equation e = parseEquation(ctx, operands);
  Shape shape;
  for (int l : e.output) shape.push_back(e.sizes.at(l));
  Array out(type, shape);
  dispatchNumeric(type, [&]<class T>(TypeTag<T>) {
    if (!einsumMatmul<T>(ctx, e, operands, out)) einsumGeneric<T>(e, operands, out);
  });
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void registerEinsumKernel(KernelRegistry& r) {
  r.add("", "Einsum", 12, einsum);
}

}  // namespace qopt::interp
