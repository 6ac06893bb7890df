// Pipeline grammar: parsing, canonical printing (round trip), fixpoint groups, pipeline files
// and located errors.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "TestPasses.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/Pipeline.h"

namespace qopt {
namespace {

const PassRegistry& registry() {
  static const PassRegistry r = testing::testRegistry();
  return r;
}

std::string canonical(std::string_view text) {
  return parsePipeline(text, registry()).str();
}

std::string parseError(std::string_view text) {
  try {
    parsePipeline(text, registry());
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    return e.what();
  }
  return "no error";
}

const std::string kTypedDefaults =
    "typed{flag=true count=8 ratio=0.25 label=\"a b\" ops=[Conv,Gemm] axes=[] level=low "
    "target=context}";

TEST(Pipeline, EmptyTextIsAnEmptyPipeline) {
  EXPECT_TRUE(parsePipeline("", registry()).empty());
  EXPECT_TRUE(parsePipeline("  # only a comment\n\n", registry()).empty());
  EXPECT_EQ(canonical(""), "");
}

TEST(Pipeline, PrintsEveryOptionWithDefaults) {
  EXPECT_EQ(canonical("noop"), "noop");
  EXPECT_EQ(canonical("typed"), kTypedDefaults);
  EXPECT_EQ(canonical("noop, typed{}"), "noop," + kTypedDefaults);
}

TEST(Pipeline, ParsesOptionsListsAndQuotes) {
  Pipeline p = parsePipeline(
      "typed{count=3 ops=[Relu, \"Q,L\"] label=\"say \\\"hi\\\"\" level=high target=ort}",
      registry());
  ASSERT_EQ(p.items().size(), 1u);
  auto& typed = static_cast<testing::TypedPass&>(*p.items()[0].pass);
  EXPECT_EQ(*typed.count, 3);
  EXPECT_EQ(*typed.ops, (std::vector<std::string>{"Relu", "Q,L"}));
  EXPECT_EQ(*typed.label, "say \"hi\"");
  EXPECT_EQ(*typed.level, testing::Level::High);
  EXPECT_EQ(typed.target.explicitTarget()->kind, TargetKind::Ort);
}

TEST(Pipeline, CanonicalFormRoundTrips) {
  const char* pipelines[] = {
      "noop",
      "typed{count=-1 ratio=3 label=\"\" ops=[] axes=[1,2] flag=false}",
      "typed{label=\"a]b{c}d,e=f#g\\\\h\" ops=[\"x y\",z]}",
      "noop,fixpoint(countdown{rounds=1},fixpoint(noop){max-iterations=2}){max-iterations=4},typed",
      "typed{target=tensorrt} , typed{target=tensorrt-8.6.1}",
  };
  for (const char* text : pipelines) {
    std::string once = canonical(text);
    EXPECT_EQ(canonical(once), once) << text;
  }
  EXPECT_EQ(canonical("fixpoint(noop)"), "fixpoint(noop){max-iterations=8}");
}

TEST(Pipeline, NewlinesSeparateItemsAndCommentsAreIgnored) {
  std::string text =
      "# cleanup\n"
      "noop   # first\n"
      "typed{\n"
      "  count=2   # inside braces\n"
      "  ops=[Conv,\n"
      "       Gemm]\n"
      "},\n"
      "\n"
      "fixpoint(\n"
      "  countdown\n"
      "  noop\n"
      ")\n";
  Pipeline p = parsePipeline(text, registry());
  ASSERT_EQ(p.items().size(), 3u);
  ASSERT_TRUE(p.items()[2].fixpoint);
  EXPECT_EQ(p.items()[2].fixpoint->body.items().size(), 2u);
  EXPECT_EQ(p.str(), canonical(p.str()));
}

TEST(Pipeline, UnknownPassIsLocatedWithSuggestion) {
  EXPECT_EQ(parseError("noop,countdwn"),
            "<pipeline>:1:6: unknown pass 'countdwn'; did you mean 'countdown'? (known passes: "
            "append-relu, append-relu-keeping, countdown, mark-quantized, needs-quantized, noop, "
            "original-reader, throwing, typed)");
}

TEST(Pipeline, OptionErrorsAreLocatedAtTheKey) {
  EXPECT_EQ(parseError("noop,\n typed{count=1 levl=high}"),
            "<pipeline>:2:16: pass 'typed': unknown option 'levl'; did you mean 'level'? (valid "
            "options: flag, count, ratio, label, ops, axes, level, target)");
  EXPECT_EQ(parseError("typed{count=x}"),
            "<pipeline>:1:7: pass 'typed': option 'count': 'x' is not an integer");
  EXPECT_EQ(parseError("noop{x=1}"),
            "<pipeline>:1:6: pass 'noop': unknown option 'x' (it takes no options)");
  EXPECT_EQ(parseError("typed{count=1 count=2}"),
            "<pipeline>:1:15: pass 'typed': option 'count' given twice");
  EXPECT_EQ(parseError("fixpoint(noop){max-iterations=0}"),
            "<pipeline>:1:1: fixpoint: option 'max-iterations': must be at least 1");
  EXPECT_EQ(parseError("fixpoint(noop){max-iter=2}"),
            "<pipeline>:1:16: fixpoint: unknown option 'max-iter'; did you mean 'max-iterations'? "
            "(valid options: max-iterations)");
}

TEST(Pipeline, SyntaxErrorsAreLocated) {
  EXPECT_EQ(parseError("noop,"), "<pipeline>:1:6: expected a pass after ','");
  EXPECT_EQ(parseError(",noop"), "<pipeline>:1:1: expected a pass name before ','");
  EXPECT_EQ(parseError("noop noop"), "<pipeline>:1:6: expected ',' or a new line before 'n'");
  EXPECT_EQ(parseError("typed{count}"),
            "<pipeline>:1:12: expected '=' after option 'count' before '}'");
  EXPECT_EQ(parseError("typed{count="), "<pipeline>:1:13: expected a value");
  EXPECT_EQ(parseError("typed{ops=[a,b}"),
            "<pipeline>:1:15: expected ',' or ']' in a list before '}'");
  EXPECT_EQ(parseError("typed{label=\"abc}"), "<pipeline>:1:13: unterminated quoted value");
  EXPECT_EQ(parseError("fixpoint()"),
            "<pipeline>:1:1: fixpoint needs at least one pass inside its parentheses");
  EXPECT_EQ(parseError("fixpoint(noop"),
            "<pipeline>:1:14: expected ')' closing fixpoint( at the end");
  EXPECT_EQ(parseError("noop)"), "<pipeline>:1:5: unbalanced ')'");
  EXPECT_EQ(parseError("typed{count=1"), "<pipeline>:1:14: expected an option name or '}'");
}

TEST(Pipeline, FileErrorsNameFileLineAndColumn) {
  auto dir = std::filesystem::temp_directory_path() / "qopt_pipeline_test";
  std::filesystem::create_directories(dir);
  auto file = dir / "bad.qp";
  {
    std::ofstream out(file);
    out << "# a pipeline\nnoop\n  typed{ratio=fast}\n";
  }
  try {
    parsePipelineFile(file, registry());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              file.string() + ":3:9: pass 'typed': option 'ratio': 'fast' is not a number");
  }
  EXPECT_THROW(parsePipelineFile(dir / "missing.qp", registry()), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qopt
