// Text: StringNormalizer (opset 10) and TfIdfVectorizer (opset 9).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "KernelSupport.h"
#include "TextCase.h"

namespace qopt::interp {

namespace {

/// A required attribute of `kind`.
const Attribute& requiredAttr(const KernelContext& ctx, const char* name, AttrKind kind) {
  const Attribute* a = ctx.node.findAttr(name);
  if (a == nullptr) ctx.fail(fmt::format("attribute '{}' is required", name));
  if (a->kind != kind) ctx.fail(fmt::format("attribute '{}' has the wrong kind", name));
  return *a;
}

// ---------------------------------------------------------------------------------------------
// StringNormalizer

void stringNormalizer(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (x.dataType() != DataType::String) {
    ctx.fail(fmt::format("the input must be a string tensor, got {}", dataTypeName(x.dataType())));
  }
  bool twoD = x.rank() == 2;
  if (!(x.rank() == 1 || (twoD && x.dim(0) == 1))) {
    ctx.fail(
        fmt::format("the input must have shape [C] or [1, C], got {}", shapeString(x.shape())));
  }
  auto change = enumAttr<CaseChange>(ctx, "case_change_action", "NONE", {"NONE", "LOWER", "UPPER"});
  int64_t sensitive = ctx.node.attrInt("is_case_sensitive", 0);
  if (sensitive != 0 && sensitive != 1) {
    ctx.fail(fmt::format("is_case_sensitive must be 0 or 1, got {}", sensitive));
  }
  std::vector<std::string> stopwords;
  if (const Attribute* a = ctx.node.findAttr("stopwords")) {
    if (a->kind != AttrKind::Strings) ctx.fail("stopwords must be a list of strings");
    stopwords = a->strings;
  }
  // Stop words are compared in the case the output gets (lower case when the output keeps its
  // case), so that the kept strings are the ones compared, as ONNX Runtime does.
  CaseChange compareCase =
      sensitive ? CaseChange::None
                : (change == CaseChange::Upper ? CaseChange::Upper : CaseChange::Lower);
  // Without case changes the locale plays no part, so a model that names one this machine lacks
  // still runs.
  bool needsLocale =
      change != CaseChange::None || (compareCase != CaseChange::None && !stopwords.empty());
  std::optional<CaseMapper> mapper;
  if (needsLocale) {
    try {
      mapper.emplace(ctx.node.attrString("locale", CaseMapper::kDefaultLocale));
    } catch (const Error& e) {
      ctx.fail(e.cause());
    }
  }
  auto mapped = [&](const std::string& s, CaseChange how, const char* what, size_t index) {
    std::optional<std::string> out = mapper->apply(s, how);
    if (!out) ctx.fail(fmt::format("{} {} is not valid UTF-8", what, index));
    return std::move(*out);
  };

  std::set<std::string, std::less<>> stops;
  for (size_t i = 0; i < stopwords.size(); ++i) {
    stops.insert(compareCase == CaseChange::None
                     ? stopwords[i]
                     : mapped(stopwords[i], compareCase, "stopword", i));
  }
  std::vector<std::string> kept;
  const std::vector<std::string>& in = x.strings();
  for (size_t i = 0; i < in.size(); ++i) {
    if (compareCase != CaseChange::None && !stops.empty()) {
      std::string key = mapped(in[i], compareCase, "element", i);
      if (stops.contains(key)) continue;
      // compareCase is the output's case whenever the output's case changes.
      kept.push_back(change == CaseChange::None ? in[i] : std::move(key));
    } else if (!stops.contains(in[i])) {
      kept.push_back(change == CaseChange::None ? in[i] : mapped(in[i], change, "element", i));
    }
  }
  // The specification's output when every element is dropped: one empty string.
  if (kept.empty()) kept.emplace_back();
  auto count = static_cast<int64_t>(kept.size());
  Array out(DataType::String, twoD ? Shape{1, count} : Shape{count});
  out.strings() = std::move(kept);
  ctx.outputs[0] = std::move(out);
}

// ---------------------------------------------------------------------------------------------
// TfIdfVectorizer

enum class Weighting { TF, IDF, TFIDF };

/// The n-grams of the pool that are counted (lengths min_gram_length..max_gram_length), as a
/// trie over their items: walking an input n-gram item by item finds every prefix that is in the
/// pool on the way.
template <class K>
class NgramTrie {
 public:
  NgramTrie() : nodes_(1) {}
  /// False when the n-gram is already there.
  bool insert(const std::vector<K>& items, int64_t id) {
    int32_t at = 0;
    for (const K& item : items) {
      auto [it, added] = nodes_[static_cast<size_t>(at)].children.try_emplace(item, 0);
      if (added) {
        it->second = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
      }
      at = it->second;
    }
    int64_t& slot = nodes_[static_cast<size_t>(at)].id;
    if (slot >= 0) return false;
    slot = id;
    return true;
  }
  /// The child of node `at` for `item`, or -1.
  int32_t child(int32_t at, const K& item) const {
    const auto& children = nodes_[static_cast<size_t>(at)].children;
    auto it = children.find(item);
    return it == children.end() ? -1 : it->second;
  }
  /// The pool index of the n-gram ending at node `at`, or -1.
  int64_t id(int32_t at) const { return nodes_[static_cast<size_t>(at)].id; }

