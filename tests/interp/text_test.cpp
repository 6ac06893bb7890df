// StringNormalizer (case changes of UTF-8 text, case-insensitive stop words, locales) and
// TfIdfVectorizer (TF, IDF and TFIDF over string and integer pools, skips, weights): the cases
// ONNX's node tests leave out. Expected strings and vectors were checked against ONNX Runtime
// with an en_US.UTF-8 locale.
#include "InterpTestUtil.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

Array strings(Shape shape, std::vector<std::string> values) {
  Array a(DataType::String, std::move(shape));
  a.strings() = std::move(values);
  return a;
}

std::function<void(Node&)> normalizer(std::string change, int64_t caseSensitive,
                                      std::vector<std::string> stopwords, std::string locale = {}) {
  return [=](Node& n) {
    if (!change.empty()) n.setAttr(Attribute::makeString("case_change_action", change));
    n.setAttr(Attribute::makeInt("is_case_sensitive", caseSensitive));
    if (!stopwords.empty()) n.setAttr(Attribute::makeStrings("stopwords", stopwords));
    if (!locale.empty()) n.setAttr(Attribute::makeString("locale", locale));
  };
}

Array normalize(const Array& x, const std::function<void(Node&)>& configure) {
  return runOne("StringNormalizer", {x}, configure, 10);
}

const std::vector<std::string> kWords = {"Straße",   "ÉCLAIR", "Σοφία", "ǅemal",
                                         "İstanbul", "Monday", "MONDAY"};

TEST(StringNormalizer, LowersUtf8AndDropsStopWordsOfAnyCase) {
  Array y = normalize(strings({7}, kWords), normalizer("LOWER", 0, {"monday", "éclair"}));
  EXPECT_EQ(y.shape(), (Shape{4}));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"straße", "σοφία", "ǆemal", "istanbul"}));
}

TEST(StringNormalizer, UppersUtf8WithoutExpandingLetters) {
  // ß has no one-letter capital: towupper leaves it, as ONNX Runtime does.
  Array y = normalize(strings({7}, kWords), normalizer("UPPER", 0, {"monday", "ÉCLAIR"}));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"STRAßE", "ΣΟΦΊΑ", "ǄEMAL", "İSTANBUL"}));
}

TEST(StringNormalizer, CaseInsensitiveStopWordsKeepTheOriginalCase) {
  Array y = normalize(strings({7}, kWords), normalizer("NONE", 0, {"MONDAY", "Éclair"}));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"Straße", "Σοφία", "ǅemal", "İstanbul"}));
}

TEST(StringNormalizer, CaseSensitiveStopWordsMatchExactly) {
  Array y =
      normalize(strings({1, 3}, {"Monday", "monday", "x"}), normalizer("UPPER", 1, {"monday"}));
  EXPECT_EQ(y.shape(), (Shape{1, 2}));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"MONDAY", "X"}));
}

TEST(StringNormalizer, AllDroppedGivesOneEmptyString) {
  Array y = normalize(strings({1, 2}, {"a", "A"}), normalizer("", 0, {"a"}));
  EXPECT_EQ(y.shape(), (Shape{1, 1}));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{""}));
  Array empty = normalize(strings({0}, {}), normalizer("", 1, {}));
  EXPECT_EQ(empty.shape(), (Shape{1}));
  EXPECT_EQ(empty.strings(), (std::vector<std::string>{""}));
}

TEST(StringNormalizer, NamedLocales) {
  // en_US in any spelling is the default's case mapping, installed or not.
  for (const char* locale : {"en_US", "en_US.UTF-8", "en_US.utf8"}) {
    Array y = normalize(strings({2}, {"é", "i"}), normalizer("UPPER", 1, {}, locale));
    EXPECT_EQ(y.strings(), (std::vector<std::string>{"É", "I"})) << locale;
  }
  // The C locale changes ASCII letters only.
  Array c = normalize(strings({2}, {"a", "é"}), normalizer("UPPER", 1, {}, "C"));
  EXPECT_EQ(c.strings(), (std::vector<std::string>{"A", "é"}));
}

