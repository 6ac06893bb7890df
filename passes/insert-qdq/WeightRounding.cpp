#include "WeightRounding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "qopt/analysis/DataSet.h"
#include "qopt/analysis/Metrics.h"
#include "qopt/analysis/SampleCache.h"
#include "qopt/constants/ConstantValue.h"
#include "qopt/dense/DenseMath.h"
#include "qopt/dense/Gptq.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"

namespace qopt::qdq {
namespace {

// GPTQ's rows are rounded (and their errors spread) this many at a time; the rows after a block
// take its errors in one matrix product.
constexpr int64_t kGptqBlock = 128;
// Rows of im2col patches built before they go into H.
constexpr int64_t kPatchChunk = 512;

/// Where a weight's elements sit when it is read as groups of K x N matrices (row = input,
/// column = output channel).
struct Layout {
  int64_t groups = 1;
  int64_t k = 0;
  int64_t n = 0;  // columns per group
  enum class Kind { Conv, KxN, NxK } kind = Kind::KxN;

  size_t index(int64_t g, int64_t r, int64_t c) const {
    switch (kind) {
      case Kind::Conv:
        return static_cast<size_t>((g * n + c) * k + r);
      case Kind::KxN:
        return static_cast<size_t>(r * n + c);
      case Kind::NxK:
        return static_cast<size_t>(c * k + r);
    }
    return 0;
  }
  int64_t outputChannel(int64_t g, int64_t c) const { return g * n + c; }
};

std::optional<Layout> layoutOf(const WeightSite& site, const std::vector<int64_t>& dims,
                               std::string& why) {
  const Node& node = *site.node;
  Layout layout;
  if (node.is("Conv")) {
    if (site.input != 1 || (dims.size() != 3 && dims.size() != 4)) {
      why = "only 1-D and 2-D convolutions are rounded by GPTQ";
      return std::nullopt;
    }
    if (site.axis > 0) {
      why = fmt::format("its scales run along axis {}, not the output channels", site.axis);
      return std::nullopt;
    }
    layout.kind = Layout::Kind::Conv;
    layout.groups = std::max<int64_t>(1, node.attrInt("group", 1));
    if (dims[0] % layout.groups != 0) {
      why = fmt::format("{} output channels do not split into {} groups", dims[0], layout.groups);
      return std::nullopt;
    }
    layout.n = dims[0] / layout.groups;
    layout.k = dims[1];
    for (size_t d = 2; d < dims.size(); ++d) layout.k *= dims[d];
    return layout;
  }
  const bool gemm = node.is("Gemm");
  if ((gemm || node.is("MatMul")) && site.input == 1 && dims.size() == 2) {
    const bool transposed = gemm && node.attrInt("transB", 0) != 0;
    const int64_t outputAxis = transposed ? 0 : 1;
    if (site.axis >= 0 && site.axis != outputAxis) {
      why = fmt::format("its scales run along axis {}, not the output channels", site.axis);
      return std::nullopt;
    }
    layout.kind = transposed ? Layout::Kind::NxK : Layout::Kind::KxN;
    layout.k = transposed ? dims[1] : dims[0];
    layout.n = transposed ? dims[0] : dims[1];
    return layout;
  }
  why = "GPTQ rounds the weights of Conv (1-D, 2-D), Gemm and MatMul with a 2-D weight";
  return std::nullopt;
}

/// A Conv's window over an input of known spatial dims (auto_pad resolved as ONNX defines it).
struct Window {
  std::vector<int64_t> input, kernel, strides, dilations, padsBegin, output;
};

Window windowOf(const Node& conv, const std::vector<int64_t>& weightDims,
                const std::vector<int64_t>& spatial) {
  const size_t rank = spatial.size();
  Window w;
  w.input = spatial;
  w.kernel.assign(weightDims.begin() + 2, weightDims.end());
  w.strides = conv.attrInts("strides", std::vector<int64_t>(rank, 1));
  w.dilations = conv.attrInts("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = conv.attrInts("pads", std::vector<int64_t>(2 * rank, 0));
  const std::string autoPad = conv.attrString("auto_pad", "NOTSET");
  w.padsBegin.assign(rank, 0);
  w.output.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      w.output[d] = (spatial[d] + w.strides[d] - 1) / w.strides[d];
      const int64_t total =
          std::max<int64_t>(0, (w.output[d] - 1) * w.strides[d] + extent - spatial[d]);
      w.padsBegin[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      const int64_t begin = autoPad == "VALID" ? 0 : pads[d];
      const int64_t end = autoPad == "VALID" ? 0 : pads[d + rank];
      w.padsBegin[d] = begin;
      w.output[d] = (spatial[d] + begin + end - extent) / w.strides[d] + 1;
    }
  }
  return w;
}

/// The row indices kept of `total`: all, or kMaxGramRowsPerSample evenly spaced.
std::vector<int64_t> keptRows(int64_t total) {
  const int64_t count = std::min(total, kMaxGramRowsPerSample);
  std::vector<int64_t> rows(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t j = 0; j < count; ++j) rows[static_cast<size_t>(j)] = j * total / count;
  return rows;
}

/// One H being summed: the layers that read the same activation the same way share it.
struct Collector {
  enum class Kind { Dense, DenseTransposed, Conv } kind = Kind::Dense;
  const Node* conv = nullptr;
  std::vector<int64_t> weightDims;
  Layout layout;
  InputGram gram;
  std::string failure;
};

class GramObserver : public interp::CaptureObserver {
 public:
  GramObserver(std::vector<Collector>& collectors,
               const std::unordered_map<const Value*, std::vector<size_t>>& readers)
      : collectors_(collectors), readers_(readers) {
    for (const auto& [value, list] : readers) wanted_.insert(value);
  }
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }

  void captured(const Value& value, const interp::Array& array) override {
    auto found = readers_.find(&value);
    if (found == readers_.end()) return;
    const std::vector<double> x = analysis::toDoubles(array);
    for (size_t index : found->second) {
      Collector& c = collectors_[index];
      if (!c.failure.empty()) continue;
      if (c.kind == Collector::Kind::Conv) {
        addConv(c, x, array.shape());
      } else {
        addDense(c, x, array.shape());
      }
    }
  }

 private:
  static void addDense(Collector& c, const std::vector<double>& x, const interp::Shape& shape) {
    const int64_t k = c.layout.k;
    const bool transposed = c.kind == Collector::Kind::DenseTransposed;
    const int64_t width = shape.empty() ? 0 : (transposed ? shape.front() : shape.back());
    if (width != k || (transposed && shape.size() != 2)) {
      c.failure =
          fmt::format("its input has {} values per row at run time, its weight K={}", width, k);
      return;
    }
    const auto total = static_cast<int64_t>(x.size()) / k;
    const std::vector<int64_t> rows = keptRows(total);
    std::vector<double> buffer(rows.size() * static_cast<size_t>(k));
    for (size_t j = 0; j < rows.size(); ++j) {
      for (int64_t i = 0; i < k; ++i) {
        // Row r of A (or, transposed, column r of the K x M A^T).
        buffer[j * static_cast<size_t>(k) + static_cast<size_t>(i)] =
            transposed ? x[static_cast<size_t>(i * total + rows[j])]
                       : x[static_cast<size_t>(rows[j] * k + i)];
      }
    }
    wq::dense::addGramUpper(buffer.data(), static_cast<int64_t>(rows.size()), k, c.gram.grams[0]);
    c.gram.rows += static_cast<int64_t>(rows.size());
  }

