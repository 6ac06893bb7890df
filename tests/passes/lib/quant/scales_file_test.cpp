// qopt-scales JSON: the documented layout, exact round trips and the errors for foreign files.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "QuantTestUtil.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/ScalesFile.h"

namespace qopt::quant {
namespace {

using testing::readFile;
using testing::ScratchDir;
using testing::writeFile;

std::vector<ScaleEntry> sampleEntries() {
  ScaleEntry activation;
  activation.tensor = "x";
  activation.amax = {6.0};
  activation.scale = {6.0 / 127.0};
  activation.zeroPoint = {0};
  activation.calibrator = "entropy";
  activation.samples = 96;
  ScaleEntry weight;
  weight.tensor = "conv1.weight";
  weight.amax = {0.1, 0.30000000000000004, 1e-300};
  weight.scale = {0.1 / 127, 0.30000000000000004 / 127, 1e-300 / 127};
  weight.zeroPoint = {0, 0, 0};
  weight.axis = 0;
  weight.calibrator = "weights";
  ScaleEntry u8;
  u8.tensor = "relu6: out";
  u8.amax = {6.0};
  u8.scale = {6.0 / 255.0};
  u8.zeroPoint = {0};
  u8.type = "uint8";
  return {activation, weight, u8};
}

void expectSame(const std::vector<ScaleEntry>& a, const std::vector<ScaleEntry>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tensor, b[i].tensor);
    EXPECT_EQ(a[i].amax, b[i].amax) << a[i].tensor;  // exact: shortest repr round-trips
    EXPECT_EQ(a[i].scale, b[i].scale) << a[i].tensor;
    EXPECT_EQ(a[i].zeroPoint, b[i].zeroPoint) << a[i].tensor;
    EXPECT_EQ(a[i].type, b[i].type);
    EXPECT_EQ(a[i].axis, b[i].axis);
    EXPECT_EQ(a[i].calibrator, b[i].calibrator);
    EXPECT_EQ(a[i].samples, b[i].samples);
  }
}