TEST(StringNormalizer, MissingLocaleIsAClearError) {
  std::string message = errorMessage(
      [] { normalize(strings({1}, {"a"}), normalizer("LOWER", 1, {}, "xx_QQ.UTF-8")); });
  EXPECT_NE(message.find("locale 'xx_QQ.UTF-8' is not available"), std::string::npos) << message;
  // Without a case change the locale is not used, so the model still runs.
  Array y = normalize(strings({1}, {"a"}), normalizer("NONE", 1, {"b"}, "xx_QQ.UTF-8"));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"a"}));
}

TEST(StringNormalizer, InvalidUtf8FailsOnlyWhenCaseMatters) {
  std::string bad = "a\xC3";  // truncated two-byte sequence
  std::string message =
      errorMessage([&] { normalize(strings({1}, {bad}), normalizer("UPPER", 1, {})); });
  EXPECT_NE(message.find("element 0 is not valid UTF-8"), std::string::npos) << message;
  EXPECT_NE(errorMessage([&] {
              normalize(strings({1}, {"\xED\xA0\x80"}), normalizer("LOWER", 1, {}));  // surrogate
            }).find("not valid UTF-8"),
            std::string::npos);
  Array y = normalize(strings({1}, {bad}), normalizer("NONE", 1, {"x"}));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{bad}));
}