  static void addConv(Collector& c, const std::vector<double>& x, const interp::Shape& shape) {
    const size_t spatialRank = c.weightDims.size() - 2;
    const int64_t cg = c.weightDims[1];
    const int64_t groups = c.layout.groups;
    if (shape.size() != spatialRank + 2 || shape[1] != cg * groups) {
      c.failure = fmt::format("its input has shape {} at run time, its weight {} in {} groups",
                              fmt::join(shape, "x"), fmt::join(c.weightDims, "x"), groups);
      return;
    }
    // A 1-D convolution is a 2-D one of height 1.
    std::vector<int64_t> spatial(shape.begin() + 2, shape.end());
    Window w = windowOf(*c.conv, c.weightDims, spatial);
    if (spatialRank == 1) {
      for (auto* v : {&w.input, &w.kernel, &w.output}) v->insert(v->begin(), 1);
      for (auto* v : {&w.strides, &w.dilations}) v->insert(v->begin(), 1);
      w.padsBegin.insert(w.padsBegin.begin(), 0);
    }
    const int64_t batch = shape[0];
    const int64_t ih = w.input[0], iw = w.input[1], kh = w.kernel[0], kw = w.kernel[1];
    const int64_t oh = w.output[0], ow = w.output[1];
    if (oh <= 0 || ow <= 0) return;
    const std::vector<int64_t> positions = keptRows(batch * oh * ow);
    const int64_t k = c.layout.k;
    // A grouped Conv's many small products would leave OpenBLAS's threads spinning between them.
    std::optional<wq::dense::SingleThreaded> oneThread;
    if (groups > 1) oneThread.emplace();
    std::vector<double> buffer(static_cast<size_t>(kPatchChunk * k));
    for (int64_t g = 0; g < groups; ++g) {
      std::vector<double>& gram = c.gram.grams[static_cast<size_t>(g)];
      for (size_t first = 0; first < positions.size(); first += kPatchChunk) {
        const size_t last = std::min(positions.size(), first + kPatchChunk);
        for (size_t j = first; j < last; ++j) {
          const int64_t p = positions[j];
          const int64_t b = p / (oh * ow), y = (p / ow) % oh, xo = p % ow;
          double* row = buffer.data() + (j - first) * static_cast<size_t>(k);
          const int64_t x0 = xo * w.strides[1] - w.padsBegin[1];
          const bool rowInside = x0 >= 0 && x0 + (kw - 1) * w.dilations[1] < iw;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const double* plane = x.data() + ((b * cg * groups) + g * cg + ci) * ih * iw;
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t yy = y * w.strides[0] - w.padsBegin[0] + i * w.dilations[0];
              if (yy < 0 || yy >= ih) {
                std::fill_n(row, kw, 0.0);
              } else if (rowInside) {
                const double* src = plane + yy * iw + x0;
                for (int64_t jj = 0; jj < kw; ++jj) row[jj] = src[jj * w.dilations[1]];
              } else {
                for (int64_t jj = 0; jj < kw; ++jj) {
                  const int64_t xx = x0 + jj * w.dilations[1];
                  row[jj] = xx >= 0 && xx < iw ? plane[yy * iw + xx] : 0.0;
                }
              }
              row += kw;
            }
          }
        }
        wq::dense::addGramUpper(buffer.data(), static_cast<int64_t>(last - first), k, gram);
      }
    }
    c.gram.rows += static_cast<int64_t>(positions.size());
  }

  std::vector<Collector>& collectors_;
  const std::unordered_map<const Value*, std::vector<size_t>>& readers_;
  std::unordered_set<const Value*> wanted_;
};

std::vector<int64_t> weightDims(const WeightSite& site) {
  if (const TensorPtr& initializer = site.weight->initializer()) return initializer->dims();
  std::optional<Tensor> tensor = fold::constantOf(site.weight);  // a Constant node's value
  return tensor ? tensor->dims() : std::vector<int64_t>{};
}

/// Adds `other` into `into` (same weight read by several layers: their output errors add up);
/// false when the two do not have the same groups and row width.
bool addGram(InputGram& into, const InputGram& other) {
  if (into.k != other.k || into.grams.size() != other.grams.size()) return false;
  for (size_t g = 0; g < into.grams.size(); ++g) {
    for (size_t i = 0; i < into.grams[g].size(); ++i) into.grams[g][i] += other.grams[g][i];
  }
  into.rows += other.rows;
  return true;
}

}  // namespace

