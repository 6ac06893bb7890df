// Typed pass options: parsing, printing back, and the messages for bad keys and values.
#include <gtest/gtest.h>

#include "ErrorTestUtil.h"
#include "TestPasses.h"
#include "qopt/ir/Error.h"

namespace qopt {
namespace {

using testing::Level;
using testing::TypedPass;

// The usage error setting `key` to `value` gives ("" when it is accepted).
std::string errorOf(TypedPass& pass, std::string_view key, std::string_view value) {
  return testing::errorOf([&] { pass.setOption(key, value); }, ErrorKind::Usage);
}

TEST(Options, DefaultsPrintInDeclarationOrder) {
  TypedPass pass;
  EXPECT_EQ(pass.printOptions(),
            "flag=true count=8 ratio=0.25 label=\"a b\" ops=[Conv,Gemm] axes=[] level=low "
            "target=context");
  EXPECT_EQ(pass.printPipelineItem(), "typed{" + pass.printOptions() + "}");
}

TEST(Options, ParsesEveryType) {
  TypedPass pass;
  pass.setOption("flag", "off");
  pass.setOption("count", "-12");
  pass.setOption("ratio", "1e-3");
  pass.setOption("label", "\"x,y\"");
  pass.setOption("ops", "[Relu,\"Q L\"]");
  pass.setOption("axes", "[0,-1]");
  pass.setOption("level", "high");
  pass.setOption("target", "tensorrt-8.6");
  EXPECT_FALSE(*pass.flag);
  EXPECT_EQ(*pass.count, -12);
  EXPECT_EQ(*pass.ratio, 1e-3);
  EXPECT_EQ(*pass.label, "x,y");
  EXPECT_EQ(*pass.ops, (std::vector<std::string>{"Relu", "Q L"}));
  EXPECT_EQ(*pass.axes, (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(*pass.level, Level::High);
  EXPECT_EQ(pass.target.explicitTarget()->trtVersion, (TrtVersion{8, 6, 0}));
  EXPECT_TRUE(pass.count.isExplicit());
  EXPECT_EQ(pass.printOptions(),
            "flag=false count=-12 ratio=0.001 label=\"x,y\" ops=[Relu,\"Q L\"] axes=[0,-1] "
            "level=high target=tensorrt-8.6");
  pass.count.reset();
  EXPECT_EQ(*pass.count, 8);
  EXPECT_FALSE(pass.count.isExplicit());
}

TEST(Options, SingleValueReadsAsOneElementList) {
  TypedPass pass;
  pass.setOption("ops", "Conv");
  EXPECT_EQ(*pass.ops, std::vector<std::string>{"Conv"});
}

TEST(Options, UnknownKeySuggestsAndListsValidKeys) {
  TypedPass pass;
  std::string message = errorOf(pass, "cuont", "1");
  EXPECT_NE(message.find("pass 'typed'"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown option 'cuont'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'count'?"), std::string::npos) << message;
  EXPECT_NE(message.find("valid options: flag, count, ratio, label, ops, axes, level, target"),
            std::string::npos)
      << message;
}

TEST(Options, BadValuesNameThePassKeyAndWhy) {
  TypedPass pass;
  EXPECT_EQ(errorOf(pass, "count", "eight"),
            "pass 'typed': option 'count': 'eight' is not an integer");
  EXPECT_EQ(
      errorOf(pass, "count", "99999999999999999999"),
      "pass 'typed': option 'count': '99999999999999999999' is out of the 64-bit integer range");
  EXPECT_EQ(errorOf(pass, "ratio", "1.5x"), "pass 'typed': option 'ratio': '1.5x' is not a number");
  EXPECT_EQ(errorOf(pass, "flag", "maybe"),
            "pass 'typed': option 'flag': 'maybe' is not a boolean (true or false)");
  EXPECT_EQ(errorOf(pass, "count", "[1,2]"),
            "pass 'typed': option 'count': expected a single value, not a list");
  EXPECT_EQ(errorOf(pass, "level", "hihg"),
            "pass 'typed': option 'level': 'hihg' is not one of the choices; did you mean 'high'? "
            "(valid choices: low, high)");
  EXPECT_EQ(errorOf(pass, "axes", "[0,x]"), "pass 'typed': option 'axes': 'x' is not an integer");
  std::string target = errorOf(pass, "target", "tensorrtt");
  EXPECT_NE(target.find("did you mean 'tensorrt'?"), std::string::npos) << target;
  EXPECT_NE(target.find("valid choices: context, tensorrt, tensorrt-<version>, ort, generic"),
            std::string::npos)
      << target;
  EXPECT_EQ(*pass.count, 8);  // a failed set leaves the value alone
}

TEST(Options, FormatQuotesWhatTheGrammarWouldMisread) {
  EXPECT_EQ(formatOptionValue(OptionValue::scalar("plain-1.5")), "plain-1.5");
  EXPECT_EQ(formatOptionValue(OptionValue::scalar("")), "\"\"");
  EXPECT_EQ(formatOptionValue(OptionValue::scalar("a\"b\\c")), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(formatOptionValue(OptionValue::scalar("x#y")), "\"x#y\"");
  EXPECT_EQ(formatOptionValue(OptionValue::list({})), "[]");
  EXPECT_EQ(formatOptionValue(OptionValue::list({"a", "b c"})), "[a,\"b c\"]");
}

}  // namespace
}  // namespace qopt