TEST(StringNormalizer, BadAttributesAndShapes) {
  auto message = [](const Array& x, std::function<void(Node&)> configure) {
    return errorMessage([&] { normalize(x, configure); });
  };
  EXPECT_NE(message(strings({1}, {"a"}), normalizer("TITLE", 0, {}))
                .find("unknown case_change_action 'TITLE'"),
            std::string::npos);
  EXPECT_NE(message(strings({1}, {"a"}), normalizer("", 2, {})).find("is_case_sensitive"),
            std::string::npos);
  EXPECT_NE(message(strings({2, 1}, {"a", "b"}), normalizer("", 0, {})).find("[C] or [1, C]"),
            std::string::npos);
  EXPECT_NE(message(floats({1}, {1}), normalizer("", 0, {})).find("string tensor"),
            std::string::npos);
  // An empty name would pick the environment's locale.
  EXPECT_NE(message(strings({1}, {"a"}),
                    [](Node& n) {
                      n.setAttr(Attribute::makeString("case_change_action", "LOWER"));
                      n.setAttr(Attribute::makeString("locale", ""));
                    })
                .find("locale must not be empty"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// TfIdfVectorizer

struct TfIdf {
  std::string mode = "TF";
  int64_t minGram = 1, maxGram = 2, maxSkip = 0;
  std::vector<int64_t> ngramCounts, ngramIndexes, poolInts;
  std::vector<std::string> poolStrings;
  std::vector<float> weights;

  std::function<void(Node&)> configure() const {
    return [*this](Node& n) {
      if (!mode.empty()) n.setAttr(Attribute::makeString("mode", mode));
      n.setAttr(Attribute::makeInt("min_gram_length", minGram));
      n.setAttr(Attribute::makeInt("max_gram_length", maxGram));
      n.setAttr(Attribute::makeInt("max_skip_count", maxSkip));
      n.setAttr(Attribute::makeInts("ngram_counts", ngramCounts));
      n.setAttr(Attribute::makeInts("ngram_indexes", ngramIndexes));
      if (!poolInts.empty()) n.setAttr(Attribute::makeInts("pool_int64s", poolInts));
      if (!poolStrings.empty()) n.setAttr(Attribute::makeStrings("pool_strings", poolStrings));
      if (!weights.empty()) n.setAttr(Attribute::makeFloats("weights", weights));
    };
  }
  Array run(const Array& x) const { return runOne("TfIdfVectorizer", {x}, configure(), 9); }
  std::string error(const Array& x) const {
    return errorMessage([&] { run(x); });
  }
};

// Pool: 1-grams a, b, c and 2-grams ab, bc, ca, written to the output in reverse order (so that
// pool order and output order differ), with one weight per pool n-gram.
TfIdf stringPool(std::string mode) {
  TfIdf t;
  t.mode = std::move(mode);
  t.maxSkip = 1;
  t.ngramCounts = {0, 3};
  t.ngramIndexes = {5, 4, 3, 2, 1, 0};
  t.poolStrings = {"a", "b", "c", "a", "b", "b", "c", "c", "a"};
  t.weights = {0.5f, 1, 1.5f, 2, 2.5f, 3};
  return t;
}

// Row 0: a 2, b 2, c 1, ab 2, bc 1, ca 1. Row 1: c 2, a 1, b 1, ab 1, and ca once with one
// item skipped (c x a).
const Array kRows = strings({2, 5}, {"a", "b", "c", "a", "b", "c", "c", "x", "a", "b"});

TEST(TfIdfVectorizer, StringPoolTermFrequency) {
  Array y = stringPool("TF").run(kRows);
  EXPECT_EQ(y.dataType(), DataType::Float);
  EXPECT_EQ(y.shape(), (Shape{2, 6}));
  EXPECT_EQ(doubles(y), (std::vector<double>{1, 1, 2, 1, 2, 2, 1, 0, 1, 2, 1, 1}));
}

TEST(TfIdfVectorizer, StringPoolIdfUsesEachNgramsWeight) {
  // Coordinate 0 is pool n-gram 5 (ca), weighted by weights[5] = 3.
  Array y = stringPool("IDF").run(kRows);
  EXPECT_EQ(doubles(y), (std::vector<double>{3, 2.5, 2, 1.5, 1, 0.5, 3, 0, 2, 1.5, 1, 0.5}));
}

TEST(TfIdfVectorizer, StringPoolTfIdf) {
  Array y = stringPool("TFIDF").run(kRows);
  EXPECT_EQ(doubles(y), (std::vector<double>{3, 2.5, 4, 1.5, 2, 1, 3, 0, 2, 3, 1, 0.5}));
}

TEST(TfIdfVectorizer, SkipsWidenTheSearchOnlyForLongerNgrams) {
  TfIdf t = stringPool("TF");
  t.maxSkip = 0;
  // Without skips row 1 has no ca; 1-grams count once whatever the skip count.
  EXPECT_EQ(doubles(t.run(kRows)), (std::vector<double>{1, 1, 2, 1, 2, 2, 0, 0, 1, 2, 1, 1}));
  t.maxSkip = 4;
  t.minGram = 1;
  t.maxGram = 1;
  EXPECT_EQ(doubles(t.run(kRows)), (std::vector<double>{0, 0, 0, 1, 2, 2, 0, 0, 0, 2, 1, 1}));
}

TfIdf intPool(std::string mode) {
  TfIdf t;
  t.mode = std::move(mode);
  t.minGram = 2;  // the pool's 1-grams are not counted
  t.ngramCounts = {0, 2};
  t.ngramIndexes = {0, 1, 2, 3};
  t.poolInts = {7, 8, 7, 8, 8, 7};
  return t;
}

TEST(TfIdfVectorizer, IntegerPoolAllModesWithoutWeights) {
  Array x = int64s({5}, {7, 8, 7, 7, 8});  // 78 twice, 87 once
  EXPECT_EQ(doubles(intPool("TF").run(x)), (std::vector<double>{0, 0, 2, 1}));
  EXPECT_EQ(doubles(intPool("IDF").run(x)), (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(doubles(intPool("TFIDF").run(x)), (std::vector<double>{0, 0, 2, 1}));
  Array batch = intPool("TF").run(int32s({1, 5}, {7, 8, 7, 7, 8}));
  EXPECT_EQ(batch.shape(), (Shape{1, 4}));
  EXPECT_EQ(doubles(batch), (std::vector<double>{0, 0, 2, 1}));
}

TEST(TfIdfVectorizer, IntegerPoolWithWeights) {
  TfIdf t = intPool("TFIDF");
  t.weights = {1, 1, 0.25f, 4};
  Array x = int64s({5}, {7, 8, 7, 7, 8});
  EXPECT_EQ(doubles(t.run(x)), (std::vector<double>{0, 0, 0.5, 4}));
  t.mode = "IDF";
  EXPECT_EQ(doubles(t.run(x)), (std::vector<double>{0, 0, 0.25, 4}));
}

TEST(TfIdfVectorizer, NgramsSharingACoordinateAddUp) {
  TfIdf t;
  t.minGram = 1;
  t.maxGram = 1;
  t.ngramCounts = {0};
  t.ngramIndexes = {1, 0, 0};
  t.poolInts = {1, 2, 3};
  t.weights = {10, 20, 30};
  Array x = int64s({6}, {1, 2, 2, 3, 3, 3});
  t.mode = "TF";
  EXPECT_EQ(doubles(t.run(x)), (std::vector<double>{5, 1}));
  t.mode = "TFIDF";
  EXPECT_EQ(doubles(t.run(x)), (std::vector<double>{130, 10}));
  // IDF adds the found n-grams' weights too (ONNX Runtime keeps the last one it found: 30).
  t.mode = "IDF";
  EXPECT_EQ(doubles(t.run(x)), (std::vector<double>{50, 10}));
}

TEST(TfIdfVectorizer, EmptyInputGivesZeros) {
  Array y = intPool("TF").run(int64s({0}, {}));
  EXPECT_EQ(y.shape(), (Shape{4}));
  EXPECT_EQ(doubles(y), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(intPool("TF").run(int64s({0, 3}, {})).shape(), (Shape{0, 4}));
}

TEST(TfIdfVectorizer, BadAttributesAreErrors) {
  Array x = int64s({3}, {7, 8, 7});
  auto with = [](auto change) {
    TfIdf t = intPool("TF");
    change(t);
    return t;
  };
  auto expectError = [&](const TfIdf& t, const Array& input, const std::string& cause) {
    std::string message = t.error(input);
    EXPECT_NE(message.find(cause), std::string::npos) << message;
  };
  expectError(with([](TfIdf& t) { t.mode = "BM25"; }), x, "unknown mode 'BM25'");
  expectError(with([](TfIdf& t) { t.mode = ""; }), x, "attribute 'mode' is required");
  expectError(with([](TfIdf& t) { t.minGram = 0; }), x, "min_gram_length must be positive");
  expectError(with([](TfIdf& t) { t.maxGram = 1; }), x, "less than min_gram_length");
  expectError(with([](TfIdf& t) { t.maxSkip = -1; }), x, "max_skip_count");
  expectError(with([](TfIdf& t) { t.maxGram = 3; }), x, "exceeds the 2 n-gram lengths");
  expectError(with([](TfIdf& t) { t.weights = {1, 2}; }), x, "weights has 2 values");
  expectError(with([](TfIdf& t) {
                t.ngramIndexes = {0, 1, 2};
              }),
              x, "ngram_indexes has 3 values but the pool holds 4");
  expectError(with([](TfIdf& t) { t.ngramIndexes = {0, 1, -2, 3}; }), x, "negative");
  expectError(with([](TfIdf& t) { t.ngramCounts = {0, 3}; }), x, "do not form whole 2-grams");
  expectError(with([](TfIdf& t) { t.ngramCounts = {0, 9}; }), x, "do not split the pool");
  expectError(with([](TfIdf& t) { t.poolInts = {7, 8, 7, 8, 7, 8}; }), x, "2-gram 3 twice");
  expectError(with([](TfIdf& t) { t.poolStrings = {"a"}; }), x, "exactly one of pool_strings");
  expectError(with([](TfIdf& t) { t.poolInts.clear(); }), x, "exactly one of pool_strings");
  expectError(intPool("TF"), strings({1}, {"7"}), "must be int32 or int64");
  expectError(stringPool("TF"), x, "must be strings");
  expectError(intPool("TF"), int64s({1, 1, 3}, {7, 8, 7}), "[C] or [N, C]");
}

}  // namespace
}  // namespace qopt::interp
