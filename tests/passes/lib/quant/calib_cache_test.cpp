// TensorRT calibration cache: the format TensorRT writes and reads, byte for byte.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ErrorTestUtil.h"
#include "QuantTestUtil.h"
#include "qopt/ir/Error.h"
#include "qopt/quant/CalibCache.h"

namespace qopt::quant {
namespace {

using testing::readFile;
using testing::ScratchDir;
using testing::writeFile;

CalibrationCache sampleCache() {
  CalibrationCache cache;
  cache.versionCode = 8601;
  cache.algorithm = "EntropyCalibration2";
  cache.entries = {{"input", 1.0f / 127.0f},
                   {"conv1:0", 0.0123456789f},
                   {"block: a", 3.0e-7f},
                   {"zeros", 0.0f},
                   {"tiny", std::numeric_limits<float>::denorm_min()},
                   {"big", 1.0e30f}};
  return cache;
}

/// The message of the input error `fn` throws ("" when it throws none).
template <class Fn>
std::string errorOf(Fn&& fn) {
  return qopt::testing::errorOf(std::forward<Fn>(fn), ErrorKind::Input);
}

std::string parseError(const std::string& text) {
  return errorOf([&] { parseCalibrationCache(text, "calib.cache"); });
}

TEST(CalibCache, TensorRtExampleIsAmaxOne) {
  CalibrationCache cache =
      parseCalibrationCache("TRT-8601-EntropyCalibration2\ninput: 3c010204\n", "calib.cache");
  EXPECT_EQ(cache.versionCode, 8601);
  EXPECT_EQ(cache.algorithm, "EntropyCalibration2");
  ASSERT_EQ(cache.entries.size(), 1u);
  EXPECT_EQ(cache.entries[0].tensor, "input");
  EXPECT_EQ(std::bit_cast<uint32_t>(cache.entries[0].scale), 0x3c010204u);
  EXPECT_NEAR(cache.entries[0].scale * 127.0, 1.0, 1e-7);
  // amax 1.0 computed in float32 as TensorRT does gives exactly these bits.
  EXPECT_EQ(std::bit_cast<uint32_t>(1.0f / 127.0f), 0x3c010204u);
}

TEST(CalibCache, FormatsLowercaseEightDigitsInOrder) {
  CalibrationCache cache;
  cache.versionCode = 100300;
  cache.algorithm = "MinMaxCalibration";
  cache.entries = {{"b", 1.0f / 127.0f}, {"a", 0.5f}, {"small", 1.0e-40f}};
  EXPECT_EQ(formatCalibrationCache(cache),
            "TRT-100300-MinMaxCalibration\n"
            "b: 3c010204\n"
            "a: 3f000000\n"
            "small: 000116c2\n");
}

TEST(CalibCache, RoundTripKeepsEveryBit) {
  CalibrationCache cache = sampleCache();
  CalibrationCache back = parseCalibrationCache(formatCalibrationCache(cache), "mem");
  EXPECT_EQ(back.versionCode, cache.versionCode);
  EXPECT_EQ(back.algorithm, cache.algorithm);
  ASSERT_EQ(back.entries.size(), cache.entries.size());
  for (size_t i = 0; i < cache.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].tensor, cache.entries[i].tensor);
    EXPECT_EQ(std::bit_cast<uint32_t>(back.entries[i].scale),
              std::bit_cast<uint32_t>(cache.entries[i].scale))
        << cache.entries[i].tensor;
  }
}

TEST(CalibCache, FileRoundTripIsByteIdentical) {
  ScratchDir dir;
  CalibrationCache cache = sampleCache();
  writeCalibrationCache(cache, dir / "calib.cache");
  std::string first = readFile(dir / "calib.cache");
  EXPECT_EQ(first, formatCalibrationCache(cache));
  writeCalibrationCache(readCalibrationCache(dir / "calib.cache"), dir / "again.cache");
  EXPECT_EQ(readFile(dir / "again.cache"), first);
}