 private:
  struct Node {
    int64_t id = -1;
    std::map<K, int32_t, std::less<>> children;
  };
  std::vector<Node> nodes_;
};

struct TfIdfConfig {
  Weighting mode;
  int64_t minGram, maxGram, maxSkip;
  std::vector<int64_t> ngramCounts;  // start of the n-grams of length 1, 2, ... in the pool
  std::vector<int64_t> ngramIndexes;
  std::vector<float> weights;  // empty: all ones
  int64_t outputSize;
};

TfIdfConfig tfIdfConfig(const KernelContext& ctx, int64_t poolSize) {
  TfIdfConfig c;
  requiredAttr(ctx, "mode", AttrKind::String);
  c.mode = enumAttr<Weighting>(ctx, "mode", "", {"TF", "IDF", "TFIDF"});
  c.minGram = requiredAttr(ctx, "min_gram_length", AttrKind::Int).i;
  c.maxGram = requiredAttr(ctx, "max_gram_length", AttrKind::Int).i;
  c.maxSkip = requiredAttr(ctx, "max_skip_count", AttrKind::Int).i;
  c.ngramCounts = requiredAttr(ctx, "ngram_counts", AttrKind::Ints).ints;
  c.ngramIndexes = requiredAttr(ctx, "ngram_indexes", AttrKind::Ints).ints;
  if (c.minGram < 1) ctx.fail(fmt::format("min_gram_length must be positive, got {}", c.minGram));
  if (c.maxGram < c.minGram) {
    ctx.fail(
        fmt::format("max_gram_length {} is less than min_gram_length {}", c.maxGram, c.minGram));
  }
  if (c.maxSkip < 0)
    ctx.fail(fmt::format("max_skip_count must not be negative, got {}", c.maxSkip));
  if (c.ngramCounts.empty()) ctx.fail("ngram_counts must not be empty");
  if (c.maxGram > static_cast<int64_t>(c.ngramCounts.size())) {
    ctx.fail(fmt::format("max_gram_length {} exceeds the {} n-gram lengths of ngram_counts",
                         c.maxGram, c.ngramCounts.size()));
  }
  int64_t ngrams = 0;
  for (size_t level = 0; level < c.ngramCounts.size(); ++level) {
    int64_t begin = c.ngramCounts[level];
    int64_t end = level + 1 < c.ngramCounts.size() ? c.ngramCounts[level + 1] : poolSize;
    auto n = static_cast<int64_t>(level) + 1;
    if (begin < 0 || end < begin || end > poolSize) {
      ctx.fail(fmt::format("ngram_counts {} do not split the pool of {} items",
                           shapeString(c.ngramCounts), poolSize));
    }
    if ((end - begin) % n != 0) {
      ctx.fail(fmt::format("the pool's {} items of {}-grams do not form whole {}-grams",
                           end - begin, n, n));
    }
    ngrams += (end - begin) / n;
  }
  if (c.ngramIndexes.empty()) ctx.fail("ngram_indexes must not be empty");
  if (static_cast<int64_t>(c.ngramIndexes.size()) != ngrams) {
    ctx.fail(fmt::format("ngram_indexes has {} values but the pool holds {} n-grams",
                         c.ngramIndexes.size(), ngrams));
  }
  for (int64_t index : c.ngramIndexes) {
    if (index < 0) ctx.fail(fmt::format("ngram_indexes must not be negative, got {}", index));
  }
  c.outputSize = *std::max_element(c.ngramIndexes.begin(), c.ngramIndexes.end()) + 1;
  if (const Attribute* a = ctx.node.findAttr("weights")) {
    if (a->kind != AttrKind::Floats) ctx.fail("weights must be a list of floats");
    c.weights = a->floats;
    if (c.weights.size() != c.ngramIndexes.size()) {
      ctx.fail(fmt::format("weights has {} values but ngram_indexes {}", c.weights.size(),
                           c.ngramIndexes.size()));
    }
  }
  return c;
}

/// The counted n-grams of `pool` (ids are pool n-gram numbers, which index ngram_indexes).
template <class K, class P>
NgramTrie<K> buildTrie(const KernelContext& ctx, const TfIdfConfig& c, const std::vector<P>& pool) {
  NgramTrie<K> trie;
  int64_t id = 0;
  for (size_t level = 0; level < c.ngramCounts.size(); ++level) {
    auto n = static_cast<int64_t>(level) + 1;
    int64_t begin = c.ngramCounts[level];
    int64_t end = level + 1 < c.ngramCounts.size() ? c.ngramCounts[level + 1]
                                                   : static_cast<int64_t>(pool.size());
    for (int64_t at = begin; at < end; at += n, ++id) {
      if (n < c.minGram || n > c.maxGram) continue;
      std::vector<K> items(pool.begin() + at, pool.begin() + at + n);
      if (!trie.insert(items, id)) {
        ctx.fail(fmt::format("the pool holds {}-gram {} twice", n, id));
      }
    }
  }
  return trie;
}

/// Adds the occurrences in `row` of each pool n-gram to `counts` (one per pool n-gram).
template <class K>
void countRow(const TfIdfConfig& c, const NgramTrie<K>& trie, const std::vector<K>& row,
              int64_t* counts) {
  auto size = static_cast<int64_t>(row.size());
  auto hit = [&](int32_t node) {
    int64_t id = trie.id(node);
    if (id >= 0) ++counts[id];
  };
  // A 1-gram has no gaps to skip: it is counted once, not once per skip count.
  if (c.minGram == 1) {
    for (const K& item : row) {
      int32_t node = trie.child(0, item);
      if (node >= 0) hit(node);
    }
  }
  int64_t shortest = std::max<int64_t>(c.minGram, 2);
  if (shortest > c.maxGram) return;
  for (int64_t step = 1; step <= c.maxSkip + 1; ++step) {
    for (int64_t start = 0; start + step * (shortest - 1) < size; ++start) {
      int32_t node = 0;
      for (int64_t n = 1, at = start; n <= c.maxGram && at < size; ++n, at += step) {
        node = trie.child(node, row[static_cast<size_t>(at)]);
        if (node < 0) break;
        if (n >= shortest) hit(node);
      }
    }
  }
}

/// One row of the output from the pool n-grams' counts in that row. Each n-gram's value (its
/// count; 1 when found, for IDF) is scaled by its weight, the i-th weight going with the i-th
/// n-gram of the pool as the specification says (and ONNX Runtime does). N-grams that share an
/// output coordinate add up; for IDF, ONNX Runtime keeps the value of the one it found last.
void writeRow(const TfIdfConfig& c, const std::vector<int64_t>& counts, float* y) {
  std::fill_n(y, c.outputSize, 0.0f);
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    float weight = c.weights.empty() ? 1.0f : c.weights[i];
    auto count = static_cast<float>(counts[i]);
    float value = c.mode == Weighting::TF    ? count
                  : c.mode == Weighting::IDF ? weight
                                             : count * weight;
    y[c.ngramIndexes[i]] += value;
  }
}

template <class K>
void vectorize(const TfIdfConfig& c, const NgramTrie<K>& trie, const Array& x, int64_t rows,
               int64_t cols, Array& out) {
  std::vector<K> row(static_cast<size_t>(cols));
  std::vector<int64_t> counts(c.ngramIndexes.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      int64_t i = r * cols + j;
      if constexpr (std::is_same_v<K, std::string_view>) {
        row[static_cast<size_t>(j)] = x.strings()[static_cast<size_t>(i)];
      } else {
        row[static_cast<size_t>(j)] = x.getInt64(i);
      }
    }
    std::fill(counts.begin(), counts.end(), 0);
    countRow(c, trie, row, counts.data());
    writeRow(c, counts, out.data<float>() + r * c.outputSize);
  }
}