std::string errorOf(const std::string& text) {
  try {
    parseScales(text, "scales.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  return {};
}

TEST(ScalesFile, DocumentedLayout) {
  ScaleEntry entry;
  entry.tensor = "x";
  entry.amax = {6.0};
  entry.scale = {0.5};
  entry.zeroPoint = {0};
  entry.calibrator = "entropy";
  entry.samples = 96;
  EXPECT_EQ(formatScales({entry}),
            "{\n"
            "  \"format\": \"qopt-scales\",\n"
            "  \"version\": 1,\n"
            "  \"tensors\": [\n"
            "    {\n"
            "      \"tensor\": \"x\",\n"
            "      \"amax\": 6.0,\n"
            "      \"scale\": 0.5,\n"
            "      \"zero_point\": 0,\n"
            "      \"type\": \"int8\",\n"
            "      \"axis\": null,\n"
            "      \"calibrator\": \"entropy\",\n"
            "      \"samples\": 96\n"
            "    }\n"
            "  ]\n"
            "}\n");
}

TEST(ScalesFile, PerChannelEntriesHoldArraysAndAnAxis) {
  std::string text = formatScales({sampleEntries()[1]});
  EXPECT_NE(text.find("\"axis\": 0"), std::string::npos) << text;
  EXPECT_NE(text.find("\"zero_point\": [\n"), std::string::npos) << text;
  EXPECT_NE(text.find("0.30000000000000004"), std::string::npos) << text;
}

TEST(ScalesFile, RoundTripIsExact) {
  std::vector<ScaleEntry> entries = sampleEntries();
  expectSame(parseScales(formatScales(entries), "mem"), entries);
}

TEST(ScalesFile, FileRoundTripIsByteIdentical) {
  ScratchDir dir;
  writeScales(sampleEntries(), dir / "scales.json");
  std::string first = readFile(dir / "scales.json");
  std::vector<ScaleEntry> back = readScales(dir / "scales.json");
  expectSame(back, sampleEntries());
  writeScales(back, dir / "again.json");
  EXPECT_EQ(readFile(dir / "again.json"), first);
}

// calibrator=auto's explanation: the chosen method, the reason and every candidate's amax and
// error (null when not measured, or not finite) round-trip; a malformed record is refused.
TEST(ScalesFile, AutoChoiceRoundTrips) {
  std::vector<ScaleEntry> entries = sampleEntries();
  AutoRecord record;
  record.chosen = "mse";
  record.reason = "smallest consumer error";
  record.candidates = {{"max", 9.5, 0.0031},
                       {"percentile", 7.25, 0.0012},
                       {"entropy", 4.0, std::nullopt},
                       {"mse", 6.0, 0.0009765625}};
  entries[0].calibrator = "auto";
  entries[0].autoChoice = record;
  const std::string text = formatScales(entries);
  EXPECT_NE(text.find(R"("chosen": "mse")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("error": null)"), std::string::npos) << text;
  std::vector<ScaleEntry> back = parseScales(text, "mem");
  expectSame(back, entries);
  ASSERT_TRUE(back[0].autoChoice.has_value());
  EXPECT_FALSE(back[1].autoChoice.has_value());
  EXPECT_EQ(back[0].autoChoice->chosen, "mse");
  EXPECT_EQ(back[0].autoChoice->reason, record.reason);
  ASSERT_EQ(back[0].autoChoice->candidates.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(back[0].autoChoice->candidates[i].calibrator, record.candidates[i].calibrator);
    EXPECT_EQ(back[0].autoChoice->candidates[i].amax, record.candidates[i].amax);
    EXPECT_EQ(back[0].autoChoice->candidates[i].error, record.candidates[i].error);
  }
  entries[0].autoChoice->candidates[0].error = std::numeric_limits<double>::infinity();
  back = parseScales(formatScales(entries), "mem");
  EXPECT_FALSE(back[0].autoChoice->candidates[0].error.has_value());

  const std::string head =
      R"({"format": "qopt-scales", "version": 1, "tensors": [{"tensor": "t", "amax": 2, )"
      R"("scale": 0.25, "zero_point": 0, "auto": )";
  EXPECT_NE(errorOf(head + R"(3}]})").find("\"auto\" is not an object"), std::string::npos);
  EXPECT_NE(errorOf(head + R"({"chosen": "max", "reason": "x"}}]})").find("\"candidates\""),
            std::string::npos);
  EXPECT_NE(errorOf(head + R"({"chosen": "max", "reason": "x", "candidates": [)"
                           R"({"calibrator": "max", "amax": 1, "error": "big"}]}}]})")
                .find("\"error\""),
            std::string::npos);
}

TEST(ScalesFile, EmptyZeroPointMeansZero) {
  std::vector<ScaleEntry> entries = sampleEntries();
  entries[1].zeroPoint.clear();
  std::vector<ScaleEntry> back = parseScales(formatScales(entries), "mem");
  EXPECT_EQ(back[1].zeroPoint, (std::vector<int64_t>{0, 0, 0}));
}

TEST(ScalesFile, EmptyListIsValid) {
  EXPECT_TRUE(parseScales(formatScales({}), "mem").empty());
}

TEST(ScalesFile, OptionalFieldsDefault) {
  std::vector<ScaleEntry> back = parseScales(
      R"({"format": "qopt-scales", "version": 1, "tensors": [
          {"tensor": "t", "amax": 2, "scale": 0.25, "zero_point": 0, "extra": true}]})",
      "mem");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].amax, std::vector<double>{2.0});
  EXPECT_EQ(back[0].type, "int8");
  EXPECT_EQ(back[0].calibrator, "");
  EXPECT_EQ(back[0].samples, 0u);
  EXPECT_FALSE(back[0].axis.has_value());
}

