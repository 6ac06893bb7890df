// Json: building, printing, parsing back, and the errors of the parser.
#include <gtest/gtest.h>

#include <limits>

#include "qopt/ir/Error.h"
#include "qopt/pass/Json.h"

namespace qopt {
namespace {

TEST(Json, DumpsCompactAndPrettyInInsertionOrder) {
  Json j = Json::object();
  j["zeta"] = 1;
  j["alpha"] = Json::array();
  j["alpha"].push("a\"b\n");
  j["alpha"].push(true);
  j["alpha"].push(Json());
  EXPECT_EQ(j.dump(), R"({"zeta":1,"alpha":["a\"b\n",true,null]})");
  EXPECT_EQ(j.dump(2),
            "{\n  \"zeta\": 1,\n  \"alpha\": [\n    \"a\\\"b\\n\",\n    true,\n    null\n  ]\n}");
}

TEST(Json, DoublesReadBackExactlyAndStayFloats) {
  Json j = Json::array();
  j.push(0.1);
  j.push(2.0);
  j.push(1e300);
  j.push(-0.0);
  Json back = Json::parse(j.dump());
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back.asArray()[0].asDouble(), 0.1);
  EXPECT_FALSE(back.asArray()[1].isInt());
  EXPECT_EQ(back.asArray()[1].asDouble(), 2.0);
  EXPECT_EQ(back.asArray()[2].asDouble(), 1e300);
  EXPECT_EQ(back, j);
}

TEST(Json, OutOfRangeNumbersReadAsInfinityOrZero) {
  Json j = Json::parse("[1e999, -1e999, 1e-999, 0.5e-400, 123456789012345678901234567890]");
  ASSERT_EQ(j.size(), 5u);
  EXPECT_EQ(j.asArray()[0].asDouble(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(j.asArray()[1].asDouble(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(j.asArray()[2].asDouble(), 0.0);
  EXPECT_EQ(j.asArray()[3].asDouble(), 0.0);
  EXPECT_DOUBLE_EQ(j.asArray()[4].asDouble(), 1.2345678901234568e29);
}

TEST(Json, ParsesEscapesUnicodeAndNesting) {
  Json j =
      Json::parse(R"( {"a": [1, -2, 3.5e2], "b": {"c": "\u00e9\ud83d\ude00\t"}, "d": false} )");
  EXPECT_EQ(j["a"].asArray()[1].asInt(), -2);
  EXPECT_EQ(j["a"].asArray()[2].asDouble(), 350.0);
  EXPECT_EQ(j["b"]["c"].asString(), "\xc3\xa9\xf0\x9f\x98\x80\t");
  EXPECT_FALSE(j["d"].asBool());
  EXPECT_EQ(Json::parse(j.dump()), j);
}

TEST(Json, ParseErrorsNameLineAndColumn) {
  try {
    Json::parse("{\n  \"a\": tru\n}", "report.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), "report.json:2:8");
  }
  EXPECT_THROW(Json::parse("[1,]"), Error);
  EXPECT_THROW(Json::parse("{\"a\":1,\"a\":2}"), Error);
  EXPECT_THROW(Json::parse("01"), Error);
  EXPECT_THROW(Json::parse("\"abc"), Error);
  EXPECT_THROW(Json::parse("1 2"), Error);
  EXPECT_THROW(Json::parse(std::string(10000, '[')), Error);
}

TEST(Json, AccessorsRejectOtherTypes) {
  Json j(3);
  EXPECT_THROW(j.asString(), Error);
  EXPECT_EQ(j.asDouble(), 3.0);
  EXPECT_EQ(j.find("x"), nullptr);
}

}  // namespace
}  // namespace qopt