const InputGram* CapturedGrams::of(size_t site) const {
  auto found = gramOf.find(site);
  return found == gramOf.end() ? nullptr : &grams[found->second];
}

CapturedGrams captureInputGrams(const Model& model, const std::vector<WeightSite>& sites,
                                PassContext& context, size_t limit) {
  std::vector<Collector> collectors;
  std::vector<std::pair<size_t, size_t>> siteCollector;  // site index -> collector index
  std::map<std::tuple<const Value*, int64_t, bool>, size_t> dense;
  std::unordered_map<const Value*, std::vector<size_t>> readers;
  for (size_t s = 0; s < sites.size(); ++s) {
    const WeightSite& site = sites[s];
    const std::vector<int64_t> dims = weightDims(site);
    std::string why;
    std::optional<Layout> layout = layoutOf(site, dims, why);
    if (!layout) continue;
    const Value* input = site.node->input(0);
    if (input == nullptr) continue;
    Collector collector;
    collector.layout = *layout;
    collector.weightDims = dims;
    if (site.node->is("Conv")) {
      collector.kind = Collector::Kind::Conv;
      collector.conv = site.node;
    } else {
      const bool transA = site.node->is("Gemm") && site.node->attrInt("transA", 0) != 0;
      collector.kind = transA ? Collector::Kind::DenseTransposed : Collector::Kind::Dense;
      collector.layout.groups = 1;
      auto key = std::make_tuple(input, layout->k, transA);
      auto found = dense.find(key);
      if (found != dense.end()) {  // Q, K and V projections read one activation
        siteCollector.emplace_back(s, found->second);
        continue;
      }
      dense.emplace(key, collectors.size());
    }
    collector.gram.k = layout->k;
    collector.gram.grams.assign(
        static_cast<size_t>(collector.layout.groups),
        std::vector<double>(static_cast<size_t>(layout->k * layout->k), 0.0));
    readers[input].push_back(collectors.size());
    siteCollector.emplace_back(s, collectors.size());
    collectors.push_back(std::move(collector));
  }
  CapturedGrams out;
  if (collectors.empty()) return out;
  analysis::SampleCache& data = analysis::sampleCache(
      context, context.data.calibData, analysis::inputSpecs(model.graph(), context.data));
  GramObserver observer(collectors, readers);
  // One sample at a time (the Gram sums keep their order), each run on all of the run's threads.
  interp::RunOptions options;
  options.threads = static_cast<int>(context.resources.threadCount());
  interp::Interpreter interpreter(model.graph(), options);
  data.forEach(
      [&](analysis::Sample& sample) {
        analysis::runningSample(sample, [&] { return interpreter.run(sample.inputs, &observer); });
        ++out.samples;
        return true;
      },
      limit);
  for (Collector& c : collectors) {
    for (std::vector<double>& g : c.gram.grams) wq::dense::symmetrize(g, c.gram.k);
  }
  std::vector<size_t> kept(collectors.size(), SIZE_MAX);  // collector -> index into out.grams
  for (const auto& [site, index] : siteCollector) {
    Collector& c = collectors[index];
    if (!c.failure.empty()) {
      out.skipped[site] = c.failure;
      continue;
    }
    if (c.gram.rows == 0) continue;
    if (kept[index] == SIZE_MAX) {
      kept[index] = out.grams.size();
      out.grams.push_back(std::move(c.gram));
    }
    out.gramOf[site] = kept[index];
  }
  return out;
}

double outputError(const std::vector<double>& h, const std::vector<double>& d, int64_t k,
                   int64_t n) {
  std::vector<double> hd(d.size(), 0.0);
  wq::dense::multiplyAdd(false, k, n, k, 1.0, h.data(), k, d.data(), n, hd.data(), n);
  double sum = 0;
  for (size_t i = 0; i < d.size(); ++i) sum += d[i] * hd[i];
  return sum;
}