TEST(CalibCache, NamesWithColonsSplitAtTheLastColonSpace) {
  CalibrationCache cache = parseCalibrationCache(
      "TRT-8601-EntropyCalibration2\n"
      "model/conv:0: 3c010204\n"
      "a: b: c: 3f800000\n"
      "::: 3f000000\n",
      "calib.cache");
  ASSERT_EQ(cache.entries.size(), 3u);
  EXPECT_EQ(cache.entries[0].tensor, "model/conv:0");
  EXPECT_EQ(cache.entries[1].tensor, "a: b: c");
  EXPECT_EQ(cache.entries[1].scale, 1.0f);
  EXPECT_EQ(cache.entries[2].tensor, "::");
  EXPECT_EQ(cache.entries[2].scale, 0.5f);
}

TEST(CalibCache, UppercaseHexIsReadAsTensorRtReadsIt) {
  CalibrationCache cache =
      parseCalibrationCache("TRT-8601-EntropyCalibration2\nx: 3C010204\ny: 3c01020A\n", "c");
  ASSERT_EQ(cache.entries.size(), 2u);
  EXPECT_EQ(std::bit_cast<uint32_t>(cache.entries[0].scale), 0x3c010204u);
  EXPECT_EQ(std::bit_cast<uint32_t>(cache.entries[1].scale), 0x3c01020au);
  // Written back lowercase.
  EXPECT_EQ(formatCalibrationCache(cache),
            "TRT-8601-EntropyCalibration2\nx: 3c010204\ny: 3c01020a\n");
}

TEST(CalibCache, AcceptsCrlfBlankLinesAndNoFinalNewline) {
  CalibrationCache cache =
      parseCalibrationCache("TRT-7000-LegacyCalibration\r\nx: 3c010204\r\n\r\ny: 3f800000", "c");
  EXPECT_EQ(cache.versionCode, 7000);
  EXPECT_EQ(cache.algorithm, "LegacyCalibration");
  ASSERT_EQ(cache.entries.size(), 2u);
  EXPECT_EQ(cache.entries[1].tensor, "y");
  EXPECT_EQ(cache.entries[1].scale, 1.0f);
}

TEST(CalibCache, HeaderOnlyIsAnEmptyCache) {
  CalibrationCache cache = parseCalibrationCache("TRT-8601-EntropyCalibration\n", "c");
  EXPECT_EQ(cache.algorithm, "EntropyCalibration");
  EXPECT_TRUE(cache.entries.empty());
}

TEST(CalibCache, BadHeadersAreRefused) {
  for (const char* header :
       {"", "TRT8601-EntropyCalibration2", "trt-8601-EntropyCalibration2",
        "TRT--EntropyCalibration2", "TRT-86a1-EntropyCalibration2", "TRT--1-EntropyCalibration2",
        "TRT-+1-EntropyCalibration2", "TRT-8601", "TRT-8601-", "TRT-8601-Entropy",
        "TRT-99999999999-EntropyCalibration2", "x: 3c010204"}) {
    std::string message = parseError(std::string(header) + "\nx: 3c010204\n");
    EXPECT_NE(message, "") << header;
    EXPECT_NE(message.find("calib.cache"), std::string::npos) << message;
    EXPECT_NE(message.find("line 1"), std::string::npos) << message;
  }
  EXPECT_NE(parseError("TRT-8601-Entropy\n").find("EntropyCalibration2"), std::string::npos);
}

TEST(CalibCache, EmptyFileIsRefused) {
  EXPECT_NE(parseError("").find("empty"), std::string::npos);
}