TEST(ScalesFile, ForeignFilesAreRefused) {
  const std::string head = R"({"format": "qopt-scales", "version": 1, "tensors": )";
  struct Case {
    std::string text;
    const char* expected;
  };
  for (const Case& c : std::vector<Case>{
           {"not json", "scales.json"},
           {"[]", "top level"},
           {R"({"format": "onnx", "version": 1, "tensors": []})", "\"format\""},
           {R"({"version": 1, "tensors": []})", "\"format\""},
           {R"({"format": "qopt-scales", "tensors": []})", "\"version\""},
           {R"({"format": "qopt-scales", "version": 2, "tensors": []})", "version 2"},
           {R"({"format": "qopt-scales", "version": 1})", "\"tensors\""},
           {head + "[1]}", "tensors[0]"},
           {head + R"([{"amax": 1, "scale": 1, "zero_point": 0}]})", "\"tensor\""},
           {head + R"([{"tensor": "t", "scale": 1, "zero_point": 0}]})", "\"amax\""},
           {head + R"([{"tensor": "t", "amax": "1", "scale": 1, "zero_point": 0}]})", "number"},
           {head + R"([{"tensor": "t", "amax": 1, "scale": 1, "zero_point": 0.5}]})", "integer"},
           {head + R"([{"tensor": "t", "amax": [], "scale": 1, "zero_point": 0}]})", "empty"},
           {head + R"([{"tensor": "t", "amax": [1, 2], "scale": [1], "zero_point": [0],
                        "axis": 0}]})",
            "differ"},
           {head + R"([{"tensor": "t", "amax": [1, 2], "scale": [1, 2], "zero_point": [0, 0]}]})",
            "\"axis\" is null"},
           {head + R"([{"tensor": "t", "amax": 1, "scale": 1, "zero_point": 0, "axis": "0"}]})",
            "\"axis\""},
           {head + R"([{"tensor": "t", "amax": 1, "scale": 1, "zero_point": 0, "type": 8}]})",
            "\"type\""},
           {head + R"([{"tensor": "t", "amax": 1, "scale": 1, "zero_point": 0, "samples": -1}]})",
            "\"samples\""},
       }) {
    std::string message = errorOf(c.text);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.text << " -> " << message;
    EXPECT_NE(message.find("scales.json"), std::string::npos) << message;
  }
  // Entry errors name the tensor once it is known.
  EXPECT_NE(errorOf(head + R"([{"tensor": "conv1", "amax": 1, "scale": "s", "zero_point": 0}]})")
                .find("tensor 'conv1'"),
            std::string::npos);
}

TEST(ScalesFile, FormatRefusesInconsistentEntries) {
  std::vector<ScaleEntry> entries = sampleEntries();
  entries[0].amax = {1, 2};
  EXPECT_THROW(formatScales(entries), Error);
  entries = sampleEntries();
  entries[1].axis.reset();  // three scales, no axis
  EXPECT_THROW(formatScales(entries), Error);
  entries = sampleEntries();
  entries[0].scale = {std::numeric_limits<double>::quiet_NaN()};
  EXPECT_THROW(formatScales(entries), Error);
  entries = sampleEntries();
  entries[1].zeroPoint = {0};
  EXPECT_THROW(formatScales(entries), Error);
}

TEST(ScalesFile, FailedWriteLeavesTheOldFile) {
  ScratchDir dir;
  writeFile(dir / "scales.json", "old");
  std::vector<ScaleEntry> entries = sampleEntries();
  entries[0].amax.clear();
  try {
    writeScales(entries, dir / "scales.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scales.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(readFile(dir / "scales.json"), "old");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"scales.json"});
}

TEST(ScalesFile, ReadErrorsNameTheFile) {
  ScratchDir dir;
  EXPECT_THROW(readScales(dir / "absent.json"), Error);
  writeFile(dir / "bad.json", "{}");
  try {
    readScales(dir / "bad.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qopt::quant