namespace {

/// h (k x k) becomes P h P^T in place, for the permutation taking row `order[i]` to row i.
void permuteSymmetric(std::vector<double>& h, size_t k, const std::vector<size_t>& order) {
  std::vector<double> row(k);
  std::vector<bool> placed(k, false);
  auto rowAt = [&](size_t i) { return h.begin() + static_cast<std::ptrdiff_t>(i * k); };
  for (size_t start = 0; start < k; ++start) {  // rows, one cycle at a time
    if (placed[start]) continue;
    std::copy_n(rowAt(start), k, row.begin());
    size_t i = start;
    for (;;) {
      placed[i] = true;
      const size_t from = order[i];
      if (from == start) break;
      std::copy_n(rowAt(from), k, rowAt(i));
      i = from;
    }
    std::copy_n(row.begin(), k, rowAt(i));
  }
  for (size_t i = 0; i < k; ++i) {  // then the columns of each row
    std::copy_n(rowAt(i), k, row.begin());
    for (size_t j = 0; j < k; ++j) h[i * k + j] = row[order[j]];
  }
}

}  // namespace

std::vector<double> gptqColumns(const std::vector<double>& w, int64_t k, int64_t n,
                                std::vector<double>& h, const std::vector<double>& scales,
                                DataType type) {
  const auto K = static_cast<size_t>(k);
  const auto N = static_cast<size_t>(n);
  // Act order: the inputs with the most energy are rounded first, while the most rows are left
  // to take their error (the scales do not depend on the order).
  std::vector<size_t> order(K);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return h[a * K + a] > h[b * K + b]; });
  std::vector<size_t> inverse(K);
  for (size_t i = 0; i < K; ++i) inverse[order[i]] = i;
  std::vector<double> work(K * N);
  for (size_t i = 0; i < K; ++i) {
    std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(order[i] * N), N,
                work.begin() + static_cast<std::ptrdiff_t>(i * N));
  }
  // H in act order, then GPTQ's factor in its own storage (no copy of a K x K matrix); both are
  // undone before returning.
  permuteSymmetric(h, K, order);
  const std::optional<std::vector<double>> diagonal = wq::factorInPlace(h, k, wq::kGptqDampening);
  if (!diagonal) {
    permuteSymmetric(h, K, inverse);
    return {};
  }
  const std::vector<double>& u = h;
  std::vector<double> q(K * N);
  const auto block = static_cast<size_t>(kGptqBlock);
  std::vector<double> errors(block * N);
  for (size_t first = 0; first < K; first += block) {
    const size_t last = std::min(K, first + block);
    for (size_t r = first; r < last; ++r) {
      double* row = work.data() + r * N;
      double* err = errors.data() + (r - first) * N;
      const double d = u[r * K + r];
      for (size_t c = 0; c < N; ++c) {
        const double s = scales[c];
        q[r * N + c] = nearestOnGrid(row[c] / s, type) * s;
        err[c] = (row[c] - q[r * N + c]) / d;
      }
      for (size_t j = r + 1; j < last; ++j) {
        const double f = u[r * K + j];
        if (f == 0) continue;
        double* target = work.data() + j * N;
        for (size_t c = 0; c < N; ++c) target[c] -= f * err[c];
      }
    }
    wq::dense::multiplyAdd(true, static_cast<int64_t>(K - last), n,
                           static_cast<int64_t>(last - first), -1.0, u.data() + first * K + last, k,
                           errors.data(), n, work.data() + last * N, n);
  }
  wq::restoreGram(h, k, *diagonal);
  permuteSymmetric(h, K, inverse);
  std::vector<double> out(K * N);
  for (size_t i = 0; i < K; ++i) {
    std::copy_n(q.begin() + static_cast<std::ptrdiff_t>(i * N), N,
                out.begin() + static_cast<std::ptrdiff_t>(order[i] * N));
  }
  return out;
}