TEST(CalibCache, MalformedLinesNameTheLine) {
  const std::string header = "TRT-8601-EntropyCalibration2\nok: 3c010204\n";
  struct Case {
    const char* line;
    const char* expected;
  };
  for (const Case& c :
       {Case{"x:3c010204", "not '<tensor name>: <8 hex digits>'"},
        Case{"x 3c010204", "not '<tensor name>: <8 hex digits>'"},
        Case{"x3c010204", "not '<tensor name>: <8 hex digits>'"},
        Case{": 3c010204", "the tensor name is empty"}, Case{"a\rb: 3c010204", "line break"},
        Case{"x: 3c01020", "not 8 hex digits"}, Case{"x: 3c0102040", "not 8 hex digits"},
        Case{"x: ", "not 8 hex digits"}, Case{"x: 3c01020g", "not 8 hex digits"},
        Case{"x: 0x010204", "not 8 hex digits"}, Case{"x: 3c010204 ", "not 8 hex digits"},
        Case{"x:  3c010204", "not 8 hex digits"}, Case{"x: +c010204", "not 8 hex digits"},
        Case{"x: 7f800000", "not a finite non-negative"},
        Case{"x: 7fc00000", "not a finite non-negative"},
        Case{"x: bf800000", "not a finite non-negative"}, Case{"ok: 3f800000", "listed twice"}}) {
    std::string message = parseError(header + c.line + "\n");
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.line << " -> " << message;
    EXPECT_NE(message.find("line 3"), std::string::npos) << c.line << " -> " << message;
    EXPECT_NE(message.find("calib.cache"), std::string::npos) << message;
  }
}

TEST(CalibCache, FormatRefusesWhatCannotBeReadBack) {
  auto formatError = [](CalibrationCache cache) {
    return errorOf([&] { formatCalibrationCache(cache); });
  };
  CalibrationCache cache = sampleCache();
  cache.entries.push_back({"input", 0.5f});
  EXPECT_NE(formatError(cache).find("listed twice"), std::string::npos);
  for (const char* name : {"", "a\nb", "a\r"}) {
    cache = sampleCache();
    cache.entries.push_back({name, 0.5f});
    EXPECT_NE(formatError(cache), "") << name;
  }
  for (float scale :
       {-1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    cache = sampleCache();
    cache.entries.push_back({"bad", scale});
    EXPECT_NE(formatError(cache).find("tensor 'bad'"), std::string::npos) << scale;
  }
  cache = sampleCache();
  cache.algorithm = "Percentile";
  EXPECT_THROW(formatCalibrationCache(cache), Error);
}

TEST(CalibCache, FailedWriteLeavesTheOldFileAndNoTemporary) {
  ScratchDir dir;
  writeFile(dir / "calib.cache", "old contents");
  CalibrationCache cache = sampleCache();
  cache.entries.push_back({"input", 0.5f});  // duplicate: refused before anything is written
  std::string message = errorOf([&] { writeCalibrationCache(cache, dir / "calib.cache"); });
  EXPECT_NE(message.find("calib.cache"), std::string::npos) << message;
  EXPECT_EQ(readFile(dir / "calib.cache"), "old contents");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"calib.cache"});

  // A folder that does not exist: nothing is created.
  EXPECT_THROW(writeCalibrationCache(sampleCache(), dir / "missing" / "calib.cache"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "missing"));
  EXPECT_EQ(dir.files(), std::vector<std::string>{"calib.cache"});

  // A successful write replaces the old file completely.
  writeCalibrationCache(sampleCache(), dir / "calib.cache");
  EXPECT_EQ(readFile(dir / "calib.cache"), formatCalibrationCache(sampleCache()));
  EXPECT_EQ(dir.files(), std::vector<std::string>{"calib.cache"});
}

TEST(CalibCache, ReadErrorsNameTheFile) {
  ScratchDir dir;
  std::string message = errorOf([&] { readCalibrationCache(dir / "absent.cache"); });
  EXPECT_NE(message.find("absent.cache"), std::string::npos) << message;
  writeFile(dir / "bad.cache", "TRT-8601-EntropyCalibration2\nx: 1234\n");
  message = errorOf([&] { readCalibrationCache(dir / "bad.cache"); });
  EXPECT_NE(message.find("bad.cache"), std::string::npos) << message;
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
}

TEST(CalibCache, AlgorithmForCalibrator) {
  EXPECT_EQ(cacheAlgorithmFor("entropy"), "EntropyCalibration2");
  EXPECT_EQ(cacheAlgorithmFor("max"), "MinMaxCalibration");
  EXPECT_EQ(cacheAlgorithmFor("percentile"), "EntropyCalibration2");
  EXPECT_EQ(cacheAlgorithmFor("mse"), "EntropyCalibration2");
}

}  // namespace
}  // namespace qopt::quant