void tfIdfVectorizer(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const Attribute* strings = ctx.node.findAttr("pool_strings");
  const Attribute* ints = ctx.node.findAttr("pool_int64s");
  if ((strings != nullptr) == (ints != nullptr)) {
    ctx.fail("exactly one of pool_strings and pool_int64s must be given");
  }
  if (strings && strings->kind != AttrKind::Strings) ctx.fail("pool_strings must be strings");
  if (ints && ints->kind != AttrKind::Ints) ctx.fail("pool_int64s must be integers");
  if (strings && x.dataType() != DataType::String) {
    ctx.fail(fmt::format("with pool_strings the input must be strings, got {}",
                         dataTypeName(x.dataType())));
  }
  if (ints && x.dataType() != DataType::Int32 && x.dataType() != DataType::Int64) {
    ctx.fail(fmt::format("with pool_int64s the input must be int32 or int64, got {}",
                         dataTypeName(x.dataType())));
  }
  auto poolSize = static_cast<int64_t>(strings ? strings->strings.size() : ints->ints.size());
  TfIdfConfig c = tfIdfConfig(ctx, poolSize);

  // [C] and a scalar (one item) give one row and a 1-D output; [N, C] gives N rows.
  if (x.rank() > 2) {
    ctx.fail(
        fmt::format("the input must have shape [C] or [N, C], got {}", shapeString(x.shape())));
  }
  int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  int64_t cols = x.rank() == 0 ? 1 : x.dim(-1);
  Array out(DataType::Float, x.rank() == 2 ? Shape{rows, c.outputSize} : Shape{c.outputSize});
  if (strings) {
    vectorize(c, buildTrie<std::string_view>(ctx, c, strings->strings), x, rows, cols, out);
  } else {
    vectorize(c, buildTrie<int64_t>(ctx, c, ints->ints), x, rows, cols, out);
  }
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void registerTextKernels(KernelRegistry& r) {
  r.add({
      {"StringNormalizer", 10, stringNormalizer},
      {"TfIdfVectorizer", 9, tfIdfVectorizer},
  });
}

}  // namespace qopt::interp