std::optional<GptqOutcome> roundWithGptq(const Tensor& weight, const WeightSite& site,
                                         InputGram gram, DataType type, double inputNoise,
                                         QuantizedWeight& quantized, std::string& why) {
  std::optional<Layout> layout = layoutOf(site, weight.dims(), why);
  if (!layout) return std::nullopt;
  if (gram.k != layout->k || gram.grams.size() != static_cast<size_t>(layout->groups)) {
    why = "its input statistics do not match its weight";
    return std::nullopt;
  }
  const std::vector<double> w = weight.toDoubles();
  const std::vector<double> nearest = dequantizedWeight(quantized, DataType::Float).toDoubles();
  std::vector<double> rounded = nearest;
  const auto K = static_cast<size_t>(layout->k);
  const auto N = static_cast<size_t>(layout->n);
  GptqOutcome outcome;
  for (int64_t g = 0; g < layout->groups; ++g) {
    std::vector<double> m(K * N), scales(N), dn(K * N);
    for (size_t c = 0; c < N; ++c) {
      const int64_t channel = layout->outputChannel(g, static_cast<int64_t>(c));
      scales[c] = static_cast<double>(quantized.scales[quantized.axis < 0 ? 0 : channel]);
      for (size_t r = 0; r < K; ++r) {
        const size_t at = layout->index(g, static_cast<int64_t>(r), static_cast<int64_t>(c));
        m[r * N + c] = w[at];
        dn[r * N + c] = nearest[at] - w[at];
      }
    }
    // The layer reads its input quantized: x + e with e's variance inputNoise in every element,
    // independent of x, so E[(x + e)(x + e)^T] = H + rows * inputNoise * I. Without that term
    // GPTQ moves the error into the directions x never takes, where e is as large as anywhere.
    std::vector<double>& h = gram.grams[static_cast<size_t>(g)];
    for (size_t i = 0; i < K; ++i) h[i * K + i] += static_cast<double>(gram.rows) * inputNoise;
    const std::vector<double> q = gptqColumns(m, layout->k, layout->n, h, scales, type);
    if (q.empty()) {
      why = "its input's Gram matrix is not positive definite even with 100x the dampening";
      return std::nullopt;
    }
    std::vector<double> dq(K * N);
    for (size_t i = 0; i < dq.size(); ++i) dq[i] = q[i] - m[i];
    const double nearestError = outputError(h, dn, layout->k, layout->n);
    const double gptqError = outputError(h, dq, layout->k, layout->n);
    outcome.nearestError += nearestError;
    // GPTQ minimises the error of the dampened H; on the few groups where that loses on H
    // itself, round to nearest stays.
    if (gptqError < nearestError) {
      outcome.gptqError += gptqError;
      for (size_t c = 0; c < N; ++c) {
        for (size_t r = 0; r < K; ++r) {
          rounded[layout->index(g, static_cast<int64_t>(r), static_cast<int64_t>(c))] =
              q[r * N + c];
        }
      }
    } else {
      outcome.gptqError += nearestError;
    }
    std::vector<double>().swap(h);  // this group's H is done with
  }
  setWeightCodes(quantized, weight.dims(), rounded, type);
  return outcome;
}

PlannedWeights quantizePlannedWeights(const std::vector<WeightSite>& sites, DataType type) {
  PlannedWeights planned;
  for (const WeightSite& site : sites) {
    auto key = std::make_pair(static_cast<const Value*>(site.weight), site.axis);
    if (planned.count(key) > 0) continue;
    std::optional<Tensor> tensor = fold::constantOf(site.weight);
    if (!tensor) continue;  // the emitter reports it
    std::string what = fmt::format("weight '{}' of {}", site.weight->name(), site.node->describe());
    planned.emplace(key, quantizeWeight(*tensor, site.axis, what, type));
  }
  return planned;
}

void roundPlannedWeights(PlannedWeights& planned, const Model& model,
                         const std::vector<WeightSite>& sites, DataType type,
                         const std::unordered_map<const Value*, double>& inputNoise,
                         PassContext& context, size_t limit, PassResult& result) {
  std::map<std::pair<const Value*, int64_t>, std::vector<size_t>> readers;
  for (size_t s = 0; s < sites.size(); ++s) {
    readers[{sites[s].weight, sites[s].axis}].push_back(s);
  }
  if (planned.empty() || context.data.calibData.empty()) return;
  CapturedGrams captured = captureInputGrams(model, sites, context, limit);
  // How many sites still read each H: the last one takes it (no copy of a K x K matrix), and an
  // H is freed as soon as its last weight is rounded.
  std::vector<size_t> users(captured.grams.size(), 0);
  for (const auto& [key, siteIndices] : readers) {
    if (planned.count(key) == 0) continue;
    for (size_t s : siteIndices) {
      auto found = captured.gramOf.find(s);
      if (found != captured.gramOf.end()) ++users[found->second];
    }
  }
  size_t rounded = 0;
  double nearestTotal = 0, gptqTotal = 0;
  for (const auto& [key, siteIndices] : readers) {
    auto found = planned.find(key);
    if (found == planned.end()) continue;
    const WeightSite& first = sites[siteIndices.front()];
    const std::string what =
        fmt::format("weight '{}' of {}", first.weight->name(), first.node->describe());
    std::string why;
    layoutOf(first, found->second.values.dims(), why);
    // Several readers: their output errors add up, so their H do.
    InputGram gram;
    bool taken = false;
    for (size_t s : siteIndices) {
      auto part = captured.gramOf.find(s);
      if (part == captured.gramOf.end()) {
        if (!why.empty()) continue;
        auto reason = captured.skipped.find(s);
        why = reason != captured.skipped.end() ? reason->second : "its input was never computed";
        continue;
      }
      InputGram& h = captured.grams[part->second];
      const bool last = --users[part->second] == 0;
      if (why.empty()) {
        if (!taken) {
          gram = last ? std::move(h) : h;
          taken = true;
        } else if (!addGram(gram, h)) {
          why = "the layers that share it read inputs of different widths";
        }
      }
      if (last) h = InputGram{};
    }
    if (why.empty() && gram.rows < kMinRowsPerInput * gram.k) {
      // H has at most `rows` directions: GPTQ would put the whole error in the ones the
      // calibration data never took, and other data takes them.
      why = fmt::format("{} calibration rows for {} inputs: GPTQ needs {} per input", gram.rows,
                        gram.k, kMinRowsPerInput);
    }
    const int64_t rows = gram.rows;
    std::optional<GptqOutcome> outcome;
    if (why.empty()) {
      auto noise = inputNoise.find(first.node->input(0));
      outcome = roundWithGptq(*fold::constantOf(first.weight), first, std::move(gram), type,
                              noise == inputNoise.end() ? 0.0 : noise->second, found->second, why);
    }
    if (!outcome) {
      result.missed(what, fmt::format("rounded to nearest: {}", why));
      continue;
    }
    ++rounded;
    nearestTotal += outcome->nearestError;
    gptqTotal += outcome->gptqError;
    const double gain = outcome->gptqError > 0
                            ? 10.0 * std::log10(outcome->nearestError / outcome->gptqError)
                            : 0.0;
    found->second.rounding = fmt::format(
        "GPTQ rounding: its output error on the calibration data {:.2f} dB below round "
        "to nearest ({} rows)",
        gain, rows);
  }
  result.statistics["weights-gptq"] = static_cast<int64_t>(rounded);
  if (rounded > 0) {
    result.note("model",
                fmt::format("GPTQ rounded {} of {} weights on {} calibration sample(s): their "
                            "layers' output error {:.2f} dB below round to nearest in total",
                            rounded, planned.size(), captured.samples,
                            gptqTotal > 0 ? 10.0 * std::log10(nearestTotal / gptqTotal) : 0.0));
  }
}

}  // namespace qopt::qdq
